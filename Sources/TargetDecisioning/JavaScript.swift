import PreflightProtocol

/// JavaScript's value semantics over JSON values, as the Node.js engine's conditions see them.
///
/// A rule's condition is JsonLogic evaluated by json-logic-js, whose operators are JavaScript's own
/// `==`, `<`, `+`, truthiness and string conversion. `nil` stands for `undefined`; `.integer` and
/// `.number` are both JavaScript numbers. Strings compare by UTF-16 code units, as JavaScript's do.
enum JavaScript {
    // MARK: Truthiness

    /// JavaScript's `ToBoolean`: `undefined`, `null`, `false`, `0`, `NaN` and `""` are false; every
    /// array and object (even empty) is true.
    static func isTruthy(_ value: JSONValue?) -> Bool {
        switch value {
        case nil, .null: false
        case .bool(let flag): flag
        case .integer(let number): number != 0
        case .number(let number): !(number == 0 || number.isNaN)
        case .string(let text): !text.isEmpty
        case .array, .object: true
        }
    }

    // MARK: Conversions

    /// `ToNumber`: strings by JavaScript's numeric-literal grammar, `null` and `false` 0, `true` 1,
    /// `undefined` and objects NaN, arrays through their string form.
    static func toNumber(_ value: JSONValue?) -> Double {
        switch value {
        case nil: .nan
        case .null: 0
        case .bool(let flag): flag ? 1 : 0
        case .integer(let number): Double(number)
        case .number(let number): number
        case .string(let text): stringToNumber(text)
        case .array, .object: stringToNumber(toString(value))
        }
    }

    /// `ToString`: numbers as JavaScript prints them, arrays joined with `,` (their `null` and
    /// `undefined` elements empty), objects `[object Object]`.
    static func toString(_ value: JSONValue?) -> String {
        switch value {
        case nil: "undefined"
        case .null: "null"
        case .bool(let flag): flag ? "true" : "false"
        case .integer(let number): String(number)
        case .number(let number): numberToString(number)
        case .string(let text): text
        case .array(let elements): elements.map(joinedElement).joined(separator: ",")
        case .object: "[object Object]"
        }
    }

    private static func joinedElement(_ element: JSONValue) -> String {
        element == .null ? "" : toString(element)
    }

    /// A computed number as JSON: whole numbers as integers (JavaScript prints `80`, not `80.0`).
    static func jsonNumber(_ number: Double) -> JSONValue {
        if number.isFinite, number == number.rounded(), abs(number) < 9_007_199_254_740_992 {
            return .integer(Int64(number))
        }
        return .number(number)
    }

    // MARK: Comparison

    /// JavaScript's `==` (abstract equality).
    static func looseEquals(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        switch (kind(left), kind(right)) {
        case (.undefined, .undefined), (.null, .null), (.undefined, .null), (.null, .undefined): return true
        case (.undefined, _), (.null, _), (_, .undefined), (_, .null): return false
        case (.number, .number): return toNumber(left) == toNumber(right)
        case (.string, .string): return sameCodeUnits(left?.stringValue ?? "", right?.stringValue ?? "")
        case (.bool, .bool): return left == right
        case (.number, .string), (.string, .number): return toNumber(left) == toNumber(right)
        case (.bool, _): return looseEquals(.number(toNumber(left)), right)
        case (_, .bool): return looseEquals(left, .number(toNumber(right)))
        case (.object, .object): return false  // distinct objects; identity is not tracked
        case (.object, _): return looseEquals(.string(toString(left)), right)
        case (_, .object): return looseEquals(left, .string(toString(right)))
        }
    }

    /// JavaScript's `===`. Two arrays or objects are never the same object here.
    static func strictEquals(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        switch (kind(left), kind(right)) {
        case (.undefined, .undefined), (.null, .null): true
        case (.number, .number): toNumber(left) == toNumber(right)
        case (.string, .string): sameCodeUnits(left?.stringValue ?? "", right?.stringValue ?? "")
        case (.bool, .bool): left == right
        default: false
        }
    }

    /// JavaScript's `<`: two strings by code units, anything else as numbers; `false` when either is NaN.
    static func lessThan(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        relational(left, right) ?? false
    }

    /// JavaScript's `<=`: not greater, and `false` when either side is NaN.
    static func lessThanOrEqual(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        guard let greater = relational(right, left) else { return false }
        return !greater
    }

    /// The abstract relational comparison `left < right`; nil for "undefined" (a NaN).
    private static func relational(_ left: JSONValue?, _ right: JSONValue?) -> Bool? {
        let leftPrimitive = toPrimitive(left)
        let rightPrimitive = toPrimitive(right)
        if case .string(let a) = leftPrimitive, case .string(let b) = rightPrimitive {
            return a.utf16.lexicographicallyPrecedes(b.utf16)
        }
        let a = toNumber(leftPrimitive)
        let b = toNumber(rightPrimitive)
        if a.isNaN || b.isNaN { return nil }
        return a < b
    }

