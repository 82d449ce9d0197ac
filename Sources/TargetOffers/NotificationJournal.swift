import Logging
import PreflightProtocol
import StateFiles

/// The notification journal's file: one line per change, `{"add":<Delivery item>}` (with `"property"` when it
/// belongs to a property other than the configured one) when a notification is queued and `{"ack":["id",…]}` when it leaves (confirmed, or dropped at capacity). Lines are
/// gathered in memory and written by one `write(2)` at `commit()` (group commit), fsynced by `sync()`,
/// and the whole file is rewritten atomically by `compact(keeping:)` when its history outgrows what is
/// live. `replay(path:)` reads it back at start.
///
/// Not thread-safe: `NotificationQueue` holds it under its lock, beside the `NotificationBook`.
struct NotificationJournal: Sendable {
    private let path: String?
    private var file: OpenFile?
    private var dirty = false
    /// Lines in the file, for deciding when to compact.
    private var lines = 0
    /// Lines gathered for the next `write(2)`.
    private var unwritten: [UInt8] = []
    private var unwrittenLines = 0
    private let logger: Logger

    /// Opens the journal at `path` (nil: no journal, as in tests) after rewriting it to hold only
    /// `live`, atomically, so that the file starts as short as the queue.
    init(path: String?, live: [DisplayNotification], logger: Logger) {
        self.path = path
        self.logger = logger
        guard let path else { return }
        do {
            try StateFile.atomicWrite(live.flatMap(Self.addLine), to: path, mode: 0o600)
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

    private static let addPrefix = Array(#"{"add":"#.utf8)

    private static func addLine(_ notification: DisplayNotification) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(addPrefix.count + notification.withEncoded { $0.count } + boxClockSuffix.count + 1)
        appendAddLine(notification, to: &line)
        return line
    }

    private static let boxClockSuffix = Array(#","boxClock":true}"#.utf8)

    /// `{"add":<the notification's Delivery item>}` and a newline; `"boxClock":true` besides `add` when
    /// its timestamp is the box's clock, not yet corrected by an upstream's, and `"property":"…"` when it
    /// has one.
    private static func appendAddLine(_ notification: DisplayNotification, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: addPrefix)
        notification.withEncoded { bytes.append(contentsOf: $0) }
        if let property = notification.property {
            var member = JSONWriter(reservingCapacity: property.utf8.count + 16)
            member.appendASCII(",\"property\":")
            member.writeString(property)
            bytes.append(contentsOf: member.bytes)
        }
        if notification.stampedByBoxClock {
            bytes.append(contentsOf: boxClockSuffix)
        } else {
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(0x0A)
    }

    /// Records a queued notification: its line goes straight into the unwritten bytes, with no line of
    /// its own to allocate (this runs on the I/O thread for every cache hit).
    mutating func add(_ notification: DisplayNotification) {
        append { Self.appendAddLine(notification, to: &$0) }
    }

    /// Records notifications that left the queue: `{"ack":["id",…]}`, their ids written straight into the
    /// unwritten bytes.
    mutating func acknowledge(_ notifications: [DisplayNotification]) {
        guard !notifications.isEmpty else { return }
        append { bytes in
            // The writer borrows the unwritten bytes and gives them back: no line of its own to copy.
            var writer = JSONWriter(reservingCapacity: 0)
            swap(&writer.bytes, &bytes)
            defer { swap(&writer.bytes, &bytes) }
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
        unwrittenLines += 1
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
        } catch {
            logger.error("cannot append to the notification journal", metadata: ["errno": "\(error.errno)"])
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

    /// Whether the file's history has outgrown `live` entries several times over.
    func isLarge(live: Int) -> Bool {
        file != nil && lines + unwrittenLines > max(1000, 4 * live)
    }

    /// Rewrites the file atomically (temporary file, fsync, rename) with only `live`, and appends from
    /// there on. On failure the old file stays in use.
    mutating func compact(keeping live: [DisplayNotification]) {
        guard let path, let old = file else { return }
        do {
            try StateFile.atomicWrite(live.flatMap(Self.addLine), to: path, mode: 0o600)
        } catch {
            logger.error("cannot compact the notification journal", metadata: ["error": "\(error)"])
            return
        }
        let reopened: OpenFile
        do throws(SystemCallError) {
            reopened = try OpenFile.appending(to: path)
        } catch {
            logger.error(
                "cannot reopen the compacted notification journal; new notifications will not survive a restart",
                metadata: ["errno": "\(error.errno)"]
            )
            return
        }
        old.close()
        file = reopened
        lines = live.count
        // The rewrite holds every live notification; lines not yet written are history now.
        unwritten.removeAll(keepingCapacity: true)
        unwrittenLines = 0
        dirty = false
    }

    /// With nothing live, a long history is dead weight: start the file afresh.
    mutating func truncateIfLong() {
        guard lines > 1000 else { return }
        truncate()
    }

    /// Starts the file afresh (nothing may be live): a box that opted out keeps no trace of what it showed.
    mutating func truncate() {
        guard let file else { return }
        if (try? file.truncate()) != nil {
            lines = 0
            dirty = true
        }
    }

    // MARK: Replay

    /// The notifications a journal holds that were never acknowledged, in order, each once. Unreadable
    /// lines (a power cut can tear the last one; it was never acknowledged to anyone) are skipped with a
    /// log line; an unreadable or missing file holds none.
    static func replay(path: String, logger: Logger) -> [DisplayNotification] {
        guard let data = try? FileSystem.readFile(path, limit: .max) else { return [] }
        var acknowledged = Set<String>()
        var added: [DisplayNotification] = []
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
