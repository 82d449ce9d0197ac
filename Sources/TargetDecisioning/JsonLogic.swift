import PreflightProtocol

/// A rule's condition: a JsonLogic expression compiled once, when the artifact is read, and evaluated
/// with json-logic-js's semantics (the library Adobe's Node.js engine evaluates conditions with).
///
/// Written here because no maintained JsonLogic package is available to the project. Every operator
/// of json-logic-js 2 is here, with its JavaScript coercions (see `JavaScript`): loose `==`, `<` and
/// `<=` with three arguments as "between", `in` as substring or array membership, `var` with dotted
/// paths and defaults, `+` through `parseFloat`. Compiling turns operator names into cases, literal
/// arrays into literals and `var` paths into pre-split segments, so evaluating a request re-parses
/// nothing. An unknown operator, like json-logic-js, is an error when evaluated (not when compiled).
indirect enum JsonLogic: Sendable {
    /// A value that is not logic: a primitive, an object that does not have exactly one key, or an
    /// array with no logic inside.
    case literal(JSONValue)
    /// An array with logic inside; each element is evaluated.
    case array([JsonLogic])
    /// `{"var": path}` with a path known when compiling.
    case variable(VariablePath, fallback: JsonLogic?)
    /// `{"var": expression}` whose path is computed.
    case computedVariable(JsonLogic, fallback: JsonLogic?)
    case operation(Operator, [JsonLogic])
    /// An operator json-logic-js does not have: evaluating it is an error.
    case unrecognized(String)

    /// The operators of json-logic-js 2, by name.
    enum Operator: String, Sendable {
        case equals = "=="
        case strictEquals = "==="
        case notEquals = "!="
        case strictNotEquals = "!=="
        case greater = ">"
        case greaterOrEqual = ">="
        case less = "<"
        case lessOrEqual = "<="
        case truthy = "!!"
        case not = "!"
        case remainder = "%"
        case log
        case `in`
        case cat
        case substr
        case plus = "+"
        case times = "*"
        case minus = "-"
        case divide = "/"
        case min
        case max
        case merge
        case missing
        case missingSome = "missing_some"
        case `if`
        case ternary = "?:"
        case and
        case or
        case filter
        case map
        case reduce
        case all
        case none
        case some
    }

    /// Compiles a condition as json-logic-js reads it: an object with exactly one key is an operation.
    init(compiling json: JSONValue) {
        switch json {
        case .array(let elements):
            let compiled = elements.map(JsonLogic.init(compiling:))
            let allLiteral = compiled.allSatisfy {
                if case .literal = $0 { return true }
                return false
            }
            self = allLiteral ? .literal(json) : .array(compiled)
        case .object(let object) where object.count == 1:
            let (name, argument) = object.members[0]
            var arguments: [JSONValue] = [argument]
            if case .array(let elements) = argument { arguments = elements }
            self = JsonLogic.operation(named: name, arguments: arguments)
        default:
            self = .literal(json)
        }
    }

    private static func operation(named name: String, arguments: [JSONValue]) -> JsonLogic {
        if name == "var" {
            let fallback = arguments.count > 1 ? JsonLogic(compiling: arguments[1]) : nil
            guard let first = arguments.first else { return .variable(.whole, fallback: fallback) }
            switch JsonLogic(compiling: first) {
            case .literal(let path): return .variable(VariablePath(path), fallback: fallback)
            case let computed: return .computedVariable(computed, fallback: fallback)
            }
        }
        guard let op = Operator(rawValue: name) else { return .unrecognized(name) }
        var compiled = arguments.map(JsonLogic.init(compiling:))
        if op == .reduce, arguments.count > 2 {
            // json-logic-js takes reduce's initial value as written, without evaluating it.
            compiled[2] = .literal(arguments[2])
        }
        return .operation(op, compiled)
    }
}

/// Why a condition could not be evaluated (json-logic-js throws for these).
struct LogicError: Error, Sendable, Equatable {
    let message: String
}

/// What `var` reads from: the rule's context, or an element inside `filter`, `map`, `all`...
protocol LogicData {
    /// The value at `path`, read property by property as JavaScript reads `data[a][b]`; nil when any
    /// step is undefined.
    func lookup(_ path: VariablePath) -> JSONValue?
    /// The data itself (`{"var": ""}`).
    var wholeValue: JSONValue? { get }
}

