import PreflightCore
import Synchronization

extension Preauthorizer {
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
}
