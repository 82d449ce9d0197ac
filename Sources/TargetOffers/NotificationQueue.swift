import DequeModule
import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A display notification: Target learns that a prefetched mbox was shown.
///
/// Held as the encoded JSON of its Delivery API `notifications` item: it is written to the journal and
/// later into a Delivery request as those bytes, never rebuilt as a tree.
public struct DisplayNotification: Sendable, Hashable {
    public var id: String
    public var timestampMs: Int64
    public var mboxName: String
    /// The Delivery API `notifications` item, encoded:
    /// `{id, type: "display", timestamp, mbox: {name, state}, tokens, parameters, profileParameters, product, order}`.
    public var encoded: [UInt8]

    /// Built on a cache hit from the offer's prepared fragment: no JSON tree, one buffer.
    public static func display(
        of offer: CachedOffer,
        targeting: MboxTargeting,
        profileParameters: [Parameter],
        timestampMs: Int64
    ) -> DisplayNotification {
        let id = RandomUUID.make()
        var writer = JSONWriter(reservingCapacity: 96 + offer.notificationFragment.count)
        writer.appendASCII("{\"id\":\"")
        writer.appendASCII(id)  // hex digits and dashes: nothing to escape
        writer.appendASCII("\",\"type\":\"display\",\"timestamp\":")
        writer.writeInteger(timestampMs)
        writer.appendASCII(",")
        writer.writeRaw(offer.notificationFragment)
        let targetingMembers = DeliveryCodec.targetingJSON(targeting, profileParameters: profileParameters)
        for member in targetingMembers {
            writer.appendASCII(",")
            writer.writeString(member.key)
            writer.appendASCII(":")
            writer.write(member.value)
        }
        writer.appendASCII("}")
        return DisplayNotification(id: id, timestampMs: timestampMs, mboxName: offer.name, encoded: writer.bytes)
    }

    public init(id: String, timestampMs: Int64, mboxName: String, encoded: [UInt8]) {
        self.id = id
        self.timestampMs = timestampMs
        self.mboxName = mboxName
        self.encoded = encoded
    }

    /// From a journal entry.
    init?(deliveryJSON: JSONValue) {
        guard let id = deliveryJSON["id"]?.stringValue, let timestamp = deliveryJSON["timestamp"]?.doubleValue else {
            return nil
        }
        self.id = id
        self.timestampMs = Int64(timestamp)
        self.mboxName = deliveryJSON["mbox"]?["name"]?.stringValue ?? ""
        self.encoded = JSONWriter.encode(deliveryJSON)
    }
}

/// Display notifications not yet confirmed by Target.
///
/// Each one is appended to a journal in the state directory as it is queued (a `write(2)`, so a
/// SIGKILL loses none); `syncJournal()`, called at least every second, fsyncs it (so a power cut loses
/// at most the last second) without putting a disk flush in front of an app's reply. An entry leaves
/// the queue only when Target returns its id; after a start, the journal's unconfirmed entries are
/// queued again.
public final class NotificationQueue: Sendable {
    public struct Counters: Sendable, Equatable {
        public var queued = 0
        public var sent = 0
        public var failedAttempts = 0
        public var droppedOverflow = 0
        public var replayed = 0
        public var lastError: String?
        public var lastErrorAtMs: Int64?
    }

    private struct State: Sendable {
        var pending = Deque<DisplayNotification>()
        var inFlight: [String: DisplayNotification] = [:]
        var journal: OpenFile?
        var journalDirty = false
        var journalLines = 0
        /// Journal lines queued in memory for the next `write(2)` (group commit; see `commitJournal`).
        var unwritten: [UInt8] = []
        var unwrittenLines = 0
        var counters = Counters()
        var consecutiveFailures = 0
        var retryAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let capacity: Int
    private let journalPath: String?
    private let clock: any AgentClock
    private let logger: Logger

    public init(journalPath: String?, capacity: Int, clock: any AgentClock, logger: Logger) {
        self.journalPath = journalPath
        self.capacity = capacity
        self.clock = clock
        self.logger = logger
        replayJournal()
    }

    deinit {
        let journal = state.withLock { state in
            writeUnwrittenLocked(&state)
            return state.journal
        }
        journal?.close()
    }

    /// Queues a notification and its journal line. The line reaches the file at the next
    /// `commitJournal()`: the I/O thread commits once per batch of requests, before it sends their
    /// replies, so an app never sees content whose notification a SIGKILL could lose, and a burst of
    /// loads costs one `write(2)` instead of one each. Never blocks on a flush.
    public func enqueue(_ notification: DisplayNotification) {
        state.withLock { state in
            state.pending.append(notification)
            state.counters.queued += 1
            appendAddLocked(&state, notification)
            while state.pending.count + state.inFlight.count > capacity, !state.pending.isEmpty {
                let dropped = state.pending.removeFirst()
                state.counters.droppedOverflow += 1
                appendLocked(&state, Self.journalLine(ack: [dropped.id]))
            }
        }
    }

    /// Writes the journal lines queued since the last commit, in one `write(2)`.
    public func commitJournal() {
        state.withLock { writeUnwrittenLocked(&$0) }
    }