/// A `var` path split once: `"page.url_lc"` is `["page", "url_lc"]`.
struct VariablePath: Sendable, Equatable {
    /// nil for the data itself (`""`, `null`, or no path).
    let segments: [String]?
    /// The first segment as a rule context key, so the root lookup is a switch, not a string search.
    let contextKey: ContextKey

    static let whole = VariablePath(segments: nil)

    init(segments: [String]?) {
        self.segments = segments
        contextKey = segments.flatMap { ContextKey(rawValue: $0[0]) } ?? .other
    }

    /// The path a `var` argument names: its string form split at dots (`String(a).split(".")`).
    init(_ argument: JSONValue?) {
        switch argument {
        case nil, .null: self.init(segments: nil)
        case .string(let text) where text.isEmpty: self.init(segments: nil)
        default:
            let text = JavaScript.toString(argument)
            self.init(segments: text.split(separator: ".", omittingEmptySubsequences: false).map(String.init))
        }
    }

    /// The top-level names of a rule's context (`DecisioningContext`).
    enum ContextKey: String, Sendable {
        case allocation, mbox, page, referring, user, geo
        case currentTimestamp = "current_timestamp"
        case currentTime = "current_time"
        case currentDay = "current_day"
        case other
    }
}

/// Plain JSON as `var` data (the elements `filter`, `map`, `reduce` and `all` iterate over).
struct ValueData: LogicData {
    let value: JSONValue?

    func lookup(_ path: VariablePath) -> JSONValue? {
        guard let segments = path.segments else { return value }
        return ValueData.resolve(value, segments[...])
    }

    var wholeValue: JSONValue? { value }

    /// `data[a][b]...`: nil as soon as a step is undefined or a step starts from null or undefined.
    static func resolve(_ start: JSONValue?, _ segments: ArraySlice<String>) -> JSONValue? {
        var data = start
        for segment in segments {
            guard let current = data, current != .null else { return nil }
            data = property(of: current, segment)
            if data == nil { return nil }
        }
        return data
    }

    /// JavaScript's `value[key]` for JSON: object members, array elements and string characters by
    /// index, and `length` of arrays and strings.
    static func property(of value: JSONValue, _ key: String) -> JSONValue? {
        switch value {
        case .object(let object):
            return object[key]
        case .array(let elements):
            if key == "length" { return .integer(Int64(elements.count)) }
            guard let index = arrayIndex(key), index < elements.count else { return nil }
            return elements[index]
        case .string(let text):
            let units = Array(text.utf16)
            if key == "length" { return .integer(Int64(units.count)) }
            guard let index = arrayIndex(key), index < units.count else { return nil }
            return .string(String(decoding: [units[index]], as: UTF16.self))
        default:
            return nil
        }
    }

    /// The index a canonical array-index key names ("0", "12"; not "01" or "-1").
    private static func arrayIndex(_ key: String) -> Int? {
        guard let index = Int(key), index >= 0, String(index) == key else { return nil }
        return index
    }
}

extension JsonLogic {
    /// Evaluates the expression against `data`; nil is JavaScript's `undefined`.
    func evaluate<Data: LogicData>(_ data: Data) throws(LogicError) -> JSONValue? {
        switch self {
        case .literal(let value):
            return value
        case .array(let elements):
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for element in elements { values.append(try element.evaluate(data) ?? .null) }
            return .array(values)
        case .variable(let path, let fallback):
            let notFound = try fallback?.evaluate(data) ?? .null
            guard path.segments != nil else { return data.wholeValue }
            return data.lookup(path) ?? notFound
        case .computedVariable(let argument, let fallback):
            let path = VariablePath(try argument.evaluate(data))
            let notFound = try fallback?.evaluate(data) ?? .null
            guard path.segments != nil else { return data.wholeValue }
            return data.lookup(path) ?? notFound
        case .operation(let op, let arguments):
            return try JsonLogic.apply(op, arguments, data)
        case .unrecognized(let name):
            throw LogicError(message: "Unrecognized operation \(name)")
        }
    }

    /// Whether the condition holds: the result's JavaScript truthiness (the Node.js engine tests the
    /// result with a plain `if`).
    func isSatisfied<Data: LogicData>(by data: Data) throws(LogicError) -> Bool {
        JavaScript.isTruthy(try evaluate(data))
    }

