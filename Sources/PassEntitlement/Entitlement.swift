import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import UpstreamHTTP

/// The agent's Adobe Pass side: the box's one entitlement for every app of the requestors it serves, on
/// DCR and REST API v2 with the AccessEnabler's names (PROTOCOL.md): `preauthorize` from its decision
/// cache or Adobe, the second-screen sign-in (`getAuthentication`, kept across restarts), playback
/// authorization with media tokens, logout, metadata and provider choice. It keeps what that needs (DCR
/// registration, access token, requestor configurations, authenticated profiles, permit decisions, the
/// pending sign-in); never a media token.
///
/// Threading: `cachedResponse(for:)`, `snapshot()`, `clear(requestor:registration:)`,
/// `cancelAuthentication(requestor:)` and `update(configuration:)` are synchronous and only take a mutex,
/// so the agent's I/O thread may call them. The other answers and `run()` are async and wait on the network.
///
/// Events (through `publish`): `auth.decisions` (requestor, mvpd, permitted, denied, source `cache` or
/// `network`, fromCache), `auth.session` (requestor, state `authenticated` with mvpd and notAfter,
/// `missing`, `expired`), `auth.code`, `auth.authenticated`, `auth.failed`, `auth.logout`, `upstream.error`
/// (service `pass`, operation, status, code). No event, log line or snapshot ever holds the software
/// statement, the client secret, an access token or a media token; a registration code only `auth.code`.
public final class Entitlement: Sendable {
    let state: Mutex<PassState>
    let upstream: PassUpstream
    /// Whether Adobe Pass answers at all (status); nil without a breaking transport (tests).
    public var circuit: CircuitBreaker? { upstream.circuit }
    let batcher: DecisionBatcher
    let configurations = SingleFlight<String, UpstreamResult<RequestorConfiguration>>()
    let sessions = SingleFlight<String, UpstreamResult<AuthenticatedProfile>>()
    /// Concurrent `getAuthentication`s of one requestor share one `POST sessions`.
    let signIns = SingleFlight<String, SignInAnswer>()
    let wakeUp = WakeSignal()
    /// Wakes the sign-in watcher: a new code, a reload.
    let signInWake = WakeSignal()
    let signInStore: SignInStore
    /// Serializes writes of `signInStore`.
    let saving = Mutex(())
    let clock: any AgentClock
    let logger: Logger
    let publish: EventPublisher
    let stateDirectory: String

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
        publish: EventPublisher
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
                .upstreamError,
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
        self.signInStore = SignInStore(directory: stateDirectory, logger: logger)
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
        // Apps' calls may be what finds Adobe Pass gone: the background loop sleeps until its next
        // renewal, so wake it to probe.
        if upstream.circuit?.state.isDown == true { wakeUp.signal() }
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
        let found: (mvpd: String, decisions: [ResourceDecision])? = state.withLock { state in
            // The requestor found once, its state read and counted in place (`values[index]`): through
            // `requestors[requestor]?` it was copied out to be read, and moved out and back to be counted.
            guard let index = state.requestors.index(forKey: command.requestor),
                case .authenticated(let profile) = state.requestors.values[index].session,
                profile.isValid(atEpochMilliseconds: epoch)
            else { return nil }
            let ttl = state.configuration.decisionTTL
            var decisions: [ResourceDecision] = []
            decisions.reserveCapacity(command.resources.count)
            for resource in command.resources {
                let key = DecisionCache.Key(requestor: command.requestor, mvpd: profile.mvpd, resource: resource)
                guard let permit = state.cache.freshPermit(key, now: now, ttl: ttl) else { return nil }
                decisions.append(permit)
            }
            state.requestors.values[index].counters.record(.decisions(decisions), fromCache: decisions.count)
            return (profile.mvpd, decisions)
        }
        guard let (mvpd, decisions) = found else { return nil }
        publishDecisions(
            requestor: command.requestor,
            mvpd: mvpd,
            decisions: decisions,
            source: "cache",
            fromCache: decisions.count
        )
        return .decisions(decisions)
    }

    private func decide(_ command: PreauthorizeCommand, deadline: MonotonicInstant) async -> Decided {
        let requestor = command.requestor
        if let failure = await ensureConfigured(requestor, deadline: deadline) {
            return Decided(answer: .failure(failure))
        }
        let profile: AuthenticatedProfile
        let fresh = command.disabledFeatures.contains(.localCache)
        switch await session(for: requestor, deadline: deadline, fresh: fresh) {
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
                    if let permit = state.cache.freshPermit(key, now: now, ttl: ttl) {
                        permits[resource] = permit
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
            known[$0] ?? ResourceDecision(resource: $0, authorized: false)
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
                    state.cache.storePermit(key, source: decision.source, now: now)
                } else {
                    state.cache.remove(key)
                }
            }
        }
    }

    private func publishDecisions(
        requestor: String,
        mvpd: String,
        decisions: [ResourceDecision],
        source: String,
        fromCache: Int
    ) {
        publish(.authDecisions, Self.decisionsEvent(requestor, mvpd, decisions, source, fromCache))
    }

    private static func decisionsEvent(
        _ requestor: String,
        _ mvpd: String,
        _ decisions: [ResourceDecision],
        _ source: String,
        _ fromCache: Int
    ) -> JSONObject {
        let permitted = decisions.count(where: \.authorized)
        return [
            "requestor": .string(requestor), "mvpd": .string(mvpd), "permitted": .integer(Int64(permitted)),
            "denied": .integer(Int64(decisions.count - permitted)), "source": .string(source),
            "fromCache": .integer(Int64(fromCache)),
        ]
    }
}
