import Logging
import PreflightCore
import Synchronization

extension Entitlement {
    // MARK: Requestor configuration

    /// The shortest spacing of configuration attempts that apps' `preauthorize` calls may cause.
    static let onDemandConfigurationInterval = Duration.seconds(2)

    /// Nil when the requestor is configured (fetching its configuration now if it is not and no attempt
    /// was made in the last `onDemandConfigurationInterval`); otherwise `requestor_not_configured`.
    func ensureConfigured(_ requestor: String, deadline: MonotonicInstant) async -> PassFailure? {
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
    func configure(_ requestor: String, deadline: MonotonicInstant) async {
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
                    requestorState.configuration = .configured(
                        atEpochMilliseconds: epoch,
                        providers: configuration.providers
                    )
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
}
