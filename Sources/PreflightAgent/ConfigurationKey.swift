import PreflightProtocol

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One key of the configuration file, declared once in ``AgentConfiguration/keys``: where it lives in
/// ``AgentConfiguration``, how its JSON is read and checked, whether it is a secret, whether a reload
/// applies it, and its row of docs/OPERATIONS.md's reference.
///
/// Parsing, unknown-key warnings, `config.show` (with secrets redacted), the reload policy and the
/// documentation all walk the table; none of them names a key.
public struct ConfigurationKey: Sendable {
    /// What SIGHUP does with a changed value.
    public enum Reload: Sendable, Equatable {
        /// The new value applies at once.
        case applies
        /// The running value is kept and the journal says a restart is needed.
        case needsRestart
    }

    public let section: ConfigurationSection
    public let name: String
    public let reload: Reload
    /// Shown only as `(redacted, N characters)`, never logged.
    public let isSecret: Bool
    /// docs/OPERATIONS.md's columns: allowed values, default, what it does, and what a reload does.
    public let allowed: String
    public let defaultText: String
    public let summary: String
    public let reloadText: String

    /// The field of ``AgentConfiguration`` this key sets.
    let field: AnyKeyPath & Sendable
    private let read: @Sendable (inout AgentConfiguration, JSONValue, String) throws(ConfigurationError) -> Void
    private let display: @Sendable (AgentConfiguration) -> JSONValue
    private let keep: @Sendable (AgentConfiguration, inout AgentConfiguration) -> Void
    private let same: @Sendable (AgentConfiguration, AgentConfiguration) -> Bool

    /// `section.name`, as errors, warnings and the journal spell it.
    public var path: String { section.path(of: name) }

    /// Declares a key. `allowed` and `defaultText` replace the ones the value kind would write in the
    /// doc; `display` replaces the value `config.show` shows.
    init<Value: Equatable & Sendable>(
        _ section: ConfigurationSection,
        _ name: String,
        _ field: WritableKeyPath<AgentConfiguration, Value> & Sendable,
        _ kind: ConfigurationValue<Value>,
        _ reload: Reload,
        _ summary: String,
        allowed: String? = nil,
        default defaultText: String? = nil,
        reloadNote: String? = nil,
        secret: Bool = false,
        display: (@Sendable (AgentConfiguration) -> JSONValue)? = nil
    ) {
        self.section = section
        self.name = name
        self.field = field
        self.reload = reload
        self.isSecret = secret
        self.allowed = allowed ?? kind.allowed
        self.defaultText = defaultText ?? kind.describe(AgentConfiguration()[keyPath: field])
        self.summary = summary
        self.reloadText = reloadNote ?? (reload == .applies ? "reload" : "restart")
        let read = kind.read
        let json = kind.json
        self.read = { (configuration, value, path) throws(ConfigurationError) in
            configuration[keyPath: field] = try read(value, path)
        }
        if let display {
            self.display = display
        } else if secret {
            self.display = { configuration in .string(Self.redacted(json(configuration[keyPath: field]))) }
        } else {
            self.display = { configuration in json(configuration[keyPath: field]) }
        }
        self.keep = { running, next in next[keyPath: field] = running[keyPath: field] }
        self.same = { $0[keyPath: field] == $1[keyPath: field] }
    }

    /// Reads this key's JSON value into `configuration`, or says what is wrong with it.
    func read(_ value: JSONValue, into configuration: inout AgentConfiguration) throws(ConfigurationError) {
        try read(&configuration, value, path)
    }

    /// The value `config.show` shows: secrets redacted.
    public func shown(in configuration: AgentConfiguration) -> JSONValue { display(configuration) }

    /// Whether `a` and `b` hold the same value for this key.
    func isSame(in a: AgentConfiguration, and b: AgentConfiguration) -> Bool { same(a, b) }

    /// Puts `running`'s value of this key into `next`.
    func keepRunning(_ running: AgentConfiguration, in next: inout AgentConfiguration) { keep(running, &next) }

    /// "(redacted, 412 characters)": enough to tell a set secret from an empty one, nothing more.
    static func redacted(_ value: JSONValue) -> String {
        guard let secret = value.stringValue, !secret.isEmpty else { return "(empty)" }
        return "(redacted, \(secret.count) characters)"
    }

    /// This key's row of docs/OPERATIONS.md's reference table.
    var markdownRow: String {
        "| `\(name)` | \(allowed) | \(defaultText) | \(summary) | \(reloadText) |"
    }
}

/// How one kind of configuration value is read from JSON, checked, shown, and described in the doc.
struct ConfigurationValue<Value: Sendable>: Sendable {
    /// The doc's "type, allowed values".
    var allowed: String
    var read: @Sendable (JSONValue, String) throws(ConfigurationError) -> Value
    var json: @Sendable (Value) -> JSONValue
    /// The doc's "default", from the default value.
    var describe: @Sendable (Value) -> String
}

