import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import UpstreamHTTP

/// The agent's Adobe Pass side: answers `preauthorize` (PROTOCOL.md) for the requestors this box serves,
/// from its decision cache or from Adobe Pass REST API v2, and keeps what that needs (DCR registration,
/// access token, requestor configurations, authenticated profiles, permit decisions).
///
/// Threading: `cachedResponse(for:)`, `snapshot()`, `clear(requestor:registration:)` and
/// `update(configuration:)` are synchronous and only take a mutex, so the agent's I/O thread may call
/// them. `preauthorize(_:)` and `run()` are async and wait on the network.
///
/// Events (through `publish`): `auth.decisions` (requestor, mvpd, permitted, denied, source `cache` or
/// `network`, fromCache), `auth.session` (requestor, state `authenticated` with mvpd and notAfter,
/// `missing`, `expired`), `upstream.error` (service `pass`, operation, status, code). No event, log line
/// or snapshot ever holds the software statement, the client secret or an access token.
public final class Preauthorizer: Sendable {
    let state: Mutex<PassState>
    let upstream: PassUpstream
    let batcher: DecisionBatcher
    private let configurations = SingleFlight<String, UpstreamResult<RequestorConfiguration>>()
    private let sessions = SingleFlight<String, UpstreamResult<AuthenticatedProfile>>()
    private let wakeUp = WakeSignal()
    let clock: any AgentClock
    private let logger: Logger
    private let publish: @Sendable (_ topic: String, _ body: JSONObject) -> Void
    private let stateDirectory: String

    /// The shortest spacing of configuration attempts that apps' `preauthorize` calls may cause.
    static let onDemandConfigurationInterval = Duration.seconds(2)

    /// - Parameters:
    ///   - configuration: the `pass.*` configuration.
    ///   - transport: how requests reach Adobe Pass (AsyncHTTPClient in the agent, a fake in tests).
    ///   - stateDirectory: where `pass-registration.json` (mode 0600) is kept across restarts.
    ///   - clock: monotonic and wall time, and sleeping; `SystemClock()` in the agent.
    ///   - logger: the agent's logger; this module never makes one.
    ///   - publish: sends an event (topic, JSON body) to subscribers; called from any thread, never under
    ///     a lock of this type.
    public init(
        configuration: PassConfiguration,
        transport: any HTTPTransport,
        stateDirectory: String,
        clock: any AgentClock = SystemClock(),
        logger: Logger,
        publish: @escaping @Sendable (_ topic: String, _ body: JSONObject) -> Void
    ) {
        let device = DeviceIdentity.resolve(configuration, stateDirectory: stateDirectory, logger: logger)
        let credentials = Credentials(
            store: RegistrationStore(directory: stateDirectory, logger: logger),
            logger: logger
        )
        let upstream = PassUpstream(
            transport: transport,
            settings: UpstreamSettings(configuration: configuration, device: device),
            credentials: credentials,
            clock: clock,
            logger: logger
        ) { operation, status, code in
            publish(
                "upstream.error",
                [
                    "service": "pass", "operation": .string(operation.rawValue), "status": .integer(Int64(status)),
                    "code": .string(code),
                ]
            )
        }
        self.state = Mutex(PassState(configuration: configuration))
        self.upstream = upstream
        self.batcher = DecisionBatcher(upstream: upstream)
        self.clock = clock
        self.logger = logger
        self.publish = publish
        self.stateDirectory = stateDirectory
    }

    // MARK: Answering

    /// The complete answer when the decision cache alone can answer: LOCAL_CACHE is not disabled, the
    /// requestor's profile is current, and every requested resource has a fresh permit. Nil otherwise.
    /// Cheap and non-blocking (one mutex), for the agent's I/O thread.
    public func cachedResponse(for command: PreauthorizeCommand) -> PreauthorizeAnswer? {
        cachedAnswer(for: command)
    }

