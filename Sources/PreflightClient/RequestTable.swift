import PreflightCore

/// The client's requests from submission to reply: which to send next, which are overdue, which to try
/// again and when. A state machine without sockets or clocks of its own (every call takes `now`), so the
/// Lazy Pirate policy is tested without waiting; `RequestLoop` drives it on the client's I/O thread.
///
/// Each request has attempts, 1 to `maxAttempts`. An attempt ends at its deadline (its timeout after it
/// began), when the agent answers `shutting_down` or `overloaded`, or when nobody listens at the endpoint;
/// the next attempt starts at once or after a delay, and after the last one the request fails. A request
/// overdue while sent means the socket may be dead: the table asks for a new socket, and every request
/// still sent on the old one is sent again on the new one (keeping its own deadline, so no request waits
/// longer than its attempts allow).
struct RequestTable<Waiter> {
    enum State: Equatable {
        /// In `ready`, to be sent as soon as the socket takes it.
        case ready
        /// Waiting out a delay before its next attempt.
        case delayed(until: ContinuousClock.Instant)
        /// On the socket; the reply is awaited.
        case sent
    }

    struct Entry {
        let body: [UInt8]
        let timeout: Duration
        let waiter: Waiter
        /// Submission order, to resend in the order requests were made.
        let sequence: Int
        var attempt = 1
        /// The end of the current attempt.
        var deadline: ContinuousClock.Instant
        var state = State.ready
        /// Why the previous attempt ended, reported if the last one ends the same way.
        var lastFailure: PreflightError?
    }

    /// What the table decided when time moved on.
    struct Expiry {
        /// Requests out of attempts, with why.
        var failed: [(waiter: Waiter, error: PreflightError)] = []
        /// A request got no reply in time: close the socket and open a new one (then `requeueSent()`).
        var needsNewSocket = false
    }

    let maxAttempts: Int
    private(set) var entries: [String: Entry] = [:]
    /// Ids to send, oldest first. May hold ids no longer `.ready` (answered, delayed, sent): skipped.
    private var ready: [String] = []
    private var readyHead = 0
    private var nextSequence = 0

    init(maxAttempts: Int) {
        self.maxAttempts = max(1, maxAttempts)
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Takes a new request; its first attempt starts now.
    mutating func add(id: String, body: [UInt8], timeout: Duration, waiter: Waiter, now: ContinuousClock.Instant) {
        entries[id] = Entry(
            body: body,
            timeout: timeout,
            waiter: waiter,
            sequence: nextSequence,
            deadline: now + timeout
        )
        nextSequence += 1
        ready.append(id)
    }

    /// The oldest request ready to go on the socket, without taking it.
    mutating func nextToSend() -> (id: String, body: [UInt8])? {
        while readyHead < ready.count {
            let id = ready[readyHead]
            if let entry = entries[id], entry.state == .ready {
                return (id, entry.body)
            }
            readyHead += 1
        }
        compactReady()
        return nil
    }

    /// Whether any request waits for the socket.
    func hasReadyToSend() -> Bool {
        ready[readyHead...].contains { entries[$0]?.state == .ready }
    }

    /// The socket took the request `nextToSend()` returned.
    mutating func markSent(_ id: String) {
        entries[id]?.state = .sent
        if readyHead < ready.count, ready[readyHead] == id {
            readyHead += 1
        }
        compactReady()
    }

    /// The reply arrived (or the caller gave up): the request leaves the table.
    mutating func complete(_ id: String) -> Waiter? {
        entries.removeValue(forKey: id)?.waiter
    }

    /// Ends the current attempt of `id` for `reason`; the next begins after `delay`. Returns the waiter and
    /// the error to fail it with when that was the last attempt.
    mutating func retryLater(
        _ id: String,
        reason: PreflightError,
        delay: Duration,
        now: ContinuousClock.Instant
    ) -> (waiter: Waiter, error: PreflightError)? {
        guard var entry = entries[id] else { return nil }
        guard entry.attempt < maxAttempts else {
            entries[id] = nil
            return (entry.waiter, reason)
        }
        entry.attempt += 1
        entry.lastFailure = reason
        let start = now + max(delay, .zero)
        entry.state = .delayed(until: start)
        entry.deadline = start + entry.timeout
        entries[id] = entry
        return nil
    }

    /// The delay before the attempt after `attempt`, doubling from `base`.
    static func backoff(base: Duration, after attempt: Int) -> Duration {
        Backoff(base: base, doublings: 10).delay(attempt: attempt)
    }

    /// The attempt `id` is on (1-based), for choosing a backoff.
    func attempt(of id: String) -> Int? {
        entries[id]?.attempt
    }

    /// Ids waiting for the socket now.
    func readyIDs() -> [String] {
        var seen = Set<String>()
        return ready[readyHead...].filter { entries[$0]?.state == .ready && seen.insert($0).inserted }
    }

    /// Moves time on: delayed requests whose time has come become ready; attempts past their deadline end.
    mutating func expire(
        now: ContinuousClock.Instant,
        describe: (_ attempts: Int, _ timeout: Duration) -> PreflightError
    ) -> Expiry {
        var expiry = Expiry()
        var becameReady: [(sequence: Int, id: String)] = []
        for (id, entry) in entries {
            if case .delayed(let until) = entry.state, until <= now {
                entries[id]?.state = .ready
                becameReady.append((entry.sequence, id))
            }
        }
        for (id, entry) in entries where entry.deadline <= now {
            guard entry.attempt < maxAttempts else {
                entries[id] = nil
                expiry.failed.append((entry.waiter, describe(entry.attempt, entry.timeout)))
                continue
            }
            expiry.needsNewSocket = true
            var next = entry
            next.attempt += 1
            next.deadline = now + entry.timeout
            next.lastFailure = describe(entry.attempt, entry.timeout)
            if next.state != .ready {
                next.state = .ready
                becameReady.append((entry.sequence, id))
            }
            entries[id] = next
        }
        appendReady(becameReady)
        return expiry
    }

    /// After a new socket: every request sent on the old one goes again (the old socket's replies are lost).
    mutating func requeueSent() {
        var requeued: [(sequence: Int, id: String)] = []
        for (id, entry) in entries where entry.state == .sent {
            entries[id]?.state = .ready
            requeued.append((entry.sequence, id))
        }
        appendReady(requeued)
    }

    /// The earliest moment something changes without a message: a deadline, or the end of a delay.
    func nextWakeUp() -> ContinuousClock.Instant? {
        var earliest: ContinuousClock.Instant?
        for entry in entries.values {
            var candidate = entry.deadline
            if case .delayed(let until) = entry.state { candidate = min(candidate, until) }
            if earliest.map({ candidate < $0 }) ?? true { earliest = candidate }
        }
        return earliest
    }

    /// Empties the table (the client is closing).
    mutating func removeAll() -> [Waiter] {
        defer {
            entries = [:]
            ready = []
            readyHead = 0
        }
        return entries.values.sorted { $0.sequence < $1.sequence }.map(\.waiter)
    }

    private mutating func appendReady(_ items: [(sequence: Int, id: String)]) {
        guard !items.isEmpty else { return }
        ready.append(contentsOf: items.sorted { $0.sequence < $1.sequence }.map(\.id))
    }

    private mutating func compactReady() {
        if readyHead == ready.count {
            ready.removeAll(keepingCapacity: true)
            readyHead = 0
        } else if readyHead > 1024, readyHead * 2 > ready.count {
            ready.removeFirst(readyHead)
            readyHead = 0
        }
    }
}