    private static func toPrimitive(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case .array, .object: .string(toString(value))
        default: value
        }
    }

    private enum Kind {
        case undefined, null, bool, number, string, object
    }

    private static func kind(_ value: JSONValue?) -> Kind {
        switch value {
        case nil: .undefined
        case .null: .null
        case .bool: .bool
        case .integer, .number: .number
        case .string: .string
        case .array, .object: .object
        }
    }

    /// String equality by code units (Swift's `==` would also equate canonically equivalent strings).
    static func sameCodeUnits(_ left: String, _ right: String) -> Bool {
        left.utf8.elementsEqual(right.utf8)
    }

    // MARK: Numbers

    /// `Math.round`: halves round up, toward positive infinity.
    static func round(_ number: Double) -> Double {
        guard number.isFinite else { return number }
        let floor = number.rounded(.down)
        return number - floor >= 0.5 ? floor + 1 : floor
    }

    /// `Number.prototype.toString()`: the shortest digits that read back as the same number, laid out
    /// as JavaScript does (plain up to 21 digits, exponent form beyond, `1e-7` for small numbers).
    static func numberToString(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number == 0 { return "0" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        let (digits, exponent) = shortestDigits(abs(number))
        let sign = number < 0 ? "-" : ""
        let count = digits.count
        if count <= exponent, exponent <= 21 {
            return sign + digits + String(repeating: "0", count: exponent - count)
        }
        if 0 < exponent, exponent <= 21 {
            let split = digits.index(digits.startIndex, offsetBy: exponent)
            return sign + digits[..<split] + "." + digits[split...]
        }
        if -6 < exponent, exponent <= 0 {
            return sign + "0." + String(repeating: "0", count: -exponent) + digits
        }
        let power = exponent - 1
        let mantissa = count == 1 ? digits : String(digits.prefix(1)) + "." + digits.dropFirst()
        return sign + mantissa + "e" + (power >= 0 ? "+" : "-") + String(abs(power))
    }

    /// The shortest round-trip digits of a positive finite number and its decimal exponent `n`, such
    /// that the number is `0.digits × 10^n`. Swift's own description already holds the shortest digits.
    private static func shortestDigits(_ number: Double) -> (digits: String, exponent: Int) {
        let text = number.description
        var mantissa = Substring(text)
        var power = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            power = Int(text[text.index(after: e)...]) ?? 0
        }
        var digits = ""
        var pointAt: Int?
        for character in mantissa {
            if character == "." {
                pointAt = digits.count
            } else {
                digits.append(character)
            }
        }
        var exponent = (pointAt ?? digits.count) + power
        while digits.first == "0", digits.count > 1 {
            digits.removeFirst()
            exponent -= 1
        }
        while digits.last == "0", digits.count > 1 {
            digits.removeLast()
        }
        return (digits, exponent)
    }

    /// `StringToNumber`: surrounding white space ignored, empty is 0, decimal literals (with
    /// `Infinity`), `0x`/`0o`/`0b` integers; anything else NaN.
    static func stringToNumber(_ text: String) -> Double {
        let scalars = Array(trimmed(text).unicodeScalars)
        if scalars.isEmpty { return 0 }
        if scalars.count > 2, scalars[0] == "0" {
            switch scalars[1] {
            case "x", "X": return integer(scalars.dropFirst(2), radix: 16)
            case "o", "O": return integer(scalars.dropFirst(2), radix: 8)
            case "b", "B": return integer(scalars.dropFirst(2), radix: 2)
            default: break
            }
        }
        let literal = decimalLiteralPrefix(scalars[...])
        guard literal.length == scalars.count else { return .nan }
        return literal.value
    }

    /// `parseFloat`: the longest decimal literal at the start (after white space), else NaN.
    static func parseFloat(_ text: String) -> Double {
        let scalars = Array(trimmedLeading(text).unicodeScalars)
        let literal = decimalLiteralPrefix(scalars[...])
        return literal.length == 0 ? .nan : literal.value
    }

    /// `parseInt(text, 10)`: an optional sign and the decimal digits at the start, else NaN.
    static func parseInt(_ text: String) -> Double {
        var scalars = trimmedLeading(text).unicodeScalars[...]
        var negative = false
        if let first = scalars.first, first == "+" || first == "-" {
            negative = first == "-"
            scalars = scalars.dropFirst()
        }
        var value = 0.0
        var digits = 0
        for scalar in scalars {
            guard let digit = decimalDigit(scalar) else { break }
            value = value * 10 + Double(digit)
            digits += 1
        }
        if digits == 0 { return .nan }
        return negative ? -value : value
    }

    private static func integer(_ scalars: ArraySlice<Unicode.Scalar>, radix: Int) -> Double {
        var value = 0.0
        for scalar in scalars {
            guard let digit = Int(String(scalar), radix: radix) else { return .nan }
            value = value * Double(radix) + Double(digit)
        }
        return value
    }

    /// The longest prefix that is a `StrDecimalLiteral`, and its value (length 0 when there is none).
    private static func decimalLiteralPrefix(_ scalars: ArraySlice<Unicode.Scalar>) -> (length: Int, value: Double) {
        var index = scalars.startIndex
        var negative = false
        if index < scalars.endIndex, scalars[index] == "+" || scalars[index] == "-" {
            negative = scalars[index] == "-"
            index += 1
        }
        let infinity = Array("Infinity".unicodeScalars)
        if scalars[index...].starts(with: infinity) {
            return (index + infinity.count - scalars.startIndex, negative ? -.infinity : .infinity)
        }
        var text = negative ? "-" : ""
        var integerDigits = 0
        while index < scalars.endIndex, decimalDigit(scalars[index]) != nil {
            text.unicodeScalars.append(scalars[index])
            integerDigits += 1
            index += 1
        }
        var fractionDigits = 0
        var end = index
        if index < scalars.endIndex, scalars[index] == "." {
            var probe = index + 1
            var fraction = ""
            while probe < scalars.endIndex, decimalDigit(scalars[probe]) != nil {
                fraction.unicodeScalars.append(scalars[probe])
                fractionDigits += 1
                probe += 1
            }
            if integerDigits > 0 || fractionDigits > 0 {
                text += (integerDigits == 0 ? "0." : ".") + (fraction.isEmpty ? "0" : fraction)
                end = probe
            }
        }
        guard integerDigits > 0 || fractionDigits > 0 else { return (0, .nan) }
        index = end
        if index < scalars.endIndex, scalars[index] == "e" || scalars[index] == "E" {
            var probe = index + 1
            var exponent = "e"
            if probe < scalars.endIndex, scalars[probe] == "+" || scalars[probe] == "-" {
                exponent.unicodeScalars.append(scalars[probe])
                probe += 1
            }
            var exponentDigits = 0
            while probe < scalars.endIndex, decimalDigit(scalars[probe]) != nil {
                exponent.unicodeScalars.append(scalars[probe])
                exponentDigits += 1
                probe += 1
            }
            if exponentDigits > 0 {
                text += exponent
                end = probe
            }
        }
        return (end - scalars.startIndex, Double(text) ?? .nan)
    }

    private static func decimalDigit(_ scalar: Unicode.Scalar) -> Int? {
        scalar.value >= 0x30 && scalar.value <= 0x39 ? Int(scalar.value - 0x30) : nil
    }

    // MARK: White space

    /// JavaScript's `WhiteSpace` and `LineTerminator` code points, which `trim` and `ToNumber` skip.
    static func isWhiteSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
            0x3000, 0xFEFF:
            true
        default: false
        }
    }

    static func trimmed(_ text: String) -> Substring {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhiteSpace($0) }),
            let last = scalars.lastIndex(where: { !isWhiteSpace($0) })
        else { return "" }
        return Substring(scalars[first...last])
    }

    static func trimmedLeading(_ text: String) -> Substring {
        Substring(text.unicodeScalars.drop(while: isWhiteSpace))
    }
}

