import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization

/// Display notifications not yet confirmed by Target.
///
/// Each one is appended to a journal in the state directory as it is queued (a `write(2)`, so a
/// SIGKILL loses none); `syncJournal()`, called at least every second, fsyncs it (so a power cut loses
/// at most the last second) without putting a disk flush in front of an app's reply. An entry leaves
/// the queue only when Target returns its id; after a start, the journal's unconfirmed entries are
/// queued again.
///
/// The rules live in `NotificationBook` (a pure value) and the file in `NotificationJournal`; this
/// type holds both under one lock and keeps them in step.
public final class NotificationQueue: Sendable {
    public struct Counters: Sendable, Equatable {
        public var queued = 0
        public var sent = 0
        public var failedAttempts = 0
        public var droppedOverflow = 0
        public var replayed = 0
        /// Dropped unsent because the box opted out of Target (`target.privacy`).
        public var droppedOptedOut = 0
        /// Dropped because Target refused them as invalid (a bad token or timestamp), never retried.
        public var refused = 0
        /// Journal writes the disk refused since the start (a full disk), and whether the last one failed.
        public var journalWriteFailures = 0
        public var journalFailing = false
        public var lastError: String?
        public var lastErrorAtMs: Int64?
        /// Target's message when it last refused a notification.
        public var lastRefusal: String?
        public var lastRefusalAtMs: Int64?
    }

    public struct Summary: Sendable, Equatable {
        public var pending: Int
        public var inFlight: Int
        public var oldestTimestampMs: Int64?
        public var counters: Counters
    }

    private struct State: Sendable {
        var book: NotificationBook
        var journal: NotificationJournal
        /// Compactions failed in a row (a full disk, an unwritable state directory), and when to try the next.
        var compactionFailures = 0
        var compactionRetryAt: MonotonicInstant?
    }

    /// The wait before compacting again after a compaction failed: the sender asks after every batch, and a
    /// full disk would otherwise be written to (and logged) that often. 5 s doubling, at most 5 minutes.
    static let compactionBackoff = Backoff(base: .seconds(5), doublings: 6, cap: .seconds(300))

    private let state: Mutex<State>
    private let clock: any AgentClock
    private let logger: Logger

    public init(journalPath: String?, capacity: Int, clock: any AgentClock, logger: Logger) {
        self.clock = clock
        self.logger = logger
        let replayed = journalPath.map { NotificationJournal.replay(path: $0, logger: logger) } ?? []
        let book = NotificationBook(capacity: capacity, replayed: replayed)
        let journal = NotificationJournal(path: journalPath, live: book.live, logger: logger)
        self.state = Mutex(State(book: book, journal: journal))
        if !replayed.isEmpty {
            logger.info(
                "notifications from the journal queued again",
                metadata: ["count": "\(book.liveCount)", "droppedOverCapacity": "\(replayed.count - book.liveCount)"]
            )
        }
    }

    deinit {
        state.withLock { state in
            state.journal.commit()
            state.journal.close()
        }
    }

    /// Queues a notification and its journal line. The line reaches the file at the next
    /// `commitJournal()`: the I/O thread commits once per batch of requests, before it sends their
    /// replies, so an app never sees content whose notification a SIGKILL could lose, and a burst of
    /// loads costs one `write(2)` instead of one each. Never blocks on a flush.
    public func enqueue(_ notification: DisplayNotification) {
        enqueue(.made(notification))
    }

    /// Queues the display of a prefetched offer (not one decided on the box) by a load without targeting, stamped
    /// by the real time at `timestampMs`: as a record, not an object (`QueuedNotification`). What every plain cached
    /// load queues, and a flood of them mostly drops.
    public func enqueueDisplay(of offer: CachedOffer, timestampMs: Int64) {
        enqueue(.display(of: offer, timestampMs: timestampMs))
    }

    @inline(__always)
    private func enqueue(_ queued: QueuedNotification) {
        // The one dropped at capacity is returned from the lock and let go of (a made one's object freed) after it:
        // the sender waits on that lock.
        _ = state.withLock { state in
            state.journal.add(queued)
            let dropped = state.book.enqueue(queued)
            if dropped != nil { state.journal.noteDroppedAtCapacity() }
            return dropped
        }
    }

    /// Writes the journal lines queued since the last commit, in one `write(2)`.
    public func commitJournal() {
        state.withLock { $0.journal.commit() }
    }

    /// Takes up to `max` notifications of one property to send (they stay journaled until confirmed). A
    /// batch to `ride` along with prefetch or execute work under `property` holds only that property's, and
    /// is empty while refused notifications wait to be isolated.
    public func take(max: Int, ride: Bool = false, property: String? = nil) -> [QueuedNotification] {
        state.withLock { state in
            state.journal.commit()
            return state.book.take(max: max, ride: ride, property: property)
        }
    }

