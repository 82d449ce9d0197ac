import Synchronization

/// At most one running operation per key; callers arriving while it runs share its result. The
/// operation is cancelled when every caller waiting for it has been cancelled (the agent is stopping),
/// never while one still waits.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Flight: Sendable {
        var task: Task<Value, Never>
        var waiters: Int
    }

    private let running = Mutex<[Key: Flight]>([:])

    func run(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> Value {
        let task = running.withLock { running in
            if running[key] != nil {
                running[key]!.waiters += 1
                return running[key]!.task
            }
            let task = Task { await operation() }
            running[key] = Flight(task: task, waiters: 1)
            return task
        }
        let value = await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            let abandoned = running.withLock { running -> Bool in
                guard running[key]?.task == task else { return false }
                running[key]!.waiters -= 1
                return running[key]!.waiters == 0
            }
            if abandoned { task.cancel() }
        }
        running.withLock { running in
            if running[key]?.task == task { running[key] = nil }
        }
        return value
    }

    func isRunning(_ key: Key) -> Bool {
        running.withLock { $0[key] != nil }
    }

    /// Callers still waiting for `key`'s operation and not cancelled.
    func waiters(_ key: Key) -> Int {
        running.withLock { $0[key]?.waiters ?? 0 }
    }
}

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
    func wait(timeout: Duration, clock: PassClock) async {
        guard timeout > .zero else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await clock.sleep(timeout) }
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
