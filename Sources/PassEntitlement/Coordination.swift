import PreflightCore
import Synchronization

/// Wakes the background loop early (a reloaded configuration, an app asking for a requestor that is not
/// configured yet). A signal given while nobody waits is kept for the next wait.
final class WakeSignal: Sendable {
    private struct State: Sendable {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return CheckedContinuation<Void, Never>?.none
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at a signal, after `timeout` on `clock`, or when the task is cancelled.
    func wait(timeout: Duration, clock: any AgentClock) async {
        guard timeout > .zero else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await clock.sleep(for: timeout) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                let waiter = state.waiter
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