    /// The answer to a `preauthorize` (PROTOCOL.md's outcome `response` or `failure`), within
    /// `answerDeadline` whatever Adobe does.
    public func preauthorize(_ command: PreauthorizeCommand) async -> PreauthorizeAnswer {
        if let cached = cachedAnswer(for: command) { return cached }
        let requestor = command.requestor
        let answerDeadline: Duration? = state.withLock { state in
            guard state.requestors[requestor] != nil else {
                state.unknownRequestorAnswers += 1
                return nil
            }
            return state.configuration.answerDeadline
        }
        guard let answerDeadline else { return .failure(.requestorNotOnThisBox(requestor)) }
        let decided = await decide(command, deadline: clock.now() + answerDeadline)
        state.withLock { state in
            state.requestors[requestor]?.counters.record(decided.answer, fromCache: decided.fromCache)
        }
        if case .decisions(let decisions) = decided.answer, let mvpd = decided.mvpd {
            publishDecisions(
                requestor: requestor,
                mvpd: mvpd,
                decisions: decisions,
                source: decided.fromCache == decisions.count ? "cache" : "network",
                fromCache: decided.fromCache
            )
        }
        logger.debug(
            "preauthorize answered",
            metadata: [
                "requestor": "\(requestor)", "outcome": "\(decided.answer.outcome)",
                "code": "\(decided.answer.statusCode ?? "-")",
            ]
        )
        return decided.answer
    }

    private struct Decided {
        var answer: PreauthorizeAnswer
        var mvpd: String?
        /// How many of the answer's decisions came from the cache.
        var fromCache = 0
    }

    private func cachedAnswer(for command: PreauthorizeCommand) -> PreauthorizeAnswer? {
        guard !command.disabledFeatures.contains(.localCache), !command.resources.isEmpty else { return nil }
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let decisions = command.resources.map { ResourceDecision(resource: $0, authorized: true, error: nil) }
        let answer = PreauthorizeAnswer.decisions(decisions)
        let mvpd: String? = state.withLock { state in
            guard case .authenticated(let profile)? = state.requestors[command.requestor]?.session,
                profile.isValid(atEpochMilliseconds: epoch)
            else { return nil }
            let ttl = state.configuration.decisionTTL
            for resource in command.resources {
                let key = DecisionCache.Key(requestor: command.requestor, mvpd: profile.mvpd, resource: resource)
                guard state.cache.isFreshPermit(key, now: now, ttl: ttl) else { return nil }
            }
            state.requestors[command.requestor]?.counters.record(answer, fromCache: decisions.count)
            return profile.mvpd
        }
        guard let mvpd else { return nil }
        publishDecisions(
            requestor: command.requestor,
            mvpd: mvpd,
            decisions: decisions,
            source: "cache",
            fromCache: decisions.count
        )
        return answer
    }

