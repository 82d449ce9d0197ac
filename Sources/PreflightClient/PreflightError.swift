import PreflightProtocol

/// Why a request to the agent did not produce a result: a code to switch on and a message to read.
///
/// The Target calls never surface it as a failure (they answer with default content, as the Target SDK
/// does when Adobe cannot be reached) but keep it in ``TargetContent/failure`` so that an app can log why.
/// `preauthorize` turns it into a `Status` for `onFailure`.
public struct PreflightError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A machine-readable reason. A struct rather than an enum so that reasons can be added without breaking
    /// apps that switch on the ones they know. The agent's own error codes (`invalid_argument`,
    /// `overloaded`, ...) pass through unchanged.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Nobody accepts connections at the endpoint (no socket file, or one no process serves).
        public static let agentUnreachable = Code(rawValue: "agent_unreachable")
        /// This user may not connect to the endpoint's socket file (group `preflight`).
        public static let permissionDenied = Code(rawValue: "permission_denied")
        /// No reply arrived within the timeout, on any of the attempts.
        public static let timedOut = Code(rawValue: "timed_out")
        /// The agent answered something that is not a reply of the protocol, or not the result expected.
        public static let badReply = Code(rawValue: "bad_reply")
        /// The client was closed before the reply arrived.
        public static let closed = Code(rawValue: "client_closed")
        /// The calling task was cancelled before the reply arrived.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The agent answered a prefetch, but Target did not (failed, timed out, unreachable): nothing cached.
        public static let prefetchFailed = Code(rawValue: "prefetch_failed")
        /// The client could not get a system resource (a thread, a pipe, a ZeroMQ context or socket).
        public static let systemError = Code(rawValue: "system_error")
        /// The request named no requestor (see ``PreflightClient/setRequestor(_:)``).
        public static let requestorMissing = Code(rawValue: "requestor_missing")

        /// The agent's `invalid_argument`: the request was refused; `field` names the argument.
        public static let invalidArgument = Code(rawValue: ErrorCode.invalidArgument.rawValue)
        /// The agent's `overloaded`, after the client's retries.
        public static let overloaded = Code(rawValue: ErrorCode.overloaded.rawValue)
        /// The agent's `shutting_down`, after the client's retries.
        public static let shuttingDown = Code(rawValue: ErrorCode.shuttingDown.rawValue)
    }

    /// What went wrong.
    public var code: Code
    /// A sentence a person can act on.
    public var message: String
    /// For the agent's `invalid_argument`: the path of the refused argument (`requests[1].name`).
    public var field: String?
    /// For errors the agent reported: its `action` (Adobe Pass vocabulary: none, retry, configuration...).
    public var action: String?

    /// Makes an error value (apps rarely need to; tests do).
    public init(code: Code, message: String, field: String? = nil, action: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.action = action
    }

    /// True when the agent could not be reached at all (not started, restarting, hung): the cases in which
    /// the SDKs report a network failure.
    public var isUnreachable: Bool {
        [.agentUnreachable, .timedOut, .shuttingDown, .overloaded].contains(code)
    }

    public var description: String {
        if let field { return "\(code) (\(field)): \(message)" }
        return "\(code): \(message)"
    }

    init(agent error: ProtocolError) {
        self.init(code: Code(rawValue: error.code.rawValue), message: error.message, field: error.field)
        action = error.action.rawValue
    }

    static func badReply(_ message: String) -> PreflightError {
        PreflightError(code: .badReply, message: message)
    }
}
