import Logging
import PreflightProtocol
import StateFiles

/// The notification journal's file: one line per change. A queued notification is `{"add":<Delivery item>}`
/// (with `"property"` when it belongs to a property other than the configured one, `"boxClock":true` when the
/// box's clock stamped it); a display of a cached offer is shorter, `{"a":S,"i":<the item without the offer's
/// members>}`, after the offer's members were written once in the file as `{"def":S,"fragment":{…}}` (S the
/// offer's `DisplayTemplate.definition`): a flood of loads writes about 90 bytes a load instead of 240 and more.
/// `{"ack":["id",…]}` when notifications leave (confirmed by Target, refused, or dropped on opting out). Lines
/// are gathered in memory and written by one `write(2)` at `commit()` (group commit), fsynced by `sync()`, and
/// the whole file is rewritten atomically (the same lines, each offer defined once) when its history outgrows
/// what is live: in a flood that is every 30,000 loads at the default capacity, and a rewrite in whole lines
/// wrote as much again as the loads' own lines.
/// `replay(path:)` reads it back at start.
///
/// A notification dropped at capacity writes nothing: in a flood every load drops one, and its ack was a
/// third of the bytes a load wrote (and the one read of an object made 10,000 loads earlier). The replay keeps
/// the newest `capacity` unconfirmed, which is what the queue held, give or take a batch: after a crash in a
/// flood, the oldest in flight may be given up for as many newer ones the queue had dropped. What would bring
/// back more, a file still holding drops once the queue has room again, is rewritten: `holdsDrops` makes
/// `NotificationQueue` compact it when the queue is down to half its capacity, and truncate it when idle.
///
/// Not thread-safe: `NotificationQueue` holds it under its lock, beside the `NotificationBook`.
struct NotificationJournal: Sendable {
    /// The file's path; nil: no journal.
    let path: String?
    private var file: OpenFile?
    private var dirty = false
    /// Lines in the file, for deciding when to compact.
    private var lines = 0
    /// Commits that failed since the file last held everything live: their lines are lost, so until a rewrite
    /// (which `isLarge` asks for) a restart would not bring back what they recorded.
    private var failedWrites = 0
    /// Commits failed in a row, up to the last one: a failing disk is logged once, and again when it takes
    /// writes again.
    private var failingInARow = 0
    /// Commits failed since the start (`notifications.status`).
    private(set) var writeFailures = 0
    /// Whether the last commit failed.
    var isFailing: Bool { failingInARow > 0 }
    /// Notifications dropped at capacity whose lines are in the file (or gathered for it) unacknowledged: a
    /// replay could bring them back while the queue has room.
    private var unacknowledgedDrops = 0
    /// Lines gathered for the next `write(2)`.
    private var unwritten: [UInt8] = []
    private var unwrittenLines = 0
    /// A compaction under way: what was written to the file since it began, for its replacement's tail.
    private var compaction: Compaction?
    /// The offers whose `def` line is in the file (or gathered for it).
    private var definitions = Definitions()
    private let logger: Logger

    /// The offers whose `def` line a file holds, and the last one looked up: a flood of loads of one offer checks
    /// one integer, not a set.
    struct Definitions: Sendable {
        private var defined = Set<Int>()
        private var last = 0
        /// The digits of the last record's definition and timestamp, which a flood repeats.
        private var digits = (definition: RepeatedDigits(), timestamp: RepeatedDigits())

