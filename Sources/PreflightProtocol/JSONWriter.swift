/// Writes JSON straight into a byte buffer: compact, members in order, strings escaped per RFC 8259.
///
/// Written by hand for the same reason as `JSONReader`: the reply path appends prepared bytes
/// (for example a cached offer's content, encoded once when it was cached) without re-encoding them.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(reservingCapacity capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Encodes one value to bytes.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    /// Encodes one value to a String (for logs, events and tests).
    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: appendASCII("null")
        case .bool(let flag): appendASCII(flag ? "true" : "false")
        case .integer(let number): appendASCII(String(number))
        case .number(let number): writeNumber(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends bytes that are already valid JSON (a prepared fragment).
    public mutating func writeRaw(_ fragment: [UInt8]) {
        bytes.append(contentsOf: fragment)
    }

    /// Appends ASCII punctuation or a known-safe literal, unescaped.
    public mutating func appendASCII(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    public mutating func appendASCII(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func writeNumber(_ number: Double) {
        guard number.isFinite else {
            // JSON has no NaN or infinity; null is the conventional stand-in.
            appendASCII("null")
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            // Keep the fraction so the value reads back as a number, not an integer (a round trip must
            // not change a value's kind; found by tools/fuzz).
            appendASCII(String(Int64(number)))
            appendASCII(".0")
        } else {
            appendASCII(String(number))
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    public mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "\\"))
            case 0x0A:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "n"))
            case 0x0D:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "r"))
            case 0x09:
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(UInt8(ascii: "t"))
            case 0x00..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