extension ConfigurationValue where Value == String {
    static var string: Self {
        Self(allowed: "string", read: readString, json: { .string($0) }, describe: { "`\($0.isEmpty ? "\"\"" : $0)`" })
    }

    /// One of `choices`.
    static func oneOf(_ choices: [String]) -> Self {
        checked(allowed: choices.map { "`\($0)`" }.joined(separator: ", ")) { text in
            choices.contains(text) ? nil : "must be one of \(choices.joined(separator: ", ")); got \"\(text)\""
        }
    }

    /// `ipc://`, `tcp://` or `inproc://` and an address.
    static var endpoint: Self {
        checked(allowed: "ZeroMQ endpoint: `ipc://`, `tcp://` or `inproc://` plus an address") { text in
            let schemes = ["ipc://", "tcp://", "inproc://"]
            guard schemes.contains(where: { text.hasPrefix($0) }), !schemes.contains(text) else {
                return "must be a ZeroMQ endpoint such as \(AgentEndpoint.app.defaultAddress); got \"\(text)\""
            }
            return nil
        }
    }

    /// A folder path: not empty, no NUL.
    static var folder: Self {
        checked(allowed: "folder path, not empty") { text in
            text.isEmpty || text.contains("\u{0}") ? "must be a folder path" : nil
        }
    }

    /// A string that `problem` accepts (returns nil for) or describes the fault of.
    private static func checked(allowed: String, _ problem: @escaping @Sendable (String) -> String?) -> Self {
        Self(
            allowed: allowed,
            read: { (value, path) throws(ConfigurationError) in
                let text = try readString(value, path)
                if let message = problem(text) { throw ConfigurationError(key: path, message: message) }
                return text
            },
            json: { .string($0) },
            describe: { "`\($0)`" }
        )
    }
}

/// A JSON string, or an error naming the key.
private func readString(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> String {
    guard case .string(let text) = value else {
        throw ConfigurationError(key: path, message: "must be a string, got \(value.typeName)")
    }
    return text
}

extension ConfigurationValue where Value == String? {
    /// A non-empty string, or `null` for none.
    static var optionalString: Self {
        Self(
            allowed: "non-empty string or `null`",
            read: { (value, path) throws(ConfigurationError) in
                switch value {
                case .null: return nil
                case .string(let text) where !text.isEmpty: return text
                default:
                    throw ConfigurationError(key: path, message: "must be a non-empty string, got \(value.typeName)")
                }
            },
            json: { $0.map { .string($0) } ?? .null },
            describe: { $0.map { "`\($0)`" } ?? "none" }
        )
    }

    /// An `http` or `https` URL with a host, its trailing `/` dropped; or `null` for the default.
    static var url: Self {
        Self(
            allowed: "`http` or `https` URL with a host, or `null`",
            read: { (value, path) throws(ConfigurationError) in
                if case .null = value { return nil }
                let text = try readString(value, path)
                guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                    url.host != nil
                else {
                    throw ConfigurationError(key: path, message: "must be an http or https URL; got \"\(text)\"")
                }
                return text.hasSuffix("/") ? String(text.dropLast()) : text
            },
            json: { $0.map { .string($0) } ?? .null },
            describe: { $0.map { "`\($0)`" } ?? "none" }
        )
    }
}

extension ConfigurationValue where Value == [String] {
    /// An array of non-empty strings.
    static var strings: Self {
        Self(
            allowed: "array of non-empty strings",
            read: { (value, path) throws(ConfigurationError) in
                guard case .array(let elements) = value else {
                    throw ConfigurationError(key: path, message: "must be an array of strings, got \(value.typeName)")
                }
                var strings: [String] = []
                for (index, element) in elements.enumerated() {
                    guard case .string(let text) = element, !text.isEmpty else {
                        throw ConfigurationError(key: "\(path)[\(index)]", message: "must be a non-empty string")
                    }
                    strings.append(text)
                }
                return strings
            },
            json: { .array($0.map { .string($0) }) },
            describe: { $0.isEmpty ? "`[]`" : "`\($0)`" }
        )
    }
}

extension ConfigurationValue where Value: FixedWidthInteger {
    /// A whole number within `range`.
    static func integer(_ range: ClosedRange<Value>) -> Self {
        Self(
            allowed: "integer \(range.lowerBound) to \(range.upperBound)",
            read: { (value, path) throws(ConfigurationError) in
                guard case .integer(let number) = value, let converted = Value(exactly: number),
                    range.contains(converted)
                else {
                    throw ConfigurationError(
                        key: path,
                        message:
                            "must be an integer from \(range.lowerBound) to \(range.upperBound); got \(JSONWriter.string(value))"
                    )
                }
                return converted
            },
            json: { .integer(Int64($0)) },
            describe: { "\($0)" }
        )
    }
}

extension ConfigurationValue where Value == Double {
    /// A number of seconds within `range`.
    static func seconds(_ range: ClosedRange<Double>) -> Self {
        seconds(range, orZero: false)
    }

    /// 0 (never), or a number of seconds within `range`.
    static func zeroOrSeconds(_ range: ClosedRange<Double>) -> Self {
        seconds(range, orZero: true)
    }

    private static func seconds(_ range: ClosedRange<Double>, orZero: Bool) -> Self {
        let span = "\(Self.decimal(range.lowerBound)) to \(Self.decimal(range.upperBound))"
        return Self(
            allowed: orZero ? "0, or seconds \(span)" : "seconds, \(span)",
            read: { (value, path) throws(ConfigurationError) in
                guard let number = value.doubleValue, (orZero && number == 0) || range.contains(number) else {
                    throw ConfigurationError(
                        key: path,
                        message: "must be \(orZero ? "0 or " : "")a number of seconds from \(range.lowerBound) to "
                            + "\(range.upperBound); got \(JSONWriter.string(value))"
                    )
                }
                return number
            },
            json: { .number($0) },
            describe: { decimal($0) }
        )
    }

    /// 5 as "5", 0.05 as "0.05".
    private static func decimal(_ value: Double) -> String {
        value == value.rounded() ? "\(Int64(value))" : "\(value)"
    }
}