        /// Appends `notification`'s line to `bytes`: a display of a cached offer gets the short line, after its
        /// offer's `def` line when the file has none yet; any other notification its whole line. Returns how
        /// many lines it appended.
        mutating func appendLine(of queued: QueuedNotification, to bytes: inout [UInt8]) -> Int {
            guard let template = queued.recordTemplate else {
                let notification = queued.notification!
                let definition = notification.definition
                guard definition != 0 else {
                    notification.appendWholeJournalLine(to: &bytes)
                    return 1
                }
                let lines = define(definition, to: &bytes) { notification.appendDefinitionLine(to: &$0) }
                notification.withShortJournalLine { bytes.append(contentsOf: $0) }
                return lines
            }
            // A record: the line its display would have as a made notification (`display(of:…)`).
            let definition = template.definition
            let lines = define(definition, to: &bytes) {
                DisplayNotification.appendDefinitionLine(
                    definition: definition,
                    fragment: UnsafeBufferPointer(template.fragment.bytes),
                    property: template.property,
                    to: &$0
                )
            }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: DisplayNotification.shortDisplayLineCapacity) {
                scratch in
                var line = ByteCursor(scratch.baseAddress!)
                queued.writeRecordJournalLine(of: template, to: &line, digits: &digits)
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<line.count]))
            }
            return lines
        }

        /// Appends the `def` line of `definition` (by `write`) when the file has none yet; returns the lines a
        /// short line after it adds up to: 2 with a new `def` line, else 1.
        @inline(__always)
        private mutating func define(
            _ definition: Int,
            to bytes: inout [UInt8],
            _ write: (inout [UInt8]) -> Void
        )
            -> Int
        {
            guard definition != last else { return 1 }
            last = definition
            guard defined.insert(definition).inserted else { return 1 }
            write(&bytes)
            return 2
        }

        /// Lines holding `live`, each offer defined once: what a rewritten file starts with.
        static func lines(of live: [QueuedNotification]) -> [UInt8] {
            var definitions = Definitions()
            var bytes: [UInt8] = []
            for notification in live { _ = definitions.appendLine(of: notification, to: &bytes) }
            return bytes
        }
    }

    private struct Compaction: Sendable {
        var written: [UInt8] = []
        var lines = 0
        /// `unacknowledgedDrops` and `failedWrites` when it began: the replacement holds none of those drops and
        /// everything those writes lost.
        var dropsBefore = 0
        var failedBefore = 0
        /// The file was truncated meanwhile (everything left): the replacement is stale.
        var abandoned = false
    }

    /// Opens the journal at `path` (nil: no journal, as in tests) after rewriting it to hold only
    /// `live`, atomically, so that the file starts as short as the queue.
    init(path: String?, live: [QueuedNotification], logger: Logger) {
        self.path = path
        self.logger = logger
        guard let path else { return }
        do {
            try StateFile.atomicWrite(Definitions.lines(of: live), to: path, mode: 0o600)
        } catch {
            logger.error("cannot rewrite the notification journal", metadata: ["error": "\(error)"])
        }
        file = try? OpenFile.appending(to: path, creatingWith: 0o600)
        if file == nil {
            logger.error("cannot open the notification journal; notifications will not survive a restart")
        }
        lines = live.count
    }

    func close() {
        file?.close()
    }

    // MARK: Lines

    /// Records a queued notification: its line goes straight into the unwritten bytes, with no line of
    /// its own to allocate (this runs on the I/O thread for every cache hit). A display of a cached offer
    /// gets the short line, after its offer's `def` line when the file has none yet.
    mutating func add(_ queued: QueuedNotification) {
        guard file != nil else { return }
        gathered(lines: definitions.appendLine(of: queued, to: &unwritten))
    }

    /// Notes that the queue dropped a notification at capacity (its line stays in the file, unacknowledged).
    mutating func noteDroppedAtCapacity() {
        unacknowledgedDrops += 1
    }

    /// Whether the file holds notifications dropped at capacity, unacknowledged.
    var holdsDrops: Bool { unacknowledgedDrops > 0 }

    /// The file no longer holds (or will not hold) the `def` lines written so far: the next display of each
    /// offer defines it again.
    private mutating func forgetDefinitions() {
        definitions = Definitions()
    }

    /// Records notifications that left the queue: `{"ack":["id",…]}`, their ids written straight into the
    /// unwritten bytes.
    mutating func acknowledge<Notifications: Collection<QueuedNotification>>(_ notifications: Notifications) {
        guard !notifications.isEmpty else { return }
        append { bytes in
            // The writer borrows the unwritten bytes and gives them back: no line of its own to copy.
            var writer = JSONWriter(reservingCapacity: 0)
            swap(&writer.bytes, &bytes)
            defer { swap(&writer.bytes, &bytes) }
            // Generated ids (all but those read back from a journal) are copied with their quotes from their
            // items into one composed line: a comma, a quote, the id and a quote appended one by one cost the
            // sender about 150 instructions per display notification.
            if notifications.allSatisfy(\.hasGeneratedID) {
                writer.appendComposed(capacity: 12 + (2 + 36 + 1) * notifications.count) { line in
                    line.put("{\"ack\":[")
                    for index in notifications.indices {
                        if index != notifications.startIndex { line.put(UInt8(ascii: ",")) }
                        _ = notifications[index].withQuotedID { line.put($0) }
                    }
                    line.put("]}\n")
                }
                return
            }
            writer.appendASCII("{\"ack\":[")
            for (index, notification) in notifications.enumerated() {
                if index > 0 { writer.appendASCII(",") }
                notification.writeID(to: &writer)
            }
            writer.appendASCII("]}\n")
        }
    }

    /// Gathers one line for the next `write(2)` (at once past 64 KiB).
    private mutating func append(writing write: (inout [UInt8]) -> Void) {
        guard file != nil else { return }
        write(&unwritten)
        gathered(lines: 1)
    }

    /// Counts `lines` just gathered into the unwritten bytes, and writes them at once past 64 KiB.
    private mutating func gathered(lines: Int) {
        unwrittenLines += lines
        if unwritten.count >= 1 << 16 { commit() }
    }

    // MARK: Disk

    /// Writes the gathered lines in one `write(2)`.
    mutating func commit() {
        guard let file, !unwritten.isEmpty else { return }
        do throws(SystemCallError) {
            try file.writeAll(unwritten)
            dirty = true
            lines += unwrittenLines
            if compaction != nil {
                compaction?.written.append(contentsOf: unwritten)
                compaction?.lines += unwrittenLines
            }
            if failingInARow > 0 {
                logger.notice(
                    "the notification journal takes writes again; it is rewritten with what is queued",
                    metadata: ["failedWrites": "\(failingInARow)"]
                )
                failingInARow = 0
            }
        } catch {
            // Once per spell: the I/O thread commits after every batch of loads, and a full disk would fill the
            // log as fast.
            if failingInARow == 0 {
                logger.error(
                    "cannot append to the notification journal; what is queued meanwhile is not kept across a restart until it can be rewritten",
                    metadata: ["errno": "\(error.errno)"]
                )
            }
            failingInARow += 1
            failedWrites += 1
            writeFailures += 1
            // The lost lines may hold `def` lines: define again rather than refer to what is not there.
            forgetDefinitions()
        }
        unwritten.removeAll(keepingCapacity: true)
        unwrittenLines = 0
    }

    /// Commits, and returns the file to fsync when anything reached it since the last sync. The fsync
    /// itself is the caller's, outside its lock.
    mutating func fileToSync() -> OpenFile? {
        commit()
        guard dirty else { return nil }
        dirty = false
        return file
    }

    /// Whether the file's history has outgrown `live` entries several times over, or lost lines in a failed
    /// write: either way a rewrite with what is live is due.
    func isLarge(live: Int) -> Bool {
        file != nil && (lines + unwrittenLines > max(1000, 4 * live) || failedWrites > 0)
    }

    /// Compaction rewrites the file atomically with only what is live, in three steps so that the queue's
    /// lock is not held across the disk: `beginCompaction` (under the lock) commits and starts keeping what
    /// is written from then on; `Self.prepareReplacement` (no lock) writes the live notifications to a
    /// temporary file and fsyncs it; `finishCompaction` (under the lock) appends what was written meanwhile
    /// (adds and acks, so a replay reads the same queue), renames it over the file and appends to it from
    /// there on. On any failure the old file stays in use. Returns false when there is no file or a
    /// compaction is already under way.
    mutating func beginCompaction() -> Bool {
        guard file != nil, compaction == nil else { return false }
        commit()
        compaction = Compaction(dropsBefore: unacknowledgedDrops, failedBefore: failedWrites)
        // The replacement defines only the offers of what is live then: a display journaled from now on defines
        // its offer again, in the old file and so in what is carried into the replacement.
        forgetDefinitions()
        return true
    }

    /// The replacement holding only `live`, written and fsynced; nil (logged) when it cannot be.
    static func prepareReplacement(
        keeping live: [QueuedNotification],
        path: String,
        logger: Logger
    ) -> FileSystem.Replacement? {
        do throws(SystemCallError) {
            return try FileSystem.Replacement(Definitions.lines(of: live), for: path, mode: 0o600)
        } catch {
            logger.error("cannot compact the notification journal", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Ends the compaction `beginCompaction` began, with `replacement` holding the `live` notifications of
    /// then (nil: it could not be written). Returns whether the file was replaced; the caller then makes the
    /// rename durable (`FileSystem.syncDirectory`) outside the lock.
    mutating func finishCompaction(_ replacement: FileSystem.Replacement?, liveCount: Int) -> Bool {
        // What is gathered now reaches the old file, and so the compaction's record of what was written.
        commit()
        let began = compaction
        compaction = nil
        guard let replacement else { return false }
        guard let began, !began.abandoned, let old = file else {
            replacement.discard()
            return false
        }
        do throws(SystemCallError) {
            try replacement.file.writeAll(began.written)
        } catch {
            replacement.discard()
            logger.error("cannot compact the notification journal", metadata: ["error": "\(error)"])
            return false
        }
        do throws(SystemCallError) {
            try replacement.replace()  // removes the replacement when it fails
        } catch {
            logger.error("cannot compact the notification journal", metadata: ["error": "\(error)"])
            return false
        }
        old.close()
        file = replacement.file
        lines = liveCount + began.lines
        unacknowledgedDrops -= began.dropsBefore
        failedWrites -= began.failedBefore
        // The lines written meanwhile reached the replacement without an fsync: the next `fileToSync()`
        // makes them durable.
        dirty = true
        return true
    }

    /// With nothing live, a long history (or one holding drops a replay would bring back) is dead weight: start
    /// the file afresh.
    mutating func truncateIfLong() {
        guard lines > 1000 || holdsDrops else { return }
        truncate()
    }

    /// Starts the file afresh (nothing may be live): a box that opted out keeps no trace of what it showed.
    /// A compaction under way is abandoned: its replacement holds what was live before.
    mutating func truncate() {
        guard let file else { return }
        compaction?.abandoned = true
        if (try? file.truncate()) != nil {
            lines = 0
            unacknowledgedDrops = 0
            failedWrites = 0
            dirty = true
        }
        forgetDefinitions()
    }

    // MARK: Replay

    /// The notifications a journal holds that were never acknowledged, in order, each once. Unreadable
    /// lines (a power cut can tear the last one; it was never acknowledged to anyone) are skipped with a
    /// log line; an unreadable or missing file holds none.
    static func replay(path: String, logger: Logger) -> [DisplayNotification] {
        guard let data = try? FileSystem.readFile(path, limit: .max) else { return [] }
        var acknowledged = Set<String>()
        var added: [DisplayNotification] = []
        var definitions: [Int64: (fragment: JSONObject, property: String?)] = [:]
        var unreadable = 0
        for line in data.split(separator: 0x0A) where !line.isEmpty {
            guard let entry = try? JSONReader.read(Array(line)) else {
                unreadable += 1
                continue
            }
            if let add = entry["add"],
                let notification = DisplayNotification(
                    deliveryJSON: add,
                    property: entry["property"]?.stringValue,
                    stampedByBoxClock: entry["boxClock"] == .bool(true)
                )
            {
                added.append(notification)
            } else if let short = entry["i"]?.objectValue, case .integer(let definition)? = entry["a"] {
                // A short line: its item is whole again with its offer's members.
                guard let offer = definitions[definition],
                    let notification = DisplayNotification(
                        deliveryJSON: .object(JSONObject(short.members + offer.fragment.members)),
                        property: offer.property,
                        stampedByBoxClock: entry["boxClock"] == .bool(true)
                    )
                else {
                    unreadable += 1
                    continue
                }
                added.append(notification)
            } else if case .integer(let definition)? = entry["def"], let fragment = entry["fragment"]?.objectValue {
                definitions[definition] = (fragment, entry["property"]?.stringValue)
            } else if let ids = entry["ack"]?.arrayValue {
                for id in ids { if let id = id.stringValue { acknowledged.insert(id) } }
            }
        }
        if unreadable > 0 {
            logger.warning(
                "skipped unreadable notification journal lines (a power cut can tear the last one)",
                metadata: ["lines": "\(unreadable)"]
            )
        }
        var seen = Set<String>()
        return added.filter { !acknowledged.contains($0.id) && seen.insert($0.id).inserted }
    }
}
