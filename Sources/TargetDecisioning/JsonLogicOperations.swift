import PreflightProtocol

/// The json-logic-js operators that take their arguments already evaluated, each with the JavaScript
/// expression json-logic-js evaluates (`a == b`, `String(source).substr(start, end)`, ...).
enum Operations {
    static func apply<Data: LogicData>(
        _ op: JsonLogic.Operator,
        _ values: [JSONValue?],
        _ data: Data
    ) throws(LogicError) -> JSONValue? {
        let a = values.first ?? nil
        let b = values.count > 1 ? values[1] : nil
        let c = values.count > 2 ? values[2] : nil
        switch op {
        case .equals, .notEquals, .strictEquals, .strictNotEquals, .greater, .greaterOrEqual, .less, .lessOrEqual,
            .in, .not, .truthy:
            return compare(op, a, b, c)
        case .remainder: return .number(JavaScript.toNumber(a).truncatingRemainder(dividingBy: JavaScript.toNumber(b)))
        case .log: return a
        case .cat: return .string(values.map(joined).joined())
        case .substr: return .string(substr(a, b, c))
        case .plus:
            var sum = 0.0
            for value in values { sum += JavaScript.parseFloat(JavaScript.toString(value)) }
            return .number(sum)
        case .times: return try product(values)
        case .minus:
            guard values.count > 1, b != nil else { return .number(-JavaScript.toNumber(a)) }
            return .number(JavaScript.toNumber(a) - JavaScript.toNumber(b))
        case .divide: return .number(JavaScript.toNumber(a) / JavaScript.toNumber(b))
        case .min: return .number(extreme(values, initial: .infinity, isBetter: <))
        case .max: return .number(extreme(values, initial: -.infinity, isBetter: >))
        case .merge: return .array(values.flatMap { value -> [JSONValue] in value?.arrayValue ?? [value ?? .null] })
        case .missing: return .array(missing(values, data))
        case .missingSome: return missingSome(a, b, data)
        default: throw LogicError(message: "Unrecognized operation \(op.rawValue)")
        }
    }

    /// The comparisons and tests, on their (at most three) evaluated arguments; `c` nil is undefined, and
    /// `<` and `<=` with a defined third argument test "between".
    static func compare(_ op: JsonLogic.Operator, _ a: JSONValue?, _ b: JSONValue?, _ c: JSONValue?) -> JSONValue {
        switch op {
        case .equals: return .bool(JavaScript.looseEquals(a, b))
        case .notEquals: return .bool(!JavaScript.looseEquals(a, b))
        case .strictEquals: return .bool(JavaScript.strictEquals(a, b))
        case .strictNotEquals: return .bool(!JavaScript.strictEquals(a, b))
        case .greater: return .bool(JavaScript.lessThan(b, a))
        case .greaterOrEqual: return .bool(JavaScript.lessThanOrEqual(b, a))
        case .less:
            guard c != nil else { return .bool(JavaScript.lessThan(a, b)) }
            return .bool(JavaScript.lessThan(a, b) && JavaScript.lessThan(b, c))
        case .lessOrEqual:
            guard c != nil else { return .bool(JavaScript.lessThanOrEqual(a, b)) }
            return .bool(JavaScript.lessThanOrEqual(a, b) && JavaScript.lessThanOrEqual(b, c))
        case .in: return .bool(contains(b, a))
        case .not: return .bool(!JsonLogic.truthy(a))
        default: return .bool(JsonLogic.truthy(a))
        }
    }

    /// `in`: `b.indexOf(a) !== -1` for a string or an array `b`; false for anything else.
    private static func contains(_ haystack: JSONValue?, _ needle: JSONValue?) -> Bool {
        guard JavaScript.isTruthy(haystack) else { return false }
        switch haystack {
        case .string(let text):
            return containsCodeUnits(text, JavaScript.toString(needle))
        case .array(let elements):
            return elements.contains { JavaScript.strictEquals($0, needle) }
        default:
            return false
        }
    }

    /// Substring search by code units (searching UTF-8 bytes of valid strings finds the same matches).
    static func containsCodeUnits(_ text: String, _ part: String) -> Bool {
        let haystack = Array(text.utf8)
        let needle = Array(part.utf8)
        if needle.isEmpty { return true }
        guard needle.count <= haystack.count else { return false }
        for start in 0...(haystack.count - needle.count)
        where haystack[start] == needle[0] && haystack[start..<start + needle.count].elementsEqual(needle) {
            return true
        }
        return false
    }

