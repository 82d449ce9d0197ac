import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization

/// The box's DCR registration and its current access token.
///
/// One token request at a time, whoever asks: concurrent callers share it. The registration is read
/// from the state directory once, made (`POST /o/client/register`) only when there is none, it was
/// issued for another server or software statement, or the token endpoint calls the client invalid.
/// The token lives in memory only and is replaced before it expires; if replacing it fails while the
/// old one is still valid, the old one is used.
final class Credentials: Sendable {
    private struct State: Sendable {
        var registration: Registration?
        var registrationLoaded = false
        var token: AccessToken?
        /// After a failed attempt, callers get its failure (or the still valid old token) until then,
        /// instead of each spending a request on another attempt.
        var lastFailure: (failure: PassFailure, until: MonotonicInstant)?
        /// Bumped by `forgetRegistration` and `dropToken`, so a request begun before does not store its
        /// (stale) result afterwards, and the next caller does not join it. Token requests are shared per
        /// generation.
        var generation = 0
    }

    private enum Step: Sendable {
        case ready(AccessToken)
        case wait(SingleFlight<Int, Result<AccessToken, PassFailure>>.Flight)
        case failed(PassFailure)
    }

    /// How long a failed attempt stands before the next caller may try again.
    static let retrySpacing = Duration.seconds(2)

    private let state = Mutex(State())
    private let tokenRequests = SingleFlight<Int, Result<AccessToken, PassFailure>>()
    private let store: RegistrationStore
    private let logger: Logger

