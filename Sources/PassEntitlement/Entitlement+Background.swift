import PreflightCore
import Synchronization

extension Entitlement {
    // MARK: Background

    /// The background work, until cancelled: keeping registration, token and configurations
    /// (`maintain`), and watching pending sign-ins and profile expiry (`watchSignIns`).
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.maintain() }
            group.addTask { await self.watchSignIns() }
        }
    }

    /// Registers (or loads the registration), gets a token and each requestor's configuration, retrying
    /// with back-off until they succeed, and renews the token before it expires. Runs until cancelled.
    func maintain() async {
        var tokenFailures = 0
        while !Task.isCancelled {
            let configuration = state.withLock { $0.configuration }
            if let circuit = upstream.circuit, circuit.state.isDown {
                // Adobe Pass is down: probe it when due; the work below waits until it answers.
                if circuit.probeDue { await probe(configuration) }
                if circuit.state.isDown {
                    let probeAt = circuit.state.nextProbeAt ?? clock.now() + .seconds(1)
                    // At least a second: a probe the access token's own back-off kept from calling leaves
                    // the probe due, and this loop must not spin on it.
                    await wakeUp.wait(timeout: max(probeAt - clock.now(), .seconds(1)), clock: clock)
                    continue
                }
                tokenFailures = 0
            }
            let now = clock.now()
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
            if let probeAt = upstream.circuit?.state.nextProbeAt { wakeAt = min(wakeAt, probeAt) }
            await wakeUp.wait(timeout: wakeAt - clock.now(), clock: clock)
        }
    }

    /// One call to see whether Adobe Pass answers again: a requestor's configuration (any answer will
    /// do), or, with no requestor, the access token.
    private func probe(_ configuration: PassConfiguration) async {
        let deadline = clock.now() + configuration.answerDeadline
        if let requestor = configuration.requestors.first {
            _ = await upstream.fetchConfiguration(requestor, deadline: deadline)
        } else {
            _ = await upstream.credentials.accessToken(using: upstream, deadline: deadline)
        }
    }
}
