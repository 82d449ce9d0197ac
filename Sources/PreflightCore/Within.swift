/// Runs `work` and waits for it at most `limit` on `clock`: its value, or nil when the time ran out first.
/// The work is then cancelled (a call shared through `SingleFlight` goes on for its other callers).
public func within<T: Sendable>(
    _ limit: Duration,
    clock: any AgentClock,
    _ work: @escaping @Sendable () async -> T
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await work() }
        group.addTask {
            try? await clock.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