    /// Takes up to `max` notifications to send (they stay journaled until confirmed).
    public func take(max: Int) -> [DisplayNotification] {
        state.withLock { state in
            writeUnwrittenLocked(&state)
            let batch = Array(state.pending.prefix(max))
            state.pending.removeFirst(batch.count)
            for notification in batch { state.inFlight[notification.id] = notification }
            return batch
        }
    }

    /// Settles a batch after Target answered: acknowledged ids leave the queue and the journal; any
    /// other goes back to the front to be sent again.
    public func complete(_ batch: [DisplayNotification], acknowledged: Set<String>) {
        guard !batch.isEmpty else { return }
        state.withLock { state in
            var unconfirmed: [DisplayNotification] = []
            var confirmed: [String] = []
            for notification in batch {
                state.inFlight[notification.id] = nil
                if acknowledged.contains(notification.id) {
                    confirmed.append(notification.id)
                } else {
                    unconfirmed.append(notification)
                }
            }
            state.counters.sent += confirmed.count
            state.pending.prepend(contentsOf: unconfirmed)
            state.consecutiveFailures = 0
            state.retryAt = nil
            if !confirmed.isEmpty { appendLocked(&state, Self.journalLine(ack: confirmed)) }
            writeUnwrittenLocked(&state)
            compactIfIdleLocked(&state)
        }
    }

    /// The wait before the next send after failures: 1 s doubling (at most eight times, at most 5 minutes),
    /// with equal jitter.
    static let retryBackoff = Backoff(base: .seconds(1), doublings: 8, cap: .seconds(300), jitter: .equal)

    /// Puts a batch back after a failed send and schedules the next attempt by `retryBackoff`.
    public func fail(_ batch: [DisplayNotification], error: String) {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        state.withLock { state in
            for notification in batch { state.inFlight[notification.id] = nil }
            state.pending.prepend(contentsOf: batch)
            state.consecutiveFailures += 1
            state.counters.failedAttempts += 1
            state.counters.lastError = error
            state.counters.lastErrorAtMs = epoch
            state.retryAt = now + Self.retryBackoff.delay(attempt: state.consecutiveFailures)
        }
    }

    /// Whether a standalone batch should go now: enough queued, or the oldest has waited long enough,
    /// and no backoff in force.
    public func isDue(batchSize: Int, maxAge: Duration) -> Bool {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        return state.withLock { state in
            guard let oldest = state.pending.first else { return false }
            if let retryAt = state.retryAt, now < retryAt { return false }
            let ageMs = epoch - oldest.timestampMs
            let maxAgeMs = maxAge.components.seconds * 1000 + maxAge.components.attoseconds / 1_000_000_000_000_000
            return state.pending.count >= batchSize || ageMs >= maxAgeMs
        }
    }

    /// Flushes the journal to disk if anything was appended since the last sync.
    public func syncJournal() {
        let journal = state.withLock { state -> OpenFile? in
            writeUnwrittenLocked(&state)
            guard state.journalDirty else { return nil }
            state.journalDirty = false
            return state.journal
        }
        try? journal?.sync()
    }

    public struct Summary: Sendable, Equatable {
        public var pending: Int
        public var inFlight: Int
        public var oldestTimestampMs: Int64?
        public var counters: Counters
    }

    public var summary: Summary {
        state.withLock {
            Summary(
                pending: $0.pending.count,
                inFlight: $0.inFlight.count,
                oldestTimestampMs: $0.pending.first?.timestampMs,
                counters: $0.counters
            )
        }
    }

    /// Lets the next `isDue` ignore the backoff (an operator's `notifications flush`).
    public func clearBackoff() {
        state.withLock { $0.retryAt = nil }
    }

    // MARK: Journal

    private static let addPrefix = Array(#"{"add":"#.utf8)

    private static func journalLine(add notification: DisplayNotification) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(addPrefix.count + notification.encoded.count + 2)
        appendAddLine(notification, to: &line)
        return line
    }

    /// `{"add":<the notification's Delivery item>}` and a newline.
    private static func appendAddLine(_ notification: DisplayNotification, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: addPrefix)
        bytes.append(contentsOf: notification.encoded)
        bytes.append(UInt8(ascii: "}"))
        bytes.append(0x0A)
    }

