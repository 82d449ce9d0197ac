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

extension Preauthorizer {
    /// The admin view (no secrets): registration and token expiry, pacing, and per requestor the
    /// configuration state and last error, the session (mvpd, notAfter), cached decisions with their
    /// age, and answer counters by outcome and code. Times are wall-clock epoch milliseconds; ages and
    /// remaining times are milliseconds.
    public func snapshot() -> PassSnapshot {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let credentials = upstream.credentials.status
        let pacer = upstream.pacer.withLock { $0 }
        let health = upstream.health.withLock { $0 }
        return state.withLock { state in
            var tokenState = PassSnapshot.TokenState.none
            var expiresInMs: Int64?
            if credentials.tokenExpiresAt != nil, let expiry = credentials.tokenExpiresAtInstant {
                tokenState = now < expiry ? .valid : .expired
                expiresInMs = max(0, (expiry - now).wholeMilliseconds)
            }
            let ttl = state.configuration.decisionTTL
            let requestors = state.configuration.requestors.compactMap { requestor -> PassSnapshot.Requestor? in
                guard let requestorState = state.requestors[requestor] else { return nil }
                var entry = PassSnapshot.Requestor(
                    name: requestor,
                    configurationState: requestorState.configurationError == nil ? .pending : .failed,
                    mvpds: [],
                    configurationError: requestorState.configurationError,
                    sessionState: requestorState.session.name,
                    decisions: state.cache.entries(requestor: requestor, now: now).filter { $0.age < ttl }.map {
                        PassSnapshot.Requestor.Decision(
                            mvpd: $0.mvpd,
                            resource: $0.resource,
                            ageMs: $0.age.wholeMilliseconds
                        )
                    },
                    counters: requestorState.counters.json
                )
                switch requestorState.configuration {
                case .configured(let at, let mvpds):
                    entry.configurationState = .configured
                    entry.configuredAtMs = at
                    entry.mvpds = mvpds
                case .pending:
                    entry.configurationAttempts = requestorState.configurationAttempts
                }
                switch requestorState.session {
                case .authenticated(let profile):
                    entry.sessionMvpd = profile.mvpd
                    entry.sessionNotAfterMs = profile.notAfter
                    if !profile.isValid(atEpochMilliseconds: epoch) { entry.sessionState = "expired" }
                case .expired(let mvpd, _):
                    entry.sessionMvpd = mvpd
                case .missing, .unknown:
                    break
                }
                return entry
            }
            return PassSnapshot(
                serverURL: state.configuration.baseURL,
                upstream: health,
                registration: credentials.registered.map { $0 ? .registered : .none } ?? .notLoaded,
                registeredAtMs: credentials.registeredAt,
                token: tokenState,
                tokenExpiresAtMs: tokenState == .none ? nil : credentials.tokenExpiresAt,
                tokenExpiresInMs: expiresInMs,
                burstRemaining: pacer.burstRemaining,
                blockedForMs: pacer.blockedUntil.flatMap { $0 > now ? ($0 - now).wholeMilliseconds : nil },
                requestors: requestors,
                unknownRequestorAnswers: state.unknownRequestorAnswers
            )
        }
    }
}