    /// json-logic-js's `truthy`: JavaScript truthiness, except that an empty array is false.
    static func truthy(_ value: JSONValue?) -> Bool {
        if case .array(let elements) = value, elements.isEmpty { return false }
        return JavaScript.isTruthy(value)
    }

    private static func apply<Data: LogicData>(
        _ op: Operator,
        _ arguments: [JsonLogic],
        _ data: Data
    ) throws(LogicError) -> JSONValue? {
        switch op {
        case .if, .ternary: return try conditional(arguments, data)
        case .and, .or: return try logical(op == .and, arguments, data)
        case .filter, .map, .reduce, .all, .none, .some: return try iterating(op, arguments, data)
        case .equals, .notEquals, .strictEquals, .strictNotEquals, .greater, .greaterOrEqual, .less, .lessOrEqual,
            .in, .not, .truthy:
            // The operators conditions are made of take at most three arguments: no array for them.
            let a = arguments.count > 0 ? try arguments[0].evaluate(data) : nil
            let b = arguments.count > 1 ? try arguments[1].evaluate(data) : nil
            let c = arguments.count > 2 ? try arguments[2].evaluate(data) : nil
            for extra in arguments.dropFirst(3) { _ = try extra.evaluate(data) }
            return Operations.compare(op, a, b, c)
        default: break
        }
        var values: [JSONValue?] = []
        values.reserveCapacity(arguments.count)
        for argument in arguments { values.append(try argument.evaluate(data)) }
        return try Operations.apply(op, values, data)
    }

    private static func conditional<Data: LogicData>(
        _ arguments: [JsonLogic],
        _ data: Data
    ) throws(LogicError) -> JSONValue? {
        var index = 0
        while index < arguments.count - 1 {
            if truthy(try arguments[index].evaluate(data)) {
                return try arguments[index + 1].evaluate(data)
            }
            index += 2
        }
        if arguments.count == index + 1 { return try arguments[index].evaluate(data) }
        return .null
    }

    /// `and` returns the first falsy value or the last; `or` the first truthy value or the last.
    private static func logical<Data: LogicData>(
        _ isAnd: Bool,
        _ arguments: [JsonLogic],
        _ data: Data
    ) throws(LogicError) -> JSONValue? {
        var current: JSONValue? = nil
        for argument in arguments {
            current = try argument.evaluate(data)
            if truthy(current) != isAnd { return current }
        }
        return current
    }

    private static func iterating<Data: LogicData>(
        _ op: Operator,
        _ arguments: [JsonLogic],
        _ data: Data
    ) throws(LogicError) -> JSONValue? {
        let scoped = try arguments.first?.evaluate(data)
        let logic = arguments.count > 1 ? arguments[1] : JsonLogic.literal(.null)
        switch op {
        case .map:
            guard case .array(let elements) = scoped else { return .array([]) }
            var mapped: [JSONValue] = []
            for element in elements { mapped.append(try logic.evaluate(ValueData(value: element)) ?? .null) }
            return .array(mapped)
        case .reduce:
            var accumulator: JSONValue? = .null
            if arguments.count > 2, case .literal(let initial) = arguments[2] { accumulator = initial }
            guard case .array(let elements) = scoped else { return accumulator }
            for element in elements {
                var scope: JSONObject = ["current": element]
                if let accumulator { scope["accumulator"] = accumulator }
                accumulator = try logic.evaluate(ValueData(value: .object(scope)))
            }
            return accumulator
        case .all:
            let elements: [JSONValue]
            switch scoped {
            case .array(let items): elements = items
            case .string(let text): elements = text.utf16.map { .string(String(decoding: [$0], as: UTF16.self)) }
            case nil, .null:
                throw LogicError(message: "Cannot read property 'length' of \(JavaScript.toString(scoped))")
            default: elements = []
            }
            if elements.isEmpty { return false }
            for element in elements {
                if !truthy(try logic.evaluate(ValueData(value: element))) { return false }
            }
            return true
        default:  // filter, none, some
            var kept: [JSONValue] = []
            if case .array(let elements) = scoped {
                for element in elements {
                    if truthy(try logic.evaluate(ValueData(value: element))) { kept.append(element) }
                }
            }
            switch op {
            case .none: return .bool(kept.isEmpty)
            case .some: return .bool(!kept.isEmpty)
            default: return .array(kept)
            }
        }
    }
}
