import DequeModule
import PreflightCore
import PreflightProtocol

/// The display notifications not yet confirmed by Target, as a pure value: what is pending, what is
/// in flight, the counters and the retry backoff. No file, no lock, no clock: each change takes the
/// time it needs as an argument and returns what the journal must record, so `NotificationQueue`
/// (which owns the lock and the journal) stays glue, and every rule here is tested without a disk.
struct NotificationBook: Sendable {
    private(set) var pending = Deque<QueuedNotification>()
    private(set) var inFlight = InFlightNotifications()
    private(set) var counters = NotificationQueue.Counters()
    private(set) var consecutiveFailures = 0
    private(set) var retryAt: MonotonicInstant?
    /// Notifications in a request Target refused as invalid, not yet sent on their own: until they are
    /// settled, none ride along with prefetch or execute work, and they are due at once.
    private(set) var suspects: Set<String> = []
    let capacity: Int

    /// The wait before the next send after failures: 1 s doubling (at most eight times, at most 5 minutes),
    /// with equal jitter.
    static let retryBackoff = Backoff(base: .seconds(1), doublings: 8, cap: .seconds(300), jitter: .equal)

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Starts from what a journal replay found unconfirmed: the newest `capacity` of it (a journal written with
    /// a larger capacity may hold more), so that the queue is never over capacity and each enqueue drops at most
    /// one.
    init(capacity: Int, replayed: [DisplayNotification]) {
        self.capacity = capacity
        let kept = replayed.suffix(max(0, capacity))
        self.pending = Deque(kept.map(QueuedNotification.made))
        self.counters.replayed = kept.count
        self.counters.droppedOverflow = replayed.count - kept.count
    }

    /// Everything not yet confirmed, in flight first: what a compacted journal must hold.
    var live: [QueuedNotification] { Array(inFlight.items) + Array(pending) }

    var liveCount: Int { pending.count + inFlight.count }

    var isIdle: Bool { pending.isEmpty && inFlight.isEmpty }

    /// Queues one notification; at capacity, drops the oldest pending one and returns it, for its caller to let go
    /// of (outside its lock). The journal writes nothing for the drop (see `NotificationJournal`: a replay keeps the
    /// newest `capacity`). The queue is never over capacity before (see `init(capacity:replayed:)`), so one drop is
    /// enough.
    @discardableResult
    mutating func enqueue(_ notification: QueuedNotification) -> QueuedNotification? {
        pending.append(notification)
        counters.queued += 1
        guard liveCount > capacity, let oldest = pending.popFirst() else { return nil }
        // A suspect dropped here is settled too: left in `suspects`, it would hold back every ride-along
        // batch for good (nothing would ever send it again to clear it).
        if !suspects.isEmpty { suspects.remove(oldest.id) }
        counters.droppedOverflow += 1
        return oldest
    }

    /// Takes up to `max` pending notifications to send, oldest first, all of one property (a Delivery request
    /// carries one): `property` for a batch to `ride` along with that property's work, else the oldest one's.
    /// They stay live (in flight) until settled. A batch to ride along is empty while suspects wait to be
    /// sent on their own.
    mutating func take(max: Int, ride: Bool = false, property: String? = nil) -> [QueuedNotification] {
        if ride && !suspects.isEmpty { return [] }
        guard let first = pending.first else { return [] }
        let wanted = ride ? property : first.property
        var batch: [QueuedNotification]
        // Counted by index, holding no slice of `pending`: a live slice would make `removeFirst` copy the whole
        // queue (copy on write) on every take, which under a flood of loads was most of the sender's work.
        let limit = Swift.min(max, pending.count)
        var run = 0
        while run < limit, pending[run].property == wanted { run += 1 }
        if run == limit {
            // One property at the front (every box with one publisher): a slice off the front.
            batch = Array(pending[..<run])
            pending.removeFirst(run)
        } else {
            // Several properties interleaved: this property's oldest, the others keeping their order.
            batch = []
            var others = Deque<QueuedNotification>()
            for notification in pending {
                if batch.count < max && notification.property == wanted {
                    batch.append(notification)
                } else {
                    others.append(notification)
                }
            }
            pending = others
        }
        inFlight.insert(batch)
        return batch
    }

    /// Settles a batch Target answered: acknowledged ids leave; any other goes back to the front to be
    /// sent again. Clears the backoff. Returns those confirmed, for the journal.
    ///
    /// `acknowledged` is in Target's order, which is the request's when it confirms the whole batch: then
    /// the ids are compared in place, with no set to build and hash (once per display notification).
    mutating func complete(
        _ batch: [QueuedNotification],
        acknowledged: AcknowledgedIDs
    ) -> [QueuedNotification] {
        var unconfirmed: [QueuedNotification] = []
        var confirmed: [QueuedNotification] = []
        // By index: each element read in place, not copied out.
        if acknowledged.count == batch.count,
            batch.indices.allSatisfy({ index in batch[index].withIDBytes { acknowledged.id(at: index, is: $0) } })
        {
            inFlight.remove(batch)
            confirmed = batch
        } else {
            let acknowledged = Set(acknowledged)
            for notification in batch {
                let live = inFlight.remove(notification)
                if acknowledged.contains(notification.id) {
                    confirmed.append(notification)
                } else if live {
                    unconfirmed.append(notification)
                }
            }
        }
        counters.sent += confirmed.count
        if !suspects.isEmpty {
            for notification in confirmed { suspects.remove(notification.id) }
        }
        pending.prepend(contentsOf: unconfirmed)
        consecutiveFailures = 0
        retryAt = nil
        return confirmed
    }

    /// Puts a batch back after a failed send and schedules the next attempt by `retryBackoff`.
    mutating func fail(
        _ batch: [QueuedNotification],
        error: String,
        now: MonotonicInstant,
        epochMs: Int64
    ) {
        pending.prepend(contentsOf: batch.filter { inFlight.remove($0) })
        consecutiveFailures += 1
        counters.failedAttempts += 1
        counters.lastError = error
        counters.lastErrorAtMs = epochMs
        retryAt = now + Self.retryBackoff.delay(attempt: consecutiveFailures)
    }

    /// Puts back a batch that rode along with work in a request Target refused as invalid: not a failure
    /// (no backoff), but suspects, to be sent on their own and isolated.
    mutating func suspect(_ batch: [QueuedNotification]) {
        let live = batch.filter { inFlight.remove($0) }
        for notification in live { suspects.insert(notification.id) }
        pending.prepend(contentsOf: live)
    }

    /// Drops everything not yet confirmed (the box opted out of Target): pending ones at once, and those in
    /// flight when their send settles (they are no longer live, so nothing puts them back). Returns them,
    /// for the journal.
    mutating func dropAll() -> [QueuedNotification] {
        let dropped = Array(inFlight.items) + Array(pending)
        counters.droppedOptedOut += dropped.count
        pending.removeAll()
        inFlight.removeAll()
        suspects.removeAll()
        consecutiveFailures = 0
        retryAt = nil
        return dropped
    }

    /// Drops one notification Target refused as invalid when sent alone: retrying it cannot succeed.
    /// Returns it, for the journal.
    mutating func reject(
        _ notification: QueuedNotification,
        reason: String,
        epochMs: Int64
    ) -> [QueuedNotification] {
        inFlight.remove(notification)
        suspects.remove(notification.id)
        counters.refused += 1
        counters.lastRefusal = reason
        counters.lastRefusalAtMs = epochMs
        return [notification]
    }

    /// Whether a standalone batch should go now: suspects waiting, enough queued, or the oldest has
    /// waited long enough; and no backoff in force.
    func isDue(batchSize: Int, maxAge: Duration, now: MonotonicInstant, epochMs: Int64) -> Bool {
        guard let oldest = pending.first else { return false }
        if let retryAt, now < retryAt { return false }
        if !suspects.isEmpty { return true }
        let ageMs = epochMs - oldest.timestampMs
        let maxAgeMs = maxAge.components.seconds * 1000 + maxAge.components.attoseconds / 1_000_000_000_000_000
        return pending.count >= batchSize || ageMs >= maxAgeMs
    }

    /// Lets the next `isDue` ignore the backoff (an operator's `notifications flush`).
    mutating func clearBackoff() {
        retryAt = nil
    }

    var summary: NotificationQueue.Summary {
        NotificationQueue.Summary(
            pending: pending.count,
            inFlight: inFlight.count,
            oldestTimestampMs: pending.first?.timestampMs,
            counters: counters
        )
    }
}

/// The notifications in flight, in the order of their `serial` (the order they were made in), found by binary
/// search. A batch is taken from the front of the pending queue and settled whole, so it is almost always a run
/// at the end when taken and at the front when settled: then taking and settling it costs no search at all. A
/// dictionary keyed by serial hashed each notification twice (SipHash, and the bucket work about 450
/// instructions per notification on the sender, tools/bench --profile).
struct InFlightNotifications: Sendable {
    private(set) var items = Deque<QueuedNotification>()

