import Synchronization

/// At most one running operation per key: callers arriving while it runs share its result instead of
/// starting another. Used for every upstream call that concurrent callers may need at once (a requestor's
/// configuration, a profile, an access token, identical Target misses).
///
/// A call runs in a task of its own, since it outlives any one caller; it is cancelled when every caller
/// waiting for it has been cancelled (the agent is stopping, and its callers' task groups with it), and
/// never while one still waits. So stopping never waits on an upstream call nobody wants.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    fileprivate typealias Work = Task<[Key: Value], Never>

    /// One started or joined call; `value()` waits for it.
    public struct Flight: Sendable {
        fileprivate let owner: SingleFlight
        fileprivate let key: Key
        fileprivate let work: Work

        /// The call's result. The call leaves the table once it has finished and been awaited.
        public func value() async -> Value {
            let values = await owner.wait(for: work)
            owner.finish(work, keys: [key])
            guard let value = values[key] else { preconditionFailure("a single flight returned no value") }
            return value
        }
    }

    private let running = Mutex<[Key: Work]>([:])
    private let waiters = SharedTaskWaiters<Work>()

    public init() {}

    /// Joins the call running for `key`, or starts `operation` as it; does not wait, so it may be called
    /// while holding another lock.
    public func begin(_ key: Key, _ operation: @escaping @Sendable () async -> Value) -> Flight {
        let work = running.withLock { running in
            let work = running[key] ?? Work { [key: await operation()] }
            running[key] = work
            waiters.join(work)
            return work
        }
        return Flight(owner: self, key: key, work: work)
    }

    /// The result of the call for `key`: one already running, or `operation` started now.
    public func run(_ key: Key, _ operation: @escaping @Sendable () async -> Value) async -> Value {
        await begin(key, operation).value()
    }

    /// The results for `keys`: those already running are joined, and the rest are started together as one
    /// call of `operation` (given them once each, in the order of `keys`), which returns a value per key it
    /// was given. A key missing from the results is missing from the answer.
    public func run(
        batch keys: [Key],
        _ operation: @escaping @Sendable ([Key]) async -> [Key: Value]
    ) async -> [Key: Value] {
        let (joined, started, fresh) = running.withLock { running in
            var joined: [Key: Work] = [:]
            var fresh: [Key] = []
            for key in keys where joined[key] == nil && !fresh.contains(key) {
                if let work = running[key] { joined[key] = work } else { fresh.append(key) }
            }
            var started: Work?
            if !fresh.isEmpty {
                let work = Work { [fresh] in await operation(fresh) }
                for key in fresh { running[key] = work }
                started = work
            }
            for work in Set(joined.values).union(started.map { [$0] } ?? []) { waiters.join(work) }
            return (joined, started, fresh)
        }
        var values: [Key: Value] = [:]
        if let started {
            values = await wait(for: started)
            finish(started, keys: fresh)
        }
        var awaited: [Work: [Key: Value]] = [:]
        for (key, work) in joined {
            if awaited[work] == nil { awaited[work] = await wait(for: work) }
            values[key] = awaited[work]?[key]
            finish(work, keys: [key])
        }
        return values
    }

    /// Whether a call for `key` is running (or finished and not yet awaited).
    public func isRunning(_ key: Key) -> Bool {
        running.withLock { $0[key] != nil }
    }

    /// Callers waiting for `key`'s call that have not been cancelled.
    public func waiters(_ key: Key) -> Int {
        running.withLock { $0[key] }.map { waiters.count($0) } ?? 0
    }

    /// `work`'s result; if this caller is cancelled and was its last, `work` is cancelled too.
    fileprivate func wait(for work: Work) async -> [Key: Value] {
        await waiters.value(of: work, joinedAs: work)
    }

    private func finish(_ work: Work, keys: [Key]) {
        running.withLock { running in
            for key in keys where running[key] == work { running[key] = nil }
            if !running.values.contains(work) { waiters.forget(work) }
        }
    }
}