    /// `Array.prototype.join` turns `null` and `undefined` into nothing.
    private static func joined(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null: ""
        default: JavaScript.toString(value)
        }
    }

    /// `substr`: JavaScript's `substr(start, length)`; a negative length counts back from the end.
    private static func substr(_ source: JSONValue?, _ start: JSONValue?, _ end: JSONValue?) -> String {
        let text = JavaScript.toString(source)
        if JavaScript.lessThan(end, .integer(0)) {
            let rest = substring(text, start, nil)
            let length = JavaScript.add(.integer(Int64(rest.utf16.count)), end)
            return substring(rest, .integer(0), length)
        }
        return substring(text, start, end)
    }

    /// `String.prototype.substr(start, length)` on UTF-16 code units.
    private static func substring(_ text: String, _ start: JSONValue?, _ length: JSONValue?) -> String {
        let units = Array(text.utf16)
        let size = units.count
        let from: Int
        let wantedStart = integerOrInfinity(start)
        if wantedStart == -.infinity {
            from = 0
        } else if wantedStart < 0 {
            from = max(size + Int(wantedStart), 0)
        } else {
            from = Int(min(wantedStart, Double(size)))
        }
        let wantedLength = length == nil ? Double(size) : integerOrInfinity(length)
        let count = Int(min(max(wantedLength, 0), Double(size - from)))
        guard count > 0 else { return "" }
        return String(decoding: units[from..<from + count], as: UTF16.self)
    }

    /// `ToIntegerOrInfinity`: NaN is 0, fractions truncate toward zero.
    private static func integerOrInfinity(_ value: JSONValue?) -> Double {
        let number = JavaScript.toNumber(value)
        if number.isNaN { return 0 }
        return number.rounded(.towardZero)
    }

    /// `*` reduces without an initial value: one argument comes back as it is, unconverted.
    private static func product(_ values: [JSONValue?]) throws(LogicError) -> JSONValue? {
        guard let first = values.first else {
            throw LogicError(message: "Reduce of empty array with no initial value")
        }
        guard values.count > 1 else { return first }
        var result = JavaScript.parseFloat(JavaScript.toString(first))
        for value in values.dropFirst() { result *= JavaScript.parseFloat(JavaScript.toString(value)) }
        return .number(result)
    }

    /// `Math.min` / `Math.max`: NaN if any argument is not a number.
    private static func extreme(
        _ values: [JSONValue?],
        initial: Double,
        isBetter: (Double, Double) -> Bool
    ) -> Double {
        var result = initial
        for value in values {
            let number = JavaScript.toNumber(value)
            if number.isNaN { return .nan }
            if isBetter(number, result) { result = number }
        }
        return result
    }

    /// `missing`: the keys (given as arguments, or as one array) whose `var` is null or "".
    private static func missing<Data: LogicData>(_ values: [JSONValue?], _ data: Data) -> [JSONValue] {
        var keys = values
        if case .array(let elements) = values.first ?? nil { keys = elements }
        var result: [JSONValue] = []
        for key in keys {
            let path = VariablePath(key)
            let found = path.segments == nil ? data.wholeValue : (data.lookup(path) ?? .null)
            if found == .null || found == .string("") { result.append(key ?? .null) }
        }
        return result
    }

    /// `missing_some`: nothing when at least `need` of `options` are present, else the missing ones.
    private static func missingSome<Data: LogicData>(
        _ need: JSONValue?,
        _ options: JSONValue?,
        _ data: Data
    ) -> JSONValue? {
        let keys: [JSONValue?] = options?.arrayValue ?? [options]
        let absent = missing(keys, data)
        let optionCount: JSONValue? =
            switch options {
            case .array(let elements): .integer(Int64(elements.count))
            case .string(let text): .integer(Int64(text.utf16.count))
            default: nil
            }
        let present = JavaScript.subtract(optionCount, .integer(Int64(absent.count)))
        return JavaScript.lessThanOrEqual(need, present) ? .array([]) : .array(absent)
    }
}

extension JavaScript {
    /// JavaScript's `+`: string concatenation when either side is (or turns into) a string.
    static func add(_ left: JSONValue?, _ right: JSONValue?) -> JSONValue {
        func primitive(_ value: JSONValue?) -> JSONValue? {
            switch value {
            case .array, .object: .string(toString(value))
            default: value
            }
        }
        let a = primitive(left)
        let b = primitive(right)
        if case .string = a { return .string(toString(a) + toString(b)) }
        if case .string = b { return .string(toString(a) + toString(b)) }
        return .number(toNumber(a) + toNumber(b))
    }

    /// JavaScript's binary `-`.
    static func subtract(_ left: JSONValue?, _ right: JSONValue?) -> JSONValue {
        .number(toNumber(left) - toNumber(right))
    }
}