    /// Puts back a batch that rode along in a request Target refused as invalid, to be sent on its own
    /// (and isolated) at once; not a failure, so no backoff.
    public func suspect(_ batch: [QueuedNotification]) {
        guard !batch.isEmpty else { return }
        state.withLock { $0.book.suspect(batch) }
    }

    /// Drops a notification Target refused as invalid when sent alone, and acknowledges it in the journal
    /// so that a restart does not bring it back.
    public func reject(_ notification: QueuedNotification, reason: String) {
        let epoch = clock.epochMilliseconds()
        state.withLock { state in
            state.journal.acknowledge(state.book.reject(notification, reason: reason, epochMs: epoch))
            state.journal.commit()
        }
    }

    /// Drops every notification not yet confirmed (the box opted out of Target), from the queue and the
    /// journal. Returns how many.
    @discardableResult
    public func dropAll() -> Int {
        state.withLock { state in
            let dropped = state.book.dropAll()
            state.journal.acknowledge(dropped)
            state.journal.commit()
            state.journal.truncate()
            return dropped.count
        }
    }

    /// Settles a batch after Target answered: acknowledged ids leave the queue and the journal; any
    /// other goes back to the front to be sent again.
    public func complete(_ batch: [QueuedNotification], acknowledged: AcknowledgedIDs) {
        guard !batch.isEmpty else { return }
        state.withLock { state in
            state.journal.acknowledge(state.book.complete(batch, acknowledged: acknowledged))
            state.journal.commit()
            if state.book.isIdle { state.journal.truncateIfLong() }
        }
    }

    /// Puts a batch back after a failed send and schedules the next attempt by the book's backoff.
    public func fail(_ batch: [QueuedNotification], error: String) {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        state.withLock { $0.book.fail(batch, error: error, now: now, epochMs: epoch) }
    }

    /// Whether a standalone batch should go now: enough queued, or the oldest has waited long enough,
    /// and no backoff in force.
    public func isDue(batchSize: Int, maxAge: Duration) -> Bool {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        return state.withLock { $0.book.isDue(batchSize: batchSize, maxAge: maxAge, now: now, epochMs: epoch) }
    }

    /// Flushes the journal to disk if anything was appended since the last sync (the fsync happens
    /// outside the lock, so loads do not wait for the disk).
    public func syncJournal() {
        let file = state.withLock { $0.journal.fileToSync() }
        try? file?.sync()
    }

    public var summary: Summary {
        state.withLock { state in
            var summary = state.book.summary
            summary.counters.journalWriteFailures = state.journal.writeFailures
            summary.counters.journalFailing = state.journal.isFailing
            return summary
        }
    }

    /// Lets the next `isDue` ignore the backoff (an operator's `notifications flush`).
    public func clearBackoff() {
        state.withLock { $0.book.clearBackoff() }
    }

    /// Rewrites the journal with only what is still queued once its history outgrows that several times
    /// over (Target unreachable, or displays outpacing sends, while overflow drops and acks pile up),
    /// so the file and the next start's replay stay proportional to the queue, not to the box's uptime;
    /// and once the queue is down to half its capacity with drops at capacity still in the file (a flood
    /// over), so that a replay cannot bring those back.
    /// Called from the sender's loop, not the I/O thread. The rewrite's slow part (writing what is live
    /// and the fsync, milliseconds on a box's flash) runs without the queue's lock, so a load arriving
    /// meanwhile does not wait for the disk; what is journaled meanwhile is carried into the new file.
    public func compactJournalIfLarge() {
        let now = clock.now()
        let begun = state.withLock { state -> (live: [QueuedNotification], path: String)? in
            if let retryAt = state.compactionRetryAt, now < retryAt { return nil }
            let live = state.book.liveCount
            guard state.journal.isLarge(live: live) || state.journal.holdsDrops && live <= state.book.capacity / 2,
                let path = state.journal.path,
                state.journal.beginCompaction()
            else { return nil }
            return (state.book.live, path)
        }
        guard let begun else { return }
        let replacement = NotificationJournal.prepareReplacement(keeping: begun.live, path: begun.path, logger: logger)
        let replaced = state.withLock { state in
            let replaced = state.journal.finishCompaction(replacement, liveCount: begun.live.count)
            state.compactionFailures = replaced ? 0 : state.compactionFailures + 1
            state.compactionRetryAt =
                replaced ? nil : now + Self.compactionBackoff.delay(attempt: state.compactionFailures)
            return replaced
        }
        if replaced { FileSystem.syncDirectory(of: begun.path) }
    }
}
