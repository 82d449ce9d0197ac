import PreflightCore

/// Turns concurrent needs for decisions into as few upstream preauthorize calls as the limits allow.
///
/// A resource already on its way upstream (same requestor, mvpd and REMOTE_CACHE choice) is not asked
/// again: the caller waits for that call. Other resources go into a batch of at most
/// `maxResourcesPerRequest`. A batch stays open, taking in more resources, until it holds a pacing slot;
/// so when pacing makes calls wait (at boot, with many apps asking at once), the waiting calls fill up
/// instead of queueing one by one. Identical concurrent commands therefore cost one upstream call.
actor DecisionBatcher {
    /// Callers of each batch that have not been cancelled: a batch every caller has given up on (the agent
    /// is stopping) is cancelled, so that stopping never waits for pacing or an upstream call.
    private let waiters = SharedTaskWaiters<Int>()

    struct Key: Hashable, Sendable {
        var requestor: String
        var mvpd: String
        var bypassRemoteCache: Bool
    }

    typealias Outcome = UpstreamResult<[String: ResourceDecision]>

    private struct Batch {
        var key: Key
        var resources: [String] = []
        var sealed = false
        var task: Task<Outcome, Never>?
    }

    private let upstream: PassUpstream
    private var batches: [Int: Batch] = [:]
    private var nextID = 0
    /// Resources in open or in-flight batches, by key: resource → batch id.
    private var pending: [Key: [String: Int]] = [:]
    /// Callers waiting for decisions.
    private(set) var waiting = 0

    init(upstream: PassUpstream) {
        self.upstream = upstream
    }

    /// The outcome of the call that decided each resource. `resources` must hold no duplicates.
    func decide(
        _ resources: [String],
        key: Key,
        limit: Int,
        deadline: MonotonicInstant
    ) async -> [String: Outcome] {
        var assignment: [String: Int] = [:]
        for resource in resources {
            if let id = pending[key]?[resource] {
                assignment[resource] = id
                continue
            }
            let id = openBatch(for: key, limit: max(1, limit)) ?? makeBatch(for: key, deadline: deadline)
            batches[id]?.resources.append(resource)
            pending[key, default: [:]][resource] = id
            assignment[resource] = id
        }
        var tasks: [Int: Task<Outcome, Never>] = [:]
        for id in Set(assignment.values) {
            tasks[id] = batches[id]?.task
        }
        var outcomes: [Int: Outcome] = [:]
        waiting += 1
        for id in tasks.keys { waiters.join(id) }
        for (id, task) in tasks {
            outcomes[id] = await waiters.value(of: task, joinedAs: id)
        }
        waiting -= 1
        return assignment.mapValues { outcomes[$0] ?? .failure(.networkError("the upstream call was abandoned")) }
    }

    private func openBatch(for key: Key, limit: Int) -> Int? {
        batches.first { $0.value.key == key && !$0.value.sealed && $0.value.resources.count < limit }?.key
    }

    private func makeBatch(for key: Key, deadline: MonotonicInstant) -> Int {
        let id = nextID
        nextID += 1
        batches[id] = Batch(key: key)
        let upstream = self.upstream
        batches[id]?.task = Task {
            let outcome = await upstream.preauthorize(
                requestor: key.requestor,
                mvpd: key.mvpd,
                bypassRemoteCache: key.bypassRemoteCache,
                deadline: deadline
            ) { await self.seal(id) }
            self.finish(id)
            return outcome
        }
        return id
    }

    /// Closes a batch to newcomers and returns what it asks for.
    private func seal(_ id: Int) -> [String] {
        batches[id]?.sealed = true
        return batches[id]?.resources ?? []
    }

    private func finish(_ id: Int) {
        waiters.forget(id)
        guard let batch = batches.removeValue(forKey: id) else { return }
        for resource in batch.resources where pending[batch.key]?[resource] == id {
            pending[batch.key]?[resource] = nil
        }
        if pending[batch.key]?.isEmpty ?? false { pending[batch.key] = nil }
    }
}
