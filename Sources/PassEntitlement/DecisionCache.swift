import PreflightCore

/// Permit decisions kept in memory per (requestor, mvpd, resource) for a TTL: the LOCAL_CACHE of the
/// AccessEnabler. Denials are never kept (a user who just subscribed must not wait out a TTL), and the
/// owner drops a requestor's entries whenever its authenticated profile changes or expires.
///
/// A value type; the `Entitlement` keeps it behind its mutex.
struct DecisionCache: Sendable {
    struct Key: Hashable, Sendable {
        var requestor: String
        var mvpd: String
        var resource: String
    }

    /// Bound on entries: each is small, but resource ids come from apps. Oldest go first.
    static let capacity = 10_000

    private struct Entry: Sendable {
        var at: MonotonicInstant
        /// Adobe's `source` of the permit (`mvpd`, `degradation`, …), answered with it from the cache.
        var source: String?
    }

    private var storedAt: [Key: Entry] = [:]

    var count: Int { storedAt.count }

    /// The permit for `key` when it is younger than `ttl`, as the decision to answer with.
    func freshPermit(_ key: Key, now: MonotonicInstant, ttl: Duration) -> ResourceDecision? {
        guard let stored = storedAt[key], now - stored.at < ttl else { return nil }
        return ResourceDecision(resource: key.resource, authorized: true, source: stored.source)
    }

    /// Keeps a permit (or refreshes its age).
    mutating func storePermit(_ key: Key, source: String?, now: MonotonicInstant) {
        storedAt[key] = Entry(at: now, source: source)
        if storedAt.count > Self.capacity, let oldest = storedAt.min(by: { $0.value.at < $1.value.at })?.key {
            storedAt[oldest] = nil
        }
    }

    /// Forgets one entry (a fresh answer was not a clean permit).
    mutating func remove(_ key: Key) {
        storedAt[key] = nil
    }

    /// Drops a requestor's entries, or all with nil; returns how many went.
    @discardableResult
    mutating func drop(requestor: String?) -> Int {
        let before = storedAt.count
        if let requestor {
            storedAt = storedAt.filter { $0.key.requestor != requestor }
        } else {
            storedAt.removeAll()
        }
        return before - storedAt.count
    }

    /// Drops entries older than `ttl`.
    mutating func purge(now: MonotonicInstant, ttl: Duration) {
        storedAt = storedAt.filter { now - $0.value.at < ttl }
    }

    /// A requestor's entries with their age, oldest first, for the admin view.
    func entries(requestor: String, now: MonotonicInstant) -> [(mvpd: String, resource: String, age: Duration)] {
        storedAt.filter { $0.key.requestor == requestor }
            .sorted { ($0.value.at, $0.key.resource) < ($1.value.at, $1.key.resource) }
            .map { (mvpd: $0.key.mvpd, resource: $0.key.resource, age: now - $0.value.at) }
    }
}