    var count: Int { items.count }
    var isEmpty: Bool { items.isEmpty }

    /// Adds a batch taken to send; none of it is in flight already.
    mutating func insert(_ batch: [QueuedNotification]) {
        var last = items.last?.serial ?? .min
        var inOrder = true
        for notification in batch {
            inOrder = inOrder && notification.serial > last
            last = notification.serial
        }
        if inOrder {
            items.append(contentsOf: batch)
        } else {
            for notification in batch { items.insert(notification, at: position(of: notification.serial)) }
        }
    }

    /// Removes `notification`; false if it was not in flight (dropped meanwhile, or settled already).
    @discardableResult
    mutating func remove(_ notification: QueuedNotification) -> Bool {
        let index = position(of: notification.serial)
        guard index < items.count, items[index].serial == notification.serial else { return false }
        items.remove(at: index)
        return true
    }

    /// Removes every notification of `batch` that is in flight.
    mutating func remove(_ batch: [QueuedNotification]) {
        if batch.count <= items.count, batch.indices.allSatisfy({ batch[$0].serial == items[$0].serial }) {
            items.removeFirst(batch.count)
        } else {
            for notification in batch { remove(notification) }
        }
    }

    mutating func removeAll() {
        items.removeAll()
    }

    /// Where `serial` is, or would be.
    private func position(of serial: Int) -> Int {
        var low = 0
        var high = items.count
        while low < high {
            let middle = (low + high) / 2
            if items[middle].serial < serial { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