    private func decide(_ command: PreauthorizeCommand, deadline: ContinuousClock.Instant) async -> Decided {
        let requestor = command.requestor
        if let failure = await ensureConfigured(requestor, deadline: deadline) {
            return Decided(answer: .failure(failure))
        }
        let profile: AuthenticatedProfile
        switch await session(for: requestor, deadline: deadline) {
        case .success(let current): profile = current
        case .adobeError(let status): return Decided(answer: .adobeError(status))
        case .failure(let failure): return Decided(answer: .failure(failure))
        }

        let now = clock.now()
        var known: [String: ResourceDecision] = [:]
        if !command.disabledFeatures.contains(.localCache) {
            known = state.withLock { state in
                var permits: [String: ResourceDecision] = [:]
                let ttl = state.configuration.decisionTTL
                for resource in command.resources {
                    let key = DecisionCache.Key(requestor: requestor, mvpd: profile.mvpd, resource: resource)
                    if state.cache.isFreshPermit(key, now: now, ttl: ttl) {
                        permits[resource] = ResourceDecision(resource: resource, authorized: true, error: nil)
                    }
                }
                return permits
            }
        }
        let fromCache = command.resources.count(where: { known[$0] != nil })

        var needed: [String] = []
        var seen: Set<String> = []
        for resource in command.resources where known[resource] == nil && seen.insert(resource).inserted {
            needed.append(resource)
        }
        if !needed.isEmpty {
            let key = DecisionBatcher.Key(
                requestor: requestor,
                mvpd: profile.mvpd,
                bypassRemoteCache: command.disabledFeatures.contains(.remoteCache)
            )
            let limit = state.withLock { $0.configuration.maxResourcesPerRequest }
            let outcomes = await batcher.decide(needed, key: key, limit: limit, deadline: deadline)
            var fresh: [ResourceDecision] = []
            var firstProblem: PreauthorizeAnswer?
            for resource in needed {
                switch outcomes[resource] ?? .failure(.networkError("no upstream call decided \(resource)")) {
                case .success(let decisions):
                    if let decision = decisions[resource] {
                        fresh.append(decision)
                        known[resource] = decision
                    }
                case .adobeError(let status):
                    if firstProblem == nil { firstProblem = .adobeError(status) }
                case .failure(let failure):
                    if firstProblem == nil { firstProblem = .failure(failure) }
                }
            }
            remember(fresh, requestor: requestor, profile: profile)
            if case .adobeError(let status)? = firstProblem, let code = status.code {
                noteSessionProblem(code, requestor: requestor, profile: profile)
            }
            if let firstProblem { return Decided(answer: firstProblem, mvpd: profile.mvpd) }
            if let code = fresh.lazy.compactMap({ $0.error?.code }).first(where: {
                $0.hasPrefix("authenticated_profile_")
            }) {
                noteSessionProblem(code, requestor: requestor, profile: profile)
            }
        }
        let decisions = command.resources.map {
            known[$0] ?? ResourceDecision(resource: $0, authorized: false, error: nil)
        }
        return Decided(answer: .decisions(decisions), mvpd: profile.mvpd, fromCache: fromCache)
    }

    /// Caches fresh permits and forgets cached entries a fresh answer no longer permits; only while the
    /// profile they were asked under is still the current one.
    private func remember(_ decisions: [ResourceDecision], requestor: String, profile: AuthenticatedProfile) {
        guard !decisions.isEmpty else { return }
        let now = clock.now()
        state.withLock { state in
            guard case .authenticated(profile)? = state.requestors[requestor]?.session else { return }
            for decision in decisions {
                let key = DecisionCache.Key(requestor: requestor, mvpd: profile.mvpd, resource: decision.resource)
                if decision.isCacheablePermit {
                    state.cache.storePermit(key, now: now)
                } else {
                    state.cache.remove(key)
                }
            }
        }
    }

    // MARK: Requestor configuration

    /// Nil when the requestor is configured (fetching its configuration now if it is not and no attempt
    /// was made in the last `onDemandConfigurationInterval`); otherwise `requestor_not_configured`.
    private func ensureConfigured(_ requestor: String, deadline: ContinuousClock.Instant) async -> PassFailure? {
        let now = clock.now()
        let (configured, triedRecently) = state.withLock { state -> (Bool, Bool) in
            guard let requestorState = state.requestors[requestor] else { return (false, true) }
            let recent = requestorState.lastConfigurationAttempt.map { now - $0 < Self.onDemandConfigurationInterval }
            return (requestorState.isConfigured, recent ?? false)
        }
        if configured { return nil }
        if !triedRecently || configurations.isRunning(requestor) {
            await configure(requestor, deadline: deadline)
        }
        return state.withLock { state in
            guard let requestorState = state.requestors[requestor] else { return .requestorNotOnThisBox(requestor) }
            if requestorState.isConfigured { return nil }
            return .requestorNotConfigured(requestor, lastError: requestorState.configurationError)
        }
    }

