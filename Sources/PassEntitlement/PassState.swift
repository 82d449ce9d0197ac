import PreflightCore

/// Everything the `Entitlement` shares between the agent's I/O thread and its tasks, behind one mutex.
struct PassState: Sendable {
    var configuration: PassConfiguration
    /// By requestor id, for the requestors in `configuration.requestors`.
    var requestors: [String: RequestorState]
    var cache = DecisionCache()
    /// Answers to requestors this box does not serve.
    var unknownRequestorAnswers = 0

    init(configuration: PassConfiguration) {
        self.configuration = configuration
        requestors = [:]
        for requestor in configuration.requestors {
            requestors[requestor] = RequestorState()
        }
    }
}

/// Whether a requestor's configuration has been retrieved.
enum ConfigurationState: Sendable, Hashable {
    case pending
    /// Wall-clock time of success, and the MVPDs it listed.
    case configured(atEpochMilliseconds: Int64, providers: [Provider])
}

/// What the agent knows of the authenticated session of the box for one requestor.
enum SessionState: Sendable, Hashable {
    /// Not asked yet, or forgotten (cleared, configuration reloaded).
    case unknown
    /// A profile, kept until its `notAfter`.
    case authenticated(AuthenticatedProfile)
    /// No profile, as of `checkedAt` (kept for `sessionRecheckInterval`).
    case missing(checkedAt: MonotonicInstant)
    /// The profile expired, as of `checkedAt` (kept for `sessionRecheckInterval`).
    case expired(mvpd: String?, checkedAt: MonotonicInstant)

    /// The name shown and published.
    var name: String {
        switch self {
        case .unknown: "unknown"
        case .authenticated: "authenticated"
        case .missing: "missing"
        case .expired: "expired"
        }
    }
}

/// Answer counters of one requestor, shown by `auth.list`.
public struct AnswerCounters: Sendable, Hashable {
    /// By outcome: `response`, `failure` (each there once counted).
    public internal(set) var outcomes: [String: Int] {
        get {
            var outcomes: [String: Int] = [:]
            if responses > 0 { outcomes["response"] = responses }
            if failures > 0 { outcomes["failure"] = failures }
            return outcomes
        }
        set {
            responses = newValue["response"] ?? 0
            failures = newValue["failure"] ?? 0
        }
    }
    /// Kept as two numbers, not a dictionary: a `preauthorize` answered from the cache counts one without
    /// hashing its outcome's name.
    private var responses = 0
    private var failures = 0
    /// By status code: the agent's codes, Adobe's top-level codes, and item-level error codes.
    public internal(set) var codes: [String: Int] = [:]
    public internal(set) var permitted = 0
    public internal(set) var denied = 0
    /// Decisions served from the decision cache.
    public internal(set) var fromCache = 0

    /// Counts one answer; `fromCache` is how many of its decisions came from the decision cache.
    mutating func record(_ answer: PreauthorizeAnswer, fromCache: Int) {
        if case .failure = answer { failures += 1 } else { responses += 1 }
        if let code = answer.statusCode { codes[code, default: 0] += 1 }
        if case .decisions(let decisions) = answer {
            for decision in decisions {
                if decision.authorized { permitted += 1 } else { denied += 1 }
                if let code = decision.error?.code { codes[code, default: 0] += 1 }
            }
        }
        self.fromCache += fromCache
    }
}

/// Per-requestor state.
struct RequestorState: Sendable {
    var configuration = ConfigurationState.pending
    /// The last configuration failure, for the admin view and the `requestor_not_configured` message.
    var configurationError: String?
    var configurationAttempts = 0
    var lastConfigurationAttempt: MonotonicInstant?
    /// When the background loop tries again after a failure.
    var nextConfigurationAttempt: MonotonicInstant?
    var session = SessionState.unknown
    var counters = AnswerCounters()

    /// The sign-in under way (a code shown to the user), kept in `pass-signin.json` across restarts.
    var signIn: PendingSignIn?
    /// When the watcher next looks at `signIn`.
    var signInPoll: SignInPoll?
    /// The provider the app chose (`setSelectedProvider`), kept in `pass-signin.json`.
    var selectedProvider: String?
    /// Playback permits from `getAuthorization`/`checkAuthorization`, by resource, until their `notAfter`.
    /// Never a media token: those go to the asking app only.
    var permits: [String: HeldPermit] = [:]

    var isConfigured: Bool {
        if case .configured = configuration { return true }
        return false
    }

    /// The MVPDs of the configuration, once retrieved.
    var providers: [Provider]? {
        if case .configured(_, let providers) = configuration { return providers }
        return nil
    }
}

/// An authorize permit the agent holds for `checkAuthorization`.
struct HeldPermit: Sendable, Hashable {
    var mvpd: String
    var source: String?
    /// Wall-clock milliseconds: Adobe's decision `notAfter`, else the media token's.
    var notAfter: Int64
}