    init(store: RegistrationStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// A token to use now: the current one, or a new one (shared with concurrent callers).
    func accessToken(
        using upstream: PassUpstream,
        deadline: MonotonicInstant
    ) async -> Result<AccessToken, PassFailure> {
        let now = upstream.clock.now()
        let step: Step = state.withLock { state in
            if let token = state.token, now < token.refreshAt { return .ready(token) }
            let generation = state.generation
            if !tokenRequests.isRunning(generation), let lastFailure = state.lastFailure, now < lastFailure.until {
                if let token = state.token, now < token.expiresAt { return .ready(token) }
                return .failed(lastFailure.failure)
            }
            return .wait(
                tokenRequests.begin(generation) {
                    await self.obtain(using: upstream, deadline: deadline, generation: generation)
                }
            )
        }
        switch step {
        case .ready(let token):
            return .success(token)
        case .failed(let failure):
            return .failure(failure)
        case .wait(let request):
            let result = await request.value()
            if case .failure = result, let token = state.withLock({ $0.token }), upstream.clock.now() < token.expiresAt
            {
                return .success(token)
            }
            return result
        }
    }

    /// Forgets a token Adobe refused, unless it was replaced meanwhile.
    func invalidate(_ token: AccessToken) {
        state.withLock { state in
            if state.token?.value == token.value { state.token = nil }
        }
    }

    /// Forgets the token (the server or the software statement changed).
    func dropToken() {
        state.withLock { state in
            state.token = nil
            state.lastFailure = nil
            state.generation += 1
            state.registrationLoaded = false
        }
    }

    /// Forgets the registration, in memory and on disk; the next call registers anew. Whether there
    /// was one.
    @discardableResult
    func forgetRegistration() -> Bool {
        let had = state.withLock { state in
            let had = state.registration != nil
            state.registration = nil
            state.registrationLoaded = true
            state.token = nil
            state.lastFailure = nil
            state.generation += 1
            return had
        }
        var hadFile = false
        do {
            hadFile = try FileSystem.readFile(store.path) != nil
            try store.remove()
        } catch {
            logger.error("cannot remove the Adobe Pass registration file", metadata: ["error": "\(error)"])
        }
        return had || hadFile
    }

    /// When the run loop should get the next token, if there is one.
    var refreshAt: MonotonicInstant? { state.withLock { $0.token?.refreshAt } }

    /// For the admin view: whether a registration is held, when it was made, and the token's expiry.
    var status:
        (
            registered: Bool?, registeredAt: Int64?, tokenExpiresAt: Int64?,
            tokenExpiresAtInstant: MonotonicInstant?
        )
    {
        state.withLock { state in
            (
                state.registrationLoaded ? state.registration != nil : nil,
                state.registration?.registeredAt,
                state.token?.expiresAtEpochMilliseconds,
                state.token?.expiresAt
            )
        }
    }

    private func obtain(
        using upstream: PassUpstream,
        deadline: MonotonicInstant,
        generation: Int
    ) async -> Result<AccessToken, PassFailure> {
        let result = await registerAndRequestToken(using: upstream, deadline: deadline, generation: generation)
        let now = upstream.clock.now()
        state.withLock { state in
            guard state.generation == generation else { return }
            switch result {
            case .success(let token):
                state.token = token
                state.lastFailure = nil
            case .failure(let failure):
                state.lastFailure = (failure, now + Self.retrySpacing)
            }
        }
        switch result {
        case .success: logger.debug("got an Adobe Pass access token")
        case .failure(let failure) where Task.isCancelled:
            logger.debug("no Adobe Pass access token: the agent is stopping", metadata: ["reason": "\(failure)"])
        case .failure(let failure): logger.warning("no Adobe Pass access token", metadata: ["reason": "\(failure)"])
        }
        return result
    }

    private func registerAndRequestToken(
        using upstream: PassUpstream,
        deadline: MonotonicInstant,
        generation: Int
    ) async -> Result<AccessToken, PassFailure> {
        var registeredHere = false
        while true {
            let registration: Registration
            switch await currentRegistration(using: upstream, deadline: deadline, generation: generation) {
            case .success(let current):
                (registration, registeredHere) = (current.registration, registeredHere || current.isNew)
            case .failure(let failure): return .failure(failure)
            }
            switch await upstream.requestToken(registration, deadline: deadline) {
            case .success(let token):
                return .success(token)
            case .failure(.invalidClient) where !registeredHere:
                logger.warning("Adobe Pass no longer accepts this box's client; registering anew")
                state.withLock { state in
                    if state.generation == generation { state.registration = nil }
                }
                do { try store.remove() } catch {
                    logger.error("cannot remove the Adobe Pass registration file", metadata: ["error": "\(error)"])
                }
            case .failure(.invalidClient):
                return .failure(.accessTokenUnavailable("the token endpoint refuses a client registered just now"))
            case .failure(.failure(let failure)):
                return .failure(failure)
            }
        }
    }

    private func currentRegistration(
        using upstream: PassUpstream,
        deadline: MonotonicInstant,
        generation: Int
    ) async -> Result<(registration: Registration, isNew: Bool), PassFailure> {
        let configuration = upstream.settings.withLock { $0.configuration }
        let needsLoad = state.withLock { !$0.registrationLoaded }
        if needsLoad {
            let loaded = store.load(epochMilliseconds: upstream.clock.epochMilliseconds())
            state.withLock { state in
                if !state.registrationLoaded {
                    state.registration = loaded
                    state.registrationLoaded = true
                }
            }
        }
        let held = state.withLock { $0.registration }
        if let held {
            if held.isIssued(for: configuration) { return .success((held, false)) }
            logger.notice(
                "the Adobe Pass registration was made for another server or software statement; registering anew"
            )
        }
        guard !configuration.softwareStatement.isEmpty else {
            return .failure(
                .accessTokenUnavailable(
                    "no software statement is configured (\(PassConfigurationKey.softwareStatement.path))"
                )
            )
        }
        switch await upstream.register(deadline: deadline) {
        case .failure(let failure):
            return .failure(failure)
        case .success(let registration):
            let current = state.withLock { state in
                guard state.generation == generation else { return false }
                state.registration = registration
                return true
            }
            if current {
                do {
                    try store.save(registration)
                    logger.notice("registered this box with Adobe Pass", metadata: ["path": "\(store.path)"])
                } catch {
                    logger.error(
                        "registered with Adobe Pass but cannot keep the registration; it lasts until restart",
                        metadata: ["error": "\(error)"]
                    )
                }
            }
            return .success((registration, true))
        }
    }
}