extension JavaScript {
    /// The order `Object.keys` lists an object's keys in: array-index keys ("0", "7") first in numeric
    /// order, then the others in the order they were added.
    static func propertyOrder(_ keys: [String]) -> [String] {
        var indices: [(UInt32, String)] = []
        var others: [String] = []
        for key in keys {
            if let index = UInt32(key), index < UInt32.max, String(index) == key {
                indices.append((index, key))
            } else {
                others.append(key)
            }
        }
        return indices.sorted { $0.0 < $1.0 }.map(\.1) + others
    }
}

extension JavaScript {
    /// `text.indexOf(ascii) !== -1` for an ASCII needle: a byte search, as JavaScript compares code units.
    /// (`String.contains` compares Characters, grapheme by grapheme: about a hundred times the work for an
    /// offer's content, and it misses a `{` that a combining mark follows, where JavaScript finds it.)
    static func includes(_ text: String, _ ascii: StaticString) -> Bool {
        let needle = UnsafeBufferPointer(start: ascii.utf8Start, count: ascii.utf8CodeUnitCount)
        guard let first = needle.first else { return true }
        var text = text
        return text.withUTF8 { bytes in
            guard bytes.count >= needle.count else { return false }
            var index = 0
            let last = bytes.count - needle.count
            while index <= last {
                if bytes[index] == first {
                    var matched = 1
                    while matched < needle.count, bytes[index + matched] == needle[matched] { matched += 1 }
                    if matched == needle.count { return true }
                }
                index += 1
            }
            return false
        }
    }
}
