/// A machine-readable error code of the wire protocol (shared/PROTOCOL.md, "Protocol error codes").
///
/// A struct rather than an enum so that codes can be added without breaking clients that switch on
/// the ones they know.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Not JSON, not an object, or `v`/`id`/`cmd` missing or mistyped.
    public static let malformedRequest = ErrorCode(rawValue: "malformed_request")
    /// `v` is not 1.
    public static let unsupportedVersion = ErrorCode(rawValue: "unsupported_version")
    /// `cmd` names no command this endpoint knows.
    public static let unknownCommand = ErrorCode(rawValue: "unknown_command")
    /// An argument is missing, mistyped or out of bounds; `field` says which.
    public static let invalidArgument = ErrorCode(rawValue: "invalid_argument")
    /// The body is larger than the configured limit.
    public static let payloadTooLarge = ErrorCode(rawValue: "payload_too_large")
    /// An admin command on the app endpoint, or a peer that may not use this endpoint.
    public static let notPermitted = ErrorCode(rawValue: "not_permitted")
    /// Too much work in flight; retry after `retryAfterMs`.
    public static let overloaded = ErrorCode(rawValue: "overloaded")
    /// The agent is stopping; retry (against the next instance).
    public static let shuttingDown = ErrorCode(rawValue: "shutting_down")
    /// A bug in the agent: the request was not carried out.
    public static let internalError = ErrorCode(rawValue: "internal_error")
}

/// What the caller should do about an error, in the vocabulary of Adobe Pass `Status.action`.
public struct ErrorAction: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let none = ErrorAction(rawValue: "none")
    public static let configuration = ErrorAction(rawValue: "configuration")
    public static let applicationRegistration = ErrorAction(rawValue: "application-registration")
    public static let authentication = ErrorAction(rawValue: "authentication")
    public static let authorization = ErrorAction(rawValue: "authorization")
    public static let degradation = ErrorAction(rawValue: "degradation")
    public static let retry = ErrorAction(rawValue: "retry")
    public static let retryAfter = ErrorAction(rawValue: "retry-after")
}

/// An error reply: the request was not carried out, nothing changed, nothing was sent upstream.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    /// A sentence a person can act on.
    public var message: String
    /// A path into the request (`requests[1].productParameters.color`) for `invalid_argument`.
    public var field: String?
    public var action: ErrorAction
    /// With action `retry-after`: how long to wait, in milliseconds.
    public var retryAfterMs: Int?

    public init(
        code: ErrorCode,
        message: String,
        field: String? = nil,
        action: ErrorAction = .none,
        retryAfterMs: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.field = field
        self.action = action
        self.retryAfterMs = retryAfterMs
    }

    public var description: String {
        if let field { return "\(code) (\(field)): \(message)" }
        return "\(code): \(message)"
    }

    public static func malformed(_ message: String) -> ProtocolError {
        ProtocolError(code: .malformedRequest, message: message)
    }

    public static func invalidArgument(_ field: String, _ message: String) -> ProtocolError {
        ProtocolError(code: .invalidArgument, message: message, field: field)
    }

    public static func unknownCommand(_ command: String) -> ProtocolError {
        ProtocolError(code: .unknownCommand, message: "unknown command \"\(command)\"", field: "cmd")
    }

    public static func notPermitted(_ message: String) -> ProtocolError {
        ProtocolError(code: .notPermitted, message: message)
    }

    public static func shuttingDown() -> ProtocolError {
        ProtocolError(code: .shuttingDown, message: "the agent is shutting down; retry shortly", action: .retry)
    }

    public static func overloaded(retryAfterMs: Int) -> ProtocolError {
        ProtocolError(
            code: .overloaded,
            message: "too many requests in flight; retry after \(retryAfterMs) ms",
            action: .retryAfter,
            retryAfterMs: retryAfterMs
        )
    }

    public static func internalError(_ message: String) -> ProtocolError {
        ProtocolError(code: .internalError, message: message)
    }

    /// The `error` object of an error reply.
    public var json: JSONValue {
        var object: JSONObject = ["code": .string(code.rawValue), "message": .string(message)]
        if let field { object["field"] = .string(field) }
        object["action"] = .string(action.rawValue)
        if let retryAfterMs { object["retryAfterMs"] = .integer(Int64(retryAfterMs)) }
        return .object(object)
    }

    /// Reads the `error` object of an error reply (client side). Unknown fields are ignored.
    public init?(json: JSONValue) {
        guard let code = json["code"]?.stringValue, let message = json["message"]?.stringValue else { return nil }
        self.init(
            code: ErrorCode(rawValue: code),
            message: message,
            field: json["field"]?.stringValue,
            action: json["action"]?.stringValue.map(ErrorAction.init(rawValue:)) ?? .none,
            retryAfterMs: json["retryAfterMs"]?.doubleValue.map { Int($0) }
        )
    }
}
