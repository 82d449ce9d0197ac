import PreflightProtocol

/// Why the agent could not service a `preauthorize` (PROTOCOL.md's agent-side codes, status 0): the
/// AccessEnabler's `onFailure`. A value with a code a machine switches on and a message a person reads.
/// Encoded as PROTOCOL.md's `status` object by the agent, at the protocol edge.
public struct PassFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: String, Sendable, Hashable {
        case requestorNotConfigured = "requestor_not_configured"
        case authenticationSessionMissing = "authentication_session_missing"
        case authenticationSessionExpired = "authentication_session_expired"
        case accessTokenUnavailable = "access_token_unavailable"
        case serverResponseFormatUnknown = "server_response_format_unknown"
        case networkError = "network_error"
    }

    public internal(set) var code: Code
    public internal(set) var message: String

    public var action: ErrorAction {
        switch code {
        case .requestorNotConfigured: .retry
        case .authenticationSessionMissing, .authenticationSessionExpired: .authentication
        case .accessTokenUnavailable, .serverResponseFormatUnknown, .networkError: .none
        }
    }

    public var description: String { "\(code.rawValue): \(message)" }

    static func requestorNotOnThisBox(_ requestor: String) -> PassFailure {
        PassFailure(
            code: .requestorNotConfigured,
            message:
                "The requestor \"\(requestor)\" is not configured on this box (\(PassConfigurationKey.requestors.path))."
        )
    }

    static func requestorNotConfigured(_ requestor: String, lastError: String?) -> PassFailure {
        var message = "The configuration of requestor \"\(requestor)\" has not been retrieved from Adobe Pass yet"
        if let lastError { message += " (last attempt: \(lastError))" }
        return PassFailure(code: .requestorNotConfigured, message: message + "; retry shortly.")
    }

    /// The AccessEnabler's wording, as PROTOCOL.md gives it.
    static let authenticationSessionMissing = PassFailure(
        code: .authenticationSessionMissing,
        message: "The authentication session associated with this request could not be retrieved. "
            + "The user must re-authenticate with a supported MVPD in order to continue."
    )

    static let authenticationSessionExpired = PassFailure(
        code: .authenticationSessionExpired,
        message: "The authentication session associated with this request has expired. "
            + "The user must re-authenticate with a supported MVPD in order to continue."
    )

    static func accessTokenUnavailable(_ detail: String) -> PassFailure {
        PassFailure(
            code: .accessTokenUnavailable,
            message: "No access token could be obtained from Adobe Pass: \(detail)."
        )
    }

    static func serverResponseFormatUnknown(_ detail: String) -> PassFailure {
        PassFailure(
            code: .serverResponseFormatUnknown,
            message: "Adobe Pass sent a response in an unknown format: \(detail)."
        )
    }

    static func networkError(_ detail: String) -> PassFailure {
        PassFailure(code: .networkError, message: "Adobe Pass could not be reached in time: \(detail).")
    }
}

/// An Adobe Pass `Status` (Enhanced Error Codes) passed through to apps: the seven fields of
/// `ErrorInformation` in a fixed order, absent ones omitted, values as Adobe sent them.
public struct AdobeStatus: Sendable, Hashable {
    static let fieldNames = ["status", "code", "message", "details", "helpUrl", "trace", "action"]

    /// The fields, in that order: what apps receive as the `status` (or an item's `error`) object.
    public private(set) var fields: JSONObject

    /// From an `error` object. With `httpStatus`, that is the `status` (a top-level error, where
    /// PROTOCOL.md says the HTTP status is the status); without it Adobe's own `status` stays.
    init(passingThrough error: JSONObject, httpStatus: Int? = nil) {
        var fields = JSONObject()
        for name in Self.fieldNames {
            if name == "status", let httpStatus {
                fields[name] = .integer(Int64(httpStatus))
            } else if let value = error[name], value != .null {
                fields[name] = value
            }
        }
        self.fields = fields
    }

    public var code: String? { fields["code"]?.stringValue }
    public var status: Int? { fields["status"]?.doubleValue.map { Int($0) } }
}

/// The one answer of a `preauthorize`. The agent encodes it as PROTOCOL.md's PreauthorizeResponse at
/// the protocol edge; this module writes no reply JSON.
public enum PreauthorizeAnswer: Sendable, Hashable {
    /// One decision per requested resource, in request order.
    case decisions([ResourceDecision])
    /// A top-level Adobe Pass error: outcome response, no resources.
    case adobeError(AdobeStatus)
    /// The agent could not service the request: outcome failure.
    case failure(PassFailure)

    /// PROTOCOL.md's `outcome`: `failure` when the agent could not service the request, else `response`.
    public var outcome: String {
        if case .failure = self { return "failure" }
        return "response"
    }

    /// The code of the answer's `status`, if it has one.
    var statusCode: String? {
        switch self {
        case .decisions: nil
        case .adobeError(let status): status.code ?? "unknown"
        case .failure(let failure): failure.code.rawValue
        }
    }
}

/// Adobe's decision on one resource.
public struct ResourceDecision: Sendable, Hashable {
    public internal(set) var resource: String
    public internal(set) var authorized: Bool
    /// The item-level `error`, passed through.
    public internal(set) var error: AdobeStatus?
    /// Where Adobe's decision came from: `mvpd`, `degradation`, `temppass`, `dummy`; nil when Adobe sent
    /// none.
    public internal(set) var source: String?

    init(resource: String, authorized: Bool, error: AdobeStatus? = nil, source: String? = nil) {
        self.resource = resource
        self.authorized = authorized
        self.error = error
        self.source = source
    }

    /// A clean permit: the only kind of decision the cache keeps.
    var isCacheablePermit: Bool { authorized && error == nil }
}
