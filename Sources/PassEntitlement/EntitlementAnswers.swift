import PreflightProtocol

// The typed answers of the entitlement commands (docs/PROTOCOL.md, "Entitlement"). The agent encodes
// them at the protocol edge (PassReplies.swift); this module writes no reply JSON.

/// Why an entitlement command could not give the answer asked for: Adobe's error passed through (its HTTP
/// status and code), or the agent's own (status 0 with the AccessEnabler's codes).
public enum PassProblem: Sendable, Hashable {
    case adobe(AdobeStatus)
    case agent(PassFailure)

    /// The status code, for logs and counters.
    public var code: String {
        switch self {
        case .adobe(let status): status.code ?? "unknown"
        case .agent(let failure): failure.code.rawValue
        }
    }

    init?<Value>(_ result: UpstreamResult<Value>) {
        switch result {
        case .success: return nil
        case .adobeError(let status): self = .adobe(status)
        case .failure(let failure): self = .agent(failure)
        }
    }
}

/// `checkAuthentication`: the AccessEnabler's authentication status.
public struct AuthenticationAnswer: Sendable, Hashable {
    public var authenticated: Bool
    /// The provider signed in with (or, when the profile expired, the one it was).
    public var mvpd: String?
    /// Wall-clock milliseconds since the epoch; nil when not signed in.
    public var notBefore: Int64?
    public var notAfter: Int64?
    /// The profile type (`regular`, `temporary`, …); nil when not signed in.
    public var type: String?
    /// Why not signed in: `authentication_session_missing` or `_expired`, or what kept the agent from
    /// knowing.
    public var problem: PassProblem?
    /// A sign-in under way, when there is one.
    public var pending: PendingSignIn?
}

/// `getAuthentication`: signed in already, or the code to show.
public enum SignInAnswer: Sendable, Hashable {
    case authenticated(mvpd: String, notAfter: Int64)
    case pending(PendingSignIn)
    case problem(PassProblem)
}

/// A media token for the player. A secret of the asking app: never logged, never kept by the agent.
public struct MediaToken: Sendable, Hashable {
    public var serializedToken: String
    public var notBefore: Int64?
    public var notAfter: Int64?
}

/// Adobe's authorize decision for one resource (`DecisionResponse`).
public struct AuthorizationDecision: Sendable, Hashable {
    public var resource: String
    public var mvpd: String?
    public var authorized: Bool
    /// `mvpd`, `degradation`, `temppass`, `dummy`.
    public var source: String?
    /// Adobe's item-level error on a denial (or on a permit that carries one).
    public var error: AdobeStatus?
    /// On a permit from `decisions/authorize`.
    public var token: MediaToken?
    public var notBefore: Int64?
    public var notAfter: Int64?

    init(resource: String, authorized: Bool) {
        self.resource = resource
        self.authorized = authorized
    }

    init?(json: JSONValue) {
        guard let resource = json["resource"]?.stringValue, case .bool(let authorized)? = json["authorized"] else {
            return nil
        }
        self.resource = resource
        self.authorized = authorized
        mvpd = json["mvpd"]?.stringValue
        source = json["source"]?.stringValue
        error = json["error"]?.objectValue.map { AdobeStatus(passingThrough: $0) }
        notBefore = json["notBefore"]?.doubleValue.map { Int64($0) }
        notAfter = json["notAfter"]?.doubleValue.map { Int64($0) }
        if let token = json["token"], let serialized = token["serializedToken"]?.stringValue, !serialized.isEmpty {
            self.token = MediaToken(
                serializedToken: serialized,
                notBefore: token["notBefore"]?.doubleValue.map { Int64($0) },
                notAfter: token["notAfter"]?.doubleValue.map { Int64($0) }
            )
        }
    }

    /// The `decisions` of a `DecisionsResponse`; nil when the body is not one.
    static func list(from json: JSONValue) -> [AuthorizationDecision]? {
        guard let items = json["decisions"]?.arrayValue else { return nil }
        var decisions: [AuthorizationDecision] = []
        for item in items {
            guard let decision = AuthorizationDecision(json: item) else { return nil }
            decisions.append(decision)
        }
        return decisions
    }

    /// A clean permit: authorized without an error.
    var isPermit: Bool { authorized && error == nil }
}

/// `getAuthorization` and `checkAuthorization`.
public struct AuthorizationAnswer: Sendable, Hashable {
    public var resource: String
    /// Adobe's decision; nil when there was none (`problem` says why).
    public var decision: AuthorizationDecision?
    /// Whether the decision is a permit the agent held (`checkAuthorization` only).
    public var fromCache = false
    public var problem: PassProblem?
}

/// `logout`.
public struct LogoutAnswer: Sendable, Hashable {
    /// The provider signed out of; nil when the box was not signed in with any.
    public var mvpd: String?
    /// Adobe's `actionName`, `actionType` and `url`: a browser step when `url` is there.
    public var actionName: String?
    public var actionType: String?
    public var url: String?
    /// Adobe could not be told (local state is cleared all the same).
    public var problem: PassProblem?
}

/// `getMetadata`.
public enum MetadataAnswer: Sendable, Hashable {
    /// Every attribute: name to value (Adobe's `value`; encrypted values as Adobe sent them).
    case attributes(JSONObject)
    /// One key; nil when the profile does not have it.
    case value(key: String, value: JSONValue?)
    case problem(PassProblem)
}

/// `getSelectedProvider` and `setSelectedProvider`.
public enum ProviderAnswer: Sendable, Hashable {
    case providers(selected: String?, [Provider])
    /// `setSelectedProvider` with an MVPD the requestor does not integrate with: nothing changed.
    case unknownProvider(String, known: [String])
    case problem(PassProblem)
}
