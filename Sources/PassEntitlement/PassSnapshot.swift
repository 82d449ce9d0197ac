import PreflightCore

/// What the agent holds for Adobe Pass, as typed values: the agent writes it as `auth.list`'s JSON
/// (PassReplies.swift), and `status` and systemd's status line read the fields they need. No secret is in it.
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
        /// A sign-in under way: its provider (nil until the user picks one) and when its code expires. The
        /// code itself is not here: it is shown by `getAuthentication` and `auth.code` only.
        public var signInMvpd: String?
        public var signInNotAfterMs: Int64?
        public var selectedProvider: String?
        /// Playback permits held for `checkAuthorization`.
        public var permits = 0
        /// Answer counters by outcome and code.
        public var counters: AnswerCounters

        public var isAuthenticated: Bool { sessionState == "authenticated" }
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
}

extension Entitlement {
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
                    signInMvpd: requestorState.signIn?.mvpd,
                    signInNotAfterMs: requestorState.signIn?.notAfter,
                    selectedProvider: requestorState.selectedProvider,
                    permits: requestorState.permits.count,
                    counters: requestorState.counters
                )
                switch requestorState.configuration {
                case .configured(let at, let providers):
                    entry.configurationState = .configured
                    entry.configuredAtMs = at
                    entry.mvpds = providers.map(\.id)
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