    /// `GET /configuration` for one requestor, shared by concurrent askers, with the result recorded.
    private func configure(_ requestor: String, deadline: ContinuousClock.Instant) async {
        _ = await configurations.run(requestor) { [self] in
            state.withLock { $0.requestors[requestor]?.lastConfigurationAttempt = clock.now() }
            let result = await upstream.fetchConfiguration(requestor, deadline: deadline)
            let now = clock.now()
            let epoch = clock.epochMilliseconds()
            let problem: String? =
                switch result {
                case .success: nil
                case .adobeError(let status): "HTTP \(status.status ?? 0) \(status.code ?? "error")"
                case .failure(let failure): failure.description
                }
            state.withLock { state in
                guard var requestorState = state.requestors[requestor] else { return }
                if case .success(let configuration) = result {
                    requestorState.configuration = .configured(atEpochMilliseconds: epoch, mvpds: configuration.mvpds)
                    requestorState.configurationError = nil
                    requestorState.configurationAttempts = 0
                    requestorState.nextConfigurationAttempt = nil
                } else {
                    requestorState.configurationError = problem
                    requestorState.configurationAttempts += 1
                    requestorState.nextConfigurationAttempt =
                        now + Self.retryBackoff.delay(attempt: requestorState.configurationAttempts)
                }
                state.requestors[requestor] = requestorState
            }
            if let problem {
                logger.warning(
                    "cannot retrieve the requestor configuration",
                    metadata: ["requestor": "\(requestor)", "reason": "\(problem)"]
                )
            } else {
                logger.info("requestor configured", metadata: ["requestor": "\(requestor)"])
            }
            return result
        }
    }

    /// After failures to configure a requestor or to get a token: 1 s, 2 s, 4 s … up to a minute.
    static let retryBackoff = Backoff(base: .seconds(1), doublings: 6, cap: .seconds(60))

    // MARK: Authentication session

    /// The requestor's current profile: from memory while before its `notAfter`; missing or expired
    /// from memory for `sessionRecheckInterval` after a lookup found so; otherwise from
    /// `GET /profiles` (shared by concurrent askers).
    private func session(
        for requestor: String,
        deadline: ContinuousClock.Instant
    ) async -> UpstreamResult<AuthenticatedProfile> {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let known: UpstreamResult<AuthenticatedProfile>? = state.withLock { state in
            guard let requestorState = state.requestors[requestor] else {
                return .failure(.requestorNotOnThisBox(requestor))
            }
            let recheck = state.configuration.sessionRecheckInterval
            switch requestorState.session {
            case .authenticated(let profile) where profile.isValid(atEpochMilliseconds: epoch):
                return .success(profile)
            case .missing(let checkedAt) where now - checkedAt < recheck:
                return .failure(.authenticationSessionMissing)
            case .expired(_, let checkedAt) where now - checkedAt < recheck:
                return .failure(.authenticationSessionExpired)
            default:
                return nil
            }
        }
        if let known { return known }
        return await sessions.run(requestor) { [self] in
            switch await upstream.fetchProfiles(requestor, deadline: deadline) {
            case .success(let profiles): return applyProfiles(profiles, requestor: requestor)
            case .adobeError(let status): return .adobeError(status)
            case .failure(let failure): return .failure(failure)
            }
        }
    }

    /// Takes the profiles Adobe listed as the requestor's session: the valid one with the latest
    /// `notAfter`; else expired (a listed profile, or the one we held, is past `notAfter`) or missing.
    /// Decisions go whenever the profile changes or goes.
    private func applyProfiles(
        _ profiles: [AuthenticatedProfile],
        requestor: String
    ) -> UpstreamResult<AuthenticatedProfile> {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let valid = profiles.filter { $0.isValid(atEpochMilliseconds: epoch) }.max { $0.notAfter < $1.notAfter }
        let (result, event): (UpstreamResult<AuthenticatedProfile>, JSONObject?) = state.withLock { state in
            guard let previous = state.requestors[requestor]?.session else {
                return (.failure(.requestorNotOnThisBox(requestor)), nil)
            }
            let next: SessionState
            let result: UpstreamResult<AuthenticatedProfile>
            if let valid {
                next = .authenticated(valid)
                result = .success(valid)
            } else {
                var expiredMvpd: String??
                if let lapsed = profiles.max(by: { $0.notAfter < $1.notAfter }) {
                    expiredMvpd = .some(lapsed.mvpd)
                } else if case .authenticated(let held) = previous, !held.isValid(atEpochMilliseconds: epoch) {
                    expiredMvpd = .some(held.mvpd)
                } else if case .expired(let mvpd, _) = previous {
                    expiredMvpd = .some(mvpd)
                }
                if let expiredMvpd {
                    next = .expired(mvpd: expiredMvpd, checkedAt: now)
                    result = .failure(.authenticationSessionExpired)
                } else {
                    next = .missing(checkedAt: now)
                    result = .failure(.authenticationSessionMissing)
                }
            }
            if case .authenticated(let held) = previous, next != .authenticated(held) {
                state.cache.drop(requestor: requestor)
            }
            state.requestors[requestor]?.session = next
            return (result, Self.sessionEvent(requestor: requestor, from: previous, to: next))
        }
        if let event { publish("auth.session", event) }
        return result
    }

