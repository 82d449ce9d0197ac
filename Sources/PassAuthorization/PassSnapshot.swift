import PreflightProtocol

/// What the agent holds for Adobe Pass, as typed values: `auth.list` writes it as JSON (``json``), and
/// `status` and systemd's status line read the fields they need. No secret is in it.
///
/// Times ending in `AtMs`/`At` are wall-clock epoch milliseconds; ages and remaining times are milliseconds.
public struct PassSnapshot: Sendable, Equatable {
    public enum RegistrationState: String, Sendable {
        case registered
        case none
        case notLoaded = "not-loaded"
    }

    public enum TokenState: String, Sendable {
        case valid
        case expired
        case none
    }

    public struct Requestor: Sendable, Equatable {
        public enum ConfigurationState: String, Sendable {
            case configured
            case pending
            case failed
        }

        public struct Decision: Sendable, Equatable {
            public var mvpd: String
            public var resource: String
            public var ageMs: Int64
        }

        public var name: String
        public var configurationState: ConfigurationState
        public var configuredAtMs: Int64?
        public var mvpds: [String]
        public var configurationAttempts: Int?
        public var configurationError: String?
        /// `unknown`, `authenticated`, `missing` or `expired`.
        public var sessionState: String
        public var sessionMvpd: String?
        public var sessionNotAfterMs: Int64?
        public var decisions: [Decision]
        /// Answer counters by outcome and code, as `auth.list` shows them.
        public var counters: JSONValue

        public var isAuthenticated: Bool { sessionState == "authenticated" }

        public var configurationJSON: JSONValue {
            var configuration: JSONObject = ["state": .string(configurationState.rawValue)]
            if let configuredAtMs { configuration["configuredAt"] = .integer(configuredAtMs) }
            if configurationState == .configured { configuration["mvpds"] = .array(mvpds.map { .string($0) }) }
            if let configurationAttempts { configuration["attempts"] = .integer(Int64(configurationAttempts)) }
            if let configurationError { configuration["lastError"] = .string(configurationError) }
            return .object(configuration)
        }

        public var sessionJSON: JSONValue {
            var session: JSONObject = ["state": .string(sessionState)]
            if let sessionMvpd { session["mvpd"] = .string(sessionMvpd) }
            if let sessionNotAfterMs { session["notAfter"] = .integer(sessionNotAfterMs) }
            return .object(session)
        }

        var json: JSONValue {
            [
                "configuration": configurationJSON,
                "session": sessionJSON,
                "decisions": .array(
                    decisions.map {
                        ["mvpd": .string($0.mvpd), "resource": .string($0.resource), "ageMs": .integer($0.ageMs)]
                    }
                ),
                "counters": counters,
            ]
        }
    }

    public var serverURL: String
    public var upstream: UpstreamHealth
    public var registration: RegistrationState
    public var registeredAtMs: Int64?
    public var token: TokenState
    public var tokenExpiresAtMs: Int64?
    public var tokenExpiresInMs: Int64?
    public var burstRemaining: Int
    public var blockedForMs: Int64?
    /// In `pass.requestors` order; a requestor the agent holds no state for yet is left out.
    public var requestors: [Requestor]
    public var unknownRequestorAnswers: Int

    /// `auth.list`'s result (docs/PROTOCOL.md), member for member.
    public var json: JSONValue {
        var root: JSONObject = ["serverURL": .string(serverURL)]
        root["upstream"] = upstream.json
        var registration: JSONObject = ["state": .string(self.registration.rawValue)]
        if let registeredAtMs { registration["registeredAt"] = .integer(registeredAtMs) }
        root["registration"] = .object(registration)
        var token: JSONObject = ["state": .string(self.token.rawValue)]
        if let tokenExpiresAtMs { token["expiresAt"] = .integer(tokenExpiresAtMs) }
        if let tokenExpiresInMs { token["expiresInMs"] = .integer(tokenExpiresInMs) }
        root["accessToken"] = .object(token)
        var pacing: JSONObject = ["burstRemaining": .integer(Int64(burstRemaining))]
        if let blockedForMs { pacing["blockedForMs"] = .integer(blockedForMs) }
        root["pacing"] = .object(pacing)
        root["requestors"] = .object(JSONObject(requestors.map { (key: $0.name, value: $0.json) }))
        root["unknownRequestorAnswers"] = .integer(Int64(unknownRequestorAnswers))
        return .object(root)
    }
}
