#if canImport(Glibc)
import Glibc
#endif

/// Why the agent could not start or keep running. A struct around a private enum so that cases
/// can be added without breaking callers; `exitCode` is what `preflightd` exits with.
public struct AgentError: Error, Sendable, CustomStringConvertible {
    private enum Kind: Sendable {
        case endpointInUse(endpoint: String)
        case bindFailed(endpoint: String, reason: String)
        case system(call: String, errno: CInt)
        case configuration(ConfigurationError)
    }

    private let kind: Kind

    private init(_ kind: Kind) {
        self.kind = kind
    }

    /// Another process already accepts connections on this endpoint.
    public static func endpointInUse(_ endpoint: String) -> AgentError {
        AgentError(.endpointInUse(endpoint: endpoint))
    }

    public static func bindFailed(_ endpoint: String, reason: String) -> AgentError {
        AgentError(.bindFailed(endpoint: endpoint, reason: reason))
    }

    static func system(_ call: String, errno: CInt) -> AgentError {
        AgentError(.system(call: call, errno: errno))
    }

    public static func configuration(_ error: ConfigurationError) -> AgentError {
        AgentError(.configuration(error))
    }

    /// sysexits(3) codes, so systemd and scripts can tell a bad file from a busy socket.
    public var exitCode: Int32 {
        switch kind {
        case .configuration: 78  // EX_CONFIG
        case .endpointInUse, .bindFailed: 69  // EX_UNAVAILABLE
        case .system: 71  // EX_OSERR
        }
    }

    public var description: String {
        switch kind {
        case .endpointInUse(let endpoint):
            "another process already serves \(endpoint); is preflightd already running? "
                + "(systemctl status preflightd)"
        case .bindFailed(let endpoint, let reason):
            "cannot bind \(endpoint): \(reason)"
        case .system(let call, let code):
            "\(call) failed: \(String(cString: strerror(code)))"
        case .configuration(let error):
            "configuration error: \(error)"
        }
    }
}