    /// Adobe said the profile is gone (`authenticated_profile_missing`, `_invalidated`, `_expired`,
    /// top level or per decision): forget the profile and its decisions.
    private func noteSessionProblem(_ code: String, requestor: String, profile: AuthenticatedProfile) {
        guard code.hasPrefix("authenticated_profile_") else { return }
        let now = clock.now()
        let next: SessionState =
            code == "authenticated_profile_expired"
            ? .expired(mvpd: profile.mvpd, checkedAt: now) : .missing(checkedAt: now)
        let event: JSONObject? = state.withLock { state in
            guard let previous = state.requestors[requestor]?.session, previous == .authenticated(profile) else {
                return nil
            }
            state.requestors[requestor]?.session = next
            state.cache.drop(requestor: requestor)
            return Self.sessionEvent(requestor: requestor, from: previous, to: next)
        }
        if let event { publish("auth.session", event) }
    }

    private static func sessionEvent(
        requestor: String,
        from previous: SessionState,
        to next: SessionState
    ) -> JSONObject? {
        var body: JSONObject = ["requestor": .string(requestor), "state": .string(next.name)]
        switch next {
        case .unknown:
            return nil
        case .authenticated(let profile):
            if previous == next { return nil }
            body["mvpd"] = .string(profile.mvpd)
            body["notAfter"] = .integer(profile.notAfter)
        case .missing:
            if case .missing = previous { return nil }
        case .expired(let mvpd, _):
            if case .expired = previous { return nil }
            if let mvpd { body["mvpd"] = .string(mvpd) }
        }
        return body
    }

    private func publishDecisions(
        requestor: String,
        mvpd: String,
        decisions: [ResourceDecision],
        source: String,
        fromCache: Int
    ) {
        let permitted = decisions.count(where: \.authorized)
        publish(
            "auth.decisions",
            [
                "requestor": .string(requestor), "mvpd": .string(mvpd), "permitted": .integer(Int64(permitted)),
                "denied": .integer(Int64(decisions.count - permitted)), "source": .string(source),
                "fromCache": .integer(Int64(fromCache)),
            ]
        )
    }

    // MARK: Background

    /// Registers (or loads the registration), gets a token and each requestor's configuration, retrying
    /// with back-off until they succeed, and renews the token before it expires. Runs until cancelled.
    public func run() async {
        var tokenFailures = 0
        while !Task.isCancelled {
            let now = clock.now()
            let configuration = state.withLock { $0.configuration }
            var wakeAt = now + .seconds(3600)
            switch await upstream.credentials.accessToken(using: upstream, deadline: now + configuration.answerDeadline)
            {
            case .success(let token) where token.refreshAt > clock.now():
                tokenFailures = 0
                wakeAt = min(wakeAt, token.refreshAt)
                let due = state.withLock { state in
                    configuration.requestors.filter { requestor in
                        guard let requestorState = state.requestors[requestor], !requestorState.isConfigured else {
                            return false
                        }
                        return (requestorState.nextConfigurationAttempt ?? now) <= now
                    }
                }
                for requestor in due where !Task.isCancelled {
                    await configure(requestor, deadline: clock.now() + configuration.answerDeadline)
                }
                let retryAt = state.withLock { state in
                    state.requestors.values.filter { !$0.isConfigured }.compactMap(\.nextConfigurationAttempt).min()
                }
                if let retryAt { wakeAt = min(wakeAt, retryAt) }
            case .success, .failure:
                // No token, or renewing it failed while the old one still works: try again later.
                tokenFailures += 1
                wakeAt = clock.now() + Self.retryBackoff.delay(attempt: tokenFailures)
            }
            if Task.isCancelled { break }
            await wakeUp.wait(timeout: wakeAt - clock.now(), clock: clock)
        }
    }