    /// `{"ack":["id",…]}` and a newline, written without a JSON tree (a batch acknowledges up to 50).
    private static func journalLine(ack ids: [String]) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 12 + ids.count * 40)
        writer.appendASCII("{\"ack\":[")
        for (index, id) in ids.enumerated() {
            if index > 0 { writer.appendASCII(",") }
            writer.writeString(id)
        }
        writer.appendASCII("]}\n")
        return writer.bytes
    }

    /// The add line written straight into the unwritten lines: no line of its own to allocate.
    private func appendAddLocked(_ state: inout State, _ notification: DisplayNotification) {
        appendLocked(&state) { Self.appendAddLine(notification, to: &$0) }
    }

    private func appendLocked(_ state: inout State, _ line: [UInt8]) {
        appendLocked(&state) { $0.append(contentsOf: line) }
    }

    /// Queues one journal line, written by `write`, for the next `write(2)` (at once past 64 KiB).
    private func appendLocked(_ state: inout State, writing write: (inout [UInt8]) -> Void) {
        guard state.journal != nil else { return }
        write(&state.unwritten)
        state.unwrittenLines += 1
        if state.unwritten.count >= 1 << 16 { writeUnwrittenLocked(&state) }
    }

    private func writeUnwrittenLocked(_ state: inout State) {
        guard let journal = state.journal, !state.unwritten.isEmpty else { return }
        do throws(SystemCallError) {
            try journal.writeAll(state.unwritten)
            state.journalDirty = true
            state.journalLines += state.unwrittenLines
        } catch {
            logger.error("cannot append to the notification journal", metadata: ["errno": "\(error.errno)"])
        }
        state.unwritten.removeAll(keepingCapacity: true)
        state.unwrittenLines = 0
    }

    /// Rewrites the journal with only what is still queued once its history outgrows that several times
    /// over (Target unreachable, or displays outpacing sends, while overflow drops and acks pile up),
    /// so the file and the next start's replay stay proportional to the queue, not to the box's uptime.
    /// Called from the sender's loop, not the I/O thread; the atomic rewrite (temp file, fsync, rename)
    /// holds the queue's lock, so a load arriving meanwhile waits for it, about once per
    /// `4 × capacity` displays while a backlog lasts.
    public func compactJournalIfLarge() {
        guard let journalPath else { return }
        state.withLock { state in
            let live = state.pending.count + state.inFlight.count
            guard let journal = state.journal, state.journalLines + state.unwrittenLines > max(1000, 4 * live) else {
                return
            }
            let lines = (Array(state.inFlight.values) + Array(state.pending)).flatMap { Self.journalLine(add: $0) }
            do {
                try StateFile.atomicWrite(lines, to: journalPath, mode: 0o600)
            } catch {
                logger.error("cannot compact the notification journal", metadata: ["error": "\(error)"])
                return
            }
            let reopened: OpenFile
            do throws(SystemCallError) {
                reopened = try OpenFile.appending(to: journalPath)
            } catch {
                logger.error(
                    "cannot reopen the compacted notification journal; new notifications will not survive a restart",
                    metadata: ["errno": "\(error.errno)"]
                )
                return
            }
            journal.close()
            state.journal = reopened
            state.journalLines = live
            // The rewrite holds every live notification; lines not yet written are history now.
            state.unwritten.removeAll(keepingCapacity: true)
            state.unwrittenLines = 0
            state.journalDirty = false
        }
    }

    /// With nothing pending, the journal's history is dead weight: start it afresh.
    private func compactIfIdleLocked(_ state: inout State) {
        guard state.pending.isEmpty, state.inFlight.isEmpty, state.journalLines > 1000, let journal = state.journal
        else {
            return
        }
        if (try? journal.truncate()) != nil {
            state.journalLines = 0
            state.journalDirty = true
        }
    }

    private func replayJournal() {
        guard let journalPath else { return }
        var pending: [DisplayNotification] = []
        // Unreadable counts as missing, and there is no size bound, as when this read through FileManager.
        if let data = try? FileSystem.readFile(journalPath, limit: .max) {
            var acknowledged = Set<String>()
            var added: [DisplayNotification] = []
            var unreadable = 0
            defer {
                if unreadable > 0 {
                    logger.warning(
                        "skipped unreadable notification journal lines (a power cut can tear the last one)",
                        metadata: ["lines": "\(unreadable)"]
                    )
                }
            }
            for line in data.split(separator: 0x0A) where !line.isEmpty {
                // A power cut can leave a torn last line; it was never acknowledged to anyone, skip it.
                guard let entry = try? JSONReader.read(Array(line)) else {
                    unreadable += 1
                    continue
                }
                if let add = entry["add"], let notification = DisplayNotification(deliveryJSON: add) {
                    added.append(notification)
                } else if let ids = entry["ack"]?.arrayValue {
                    for id in ids { if let id = id.stringValue { acknowledged.insert(id) } }
                }
            }
            var seen = Set<String>()
            pending = added.filter { !acknowledged.contains($0.id) && seen.insert($0.id).inserted }
        }
        // Rewrite the journal with only what is still pending, atomically, then append from there on.
        let lines = pending.flatMap { Self.journalLine(add: $0) }
        do {
            try StateFile.atomicWrite(lines, to: journalPath, mode: 0o600)
        } catch {
            logger.error("cannot rewrite the notification journal", metadata: ["error": "\(error)"])
        }
        let journal = try? OpenFile.appending(to: journalPath, creatingWith: 0o600)
        if journal == nil {
            logger.error("cannot open the notification journal; notifications will not survive a restart")
        }
        state.withLock { state in
            state.journal = journal
            state.pending = Deque(pending)
            state.journalLines = pending.count
            state.counters.replayed = pending.count
        }
        if !pending.isEmpty {
            logger.info("notifications from the journal queued again", metadata: ["count": "\(pending.count)"])
        }
    }
}
