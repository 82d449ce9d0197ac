/// Why a body could not be read as JSON; the message names the byte offset.
public struct JSONReadError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public let offset: Int

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 reader with the limits a long-running agent needs.
///
/// Written by hand rather than using Foundation's `JSONSerialization`/`JSONDecoder` because the
/// request path needs what those do not give together: a nesting limit that fails cleanly instead
/// of recursing (a 20,000-deep body must be an error, not a stack overflow), refusal of duplicate
/// keys (two readers of one body must never disagree on its meaning), refusal of invalid UTF-8,
/// document order of members, and a cost measured in single microseconds on the cached path.
public struct JSONReader {
    /// Deepest nesting of arrays and objects accepted. The protocol's deepest legal body is 5 levels.
    public static let defaultMaxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    private let maxDepth: Int

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Reads one JSON value that must span the whole input (surrounding whitespace allowed).
    public static func read(_ input: [UInt8], maxDepth: Int = defaultMaxDepth) throws(JSONReadError) -> JSONValue {
        let result: Result<JSONValue, JSONReadError> = input.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer, maxDepth: maxDepth)
            do throws(JSONReadError) {
                reader.skipWhitespace()
                let value = try reader.readValue()
                reader.skipWhitespace()
                guard reader.index == buffer.count else {
                    throw reader.error("unexpected data after the JSON value")
                }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads JSON from a string (convenience for configuration files and tests).
    public static func read(_ text: String, maxDepth: Int = defaultMaxDepth) throws(JSONReadError) -> JSONValue {
        try read(Array(text.utf8), maxDepth: maxDepth)
    }

    private func error(_ message: String) -> JSONReadError {
        JSONReadError(message: message, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func readValue() throws(JSONReadError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try readObject()
        case UInt8(ascii: "["): return try readArray()
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try readNumber()
        default:
            throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONReadError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw error("invalid literal") }
        let matches = literal.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[index + offset] != expected[offset] {
                return false
            }
            return true
        }
        guard matches else { throw error("invalid literal") }
        index += count
    }

    private mutating func enter() throws(JSONReadError) {
        depth += 1
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
    }

    private mutating func readObject() throws(JSONReadError) -> JSONValue {
        try enter()
        index += 1
        // Protocol objects are small; reserving a few members avoids two or three regrowths.
        var members: [(key: String, value: JSONValue)] = []
        members.reserveCapacity(6)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a string key")
            }
            let keyOffset = index
            let key = try readString()
            for member in members where member.key == key {
                throw JSONReadError(message: "duplicate key \"\(key)\"", offset: keyOffset)
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try readValue()
            members.append((key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(JSONObject(members))
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func readArray() throws(JSONReadError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        elements.reserveCapacity(4)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try readValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func readNumber() throws(JSONReadError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw error("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw error("invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        // Up to 18 digits cannot overflow Int64: accumulate them without making a String.
        let digitsStart = bytes[start] == UInt8(ascii: "-") ? start + 1 : start
        if isInteger, index - digitsStart <= 18 {
            var magnitude: Int64 = 0
            for position in digitsStart..<index {
                magnitude = magnitude * 10 + Int64(bytes[position] - UInt8(ascii: "0"))
            }
            return .integer(digitsStart == start ? magnitude : -magnitude)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let value = Int64(text) {
            return .integer(value)
        }
        guard let value = Double(text), value.isFinite else {
            throw JSONReadError(message: "number out of range", offset: start)
        }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func readString() throws(JSONReadError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes. Control characters are refused while scanning; UTF-8 is validated
        // only when a byte outside ASCII was seen (protocol strings are nearly always ASCII).
        var seen: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            seen |= byte
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return seen < 0x80 ? String(decoding: slice, as: UTF8.self) : try makeString(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            index += 1
        }
        guard index < bytes.count else { throw JSONReadError(message: "unterminated string", offset: start - 1) }
        // Slow path: unescape into a buffer.
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try buffer.withUnsafeBufferPointer { pointer throws(JSONReadError) in
                    try makeString(pointer, at: start)
                }
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try readUnicodeEscape()
                    buffer.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    throw error("invalid escape")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                buffer.append(byte)
                index += 1
            }
        }
        throw JSONReadError(message: "unterminated string", offset: start - 1)
    }

    private mutating func readHex4() throws(JSONReadError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func readUnicodeEscape() throws(JSONReadError) -> Unicode.Scalar {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw error("unpaired surrogate") }
            index += 2
            let second = try readHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw error("unpaired surrogate") }
            let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(combined) else { throw error("invalid \\u escape") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw error("unpaired surrogate") }
        return scalar
    }

    private func makeString(_ slice: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONReadError) -> String {
        // String(validating:) refuses ill-formed UTF-8 instead of repairing it: a body that is not
        // UTF-8 is malformed, and silently substituting U+FFFD would change what the app sent.
        guard let string = String(validating: slice, as: UTF8.self) else {
            throw JSONReadError(message: "invalid UTF-8 in string", offset: offset)
        }
        return string
    }
}