    // MARK: Administration

    /// Applies a reloaded configuration. Tokens, registration, profiles and decisions stay where still
    /// valid: a new server drops everything but the registration file (which is then replaced at the
    /// next call); a new software statement drops the token; a new device id drops profiles and
    /// decisions; requestors no longer served are forgotten and new ones are configured in the background.
    public func update(configuration: PassConfiguration) {
        let device = DeviceIdentity.resolve(configuration, stateDirectory: stateDirectory, logger: logger)
        let previous = upstream.settings.withLock { settings in
            let previous = settings
            settings = UpstreamSettings(configuration: configuration, device: device)
            return previous
        }
        upstream.pacer.withLock { $0.update(configuration.pacing) }
        let serverChanged = previous.configuration.baseURL != configuration.baseURL
        let statementChanged = previous.configuration.softwareStatement != configuration.softwareStatement
        let deviceChanged = previous.device.identifierHeader != device.identifierHeader
        state.withLock { state in
            let removed = state.configuration.requestors.filter { !configuration.requestors.contains($0) }
            state.configuration = configuration
            var requestors: [String: RequestorState] = [:]
            for requestor in configuration.requestors {
                var requestorState = state.requestors[requestor] ?? RequestorState()
                if serverChanged {
                    requestorState.configuration = .pending
                    requestorState.configurationError = nil
                    requestorState.configurationAttempts = 0
                    requestorState.nextConfigurationAttempt = nil
                    requestorState.lastConfigurationAttempt = nil
                }
                if serverChanged || deviceChanged { requestorState.session = .unknown }
                requestors[requestor] = requestorState
            }
            state.requestors = requestors
            if serverChanged || deviceChanged {
                state.cache.drop(requestor: nil)
            } else {
                for requestor in removed { state.cache.drop(requestor: requestor) }
            }
        }
        if serverChanged || statementChanged { upstream.credentials.dropToken() }
        wakeUp.signal()
        logger.info(
            "Adobe Pass configuration applied",
            metadata: [
                "requestors": "\(configuration.requestors.count)", "serverChanged": "\(serverChanged)",
                "deviceChanged": "\(deviceChanged)",
            ]
        )
    }

    /// Drops profiles and decisions of one requestor (or all with nil), and with `registration: true`
    /// also the DCR registration (in memory and on disk) and the token. Returns what went.
    public func clear(requestor: String?, registration: Bool) -> ClearedPassState {
        let (profiles, decisions) = state.withLock { state -> (Int, Int) in
            var profiles = 0
            for (name, requestorState) in state.requestors where requestor == nil || name == requestor {
                if case .authenticated = requestorState.session { profiles += 1 }
                state.requestors[name]?.session = .unknown
            }
            return (profiles, state.cache.drop(requestor: requestor))
        }
        let registrationCleared = registration && upstream.credentials.forgetRegistration()
        logger.notice(
            "Adobe Pass state cleared",
            metadata: [
                "requestor": "\(requestor ?? "*")", "profiles": "\(profiles)", "decisions": "\(decisions)",
                "registration": "\(registrationCleared)",
            ]
        )
        return ClearedPassState(
            requestor: requestor,
            profiles: profiles,
            decisions: decisions,
            registration: registrationCleared
        )
    }
}

/// What `Preauthorizer.clear(requestor:registration:)` dropped: the answer to `auth.clear`.
public struct ClearedPassState: Sendable, Hashable {
    /// The requestor cleared, or nil for all of them.
    public let requestor: String?
    /// How many authenticated profiles went.
    public let profiles: Int
    /// How many cached decisions went.
    public let decisions: Int
    /// Whether a DCR registration went.
    public let registration: Bool
}
