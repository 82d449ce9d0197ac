import Synchronization

/// The callers waiting for tasks that outlive any one of them (a shared upstream call, a batch of
/// decisions): a task is cancelled once every caller that joined it has been cancelled (the agent is
/// stopping, and its callers' task groups with it), and never while one still waits.
public final class SharedTaskWaiters<ID: Hashable & Sendable>: Sendable {
    private let counts = Mutex<[ID: Int]>([:])

    public init() {}

    /// One more caller of `id`'s task.
    public func join(_ id: ID) {
        counts.withLock { $0[id, default: 0] += 1 }
    }

    /// `task`'s value, for a caller that joined `id`; if this caller is cancelled and was the last of
    /// `id`'s still waiting, `task` is cancelled too.
    public func value<Value: Sendable>(of task: Task<Value, Never>, joinedAs id: ID) async -> Value {
        await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            let abandoned = counts.withLock { counts -> Bool in
                guard let count = counts[id] else { return false }
                counts[id] = count - 1
                return count == 1
            }
            if abandoned { task.cancel() }
        }
    }

    /// Callers of `id`'s task that have not been cancelled.
    public func count(_ id: ID) -> Int {
        counts.withLock { $0[id] ?? 0 }
    }

    /// Forgets `id`: its task has finished.
    public func forget(_ id: ID) {
        counts.withLock { _ = $0.removeValue(forKey: id) }
    }
}
