import PreflightCore
import PreflightProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A notification from the moment it is queued until Target confirms it: made (a `DisplayNotification`), or, for
/// the display of a prefetched offer by a load without targeting, a record that never becomes an object.
///
/// A plain cached load queues its display on the I/O thread, and in a flood of loads the queue is full and drops
/// one for each it queues. A `DisplayNotification` is an object: an allocation, references to its offer's name,
/// property and members, and a free (on the sender once sent; in a flood on the I/O thread, 10,000 loads later and
/// out of the processor's cache). A record is its offer's `DisplayTemplate` (which the offer holds anyway; not the
/// offer, whose content the cache may let go of while the display waits), its id (written once, as its text), its
/// timestamp and serial, in the queue's ring. Its journal line, its item in a request body, its id in Target's
/// answer and in the journal's acknowledgement are written or compared from those: the bytes a made notification
/// has for the same display (`DisplayNotification.writeDisplayHead`).
///
/// One reference either way (the made notification's object or the record's template), so that a copy, in and out of
/// the queue's ring, the in-flight table and a batch, is a retain and a copy of bytes: an enum of the two cases
/// cost its value witness about 80 instructions a copy, several copies a notification.
///
/// `@unchecked Sendable`: its reference is to one of two immutable `Sendable` classes, held as `AnyObject`.
public struct QueuedNotification: @unchecked Sendable {
    /// The made notification's object (`DisplayNotification.storage`), or the record's `DisplayTemplate`.
    private let object: AnyObject
    private let isRecord: Bool
    /// A record's id; zeros for a made notification.
    private let idText: IDText
    public let timestampMs: Int64
    /// The order it was queued in, unique in the process: the in-flight table is kept in it (`InFlightNotifications`).
    let serial: Int

    /// A generated id's 36 bytes (hex digits and dashes), held in place.
    struct IDText: Sendable {
        private var words: (UInt64, UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0, 0)

        /// A new random one (`RandomUUID`).
        static func random() -> IDText {
            var text = IDText()
            withUnsafeMutableBytes(of: &text.words) {
                RandomUUID.write(to: $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            return text
        }

        func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            withUnsafeBytes(of: words) {
                body(UnsafeBufferPointer(start: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 36))
            }
        }
    }

    private init(object: AnyObject, isRecord: Bool, idText: IDText, timestampMs: Int64, serial: Int) {
        self.object = object
        self.isRecord = isRecord
        self.idText = idText
        self.timestampMs = timestampMs
        self.serial = serial
    }

    /// A made notification, queued.
    static func made(_ notification: DisplayNotification) -> QueuedNotification {
        QueuedNotification(
            object: notification.storage,
            isRecord: false,
            idText: IDText(),
            timestampMs: notification.timestampMs,
            serial: notification.serial
        )
    }

    /// The display of `offer` (prefetched, not decided on the box) by a load without targeting at `timestampMs`,
    /// stamped by the real time: a record, its id and serial drawn now.
    static func display(of offer: CachedOffer, timestampMs: Int64) -> QueuedNotification {
        QueuedNotification(
            object: offer.displayTemplate,
            isRecord: true,
            idText: .random(),
            timestampMs: timestampMs,
            serial: DisplayNotification.nextSerial()
        )
    }

    /// The made notification; nil for a record.
    var notification: DisplayNotification? {
        isRecord ? nil : DisplayNotification(storage: object)
    }

    /// A record's template; nil for a made notification.
    var recordTemplate: DisplayTemplate? {
        isRecord ? unsafeDowncast(object, to: DisplayTemplate.self) : nil
    }

    /// The property token of the offer it counts; nil: the configured property.
    public var property: String? {
        if let template = recordTemplate { return template.property }
        return notification!.property
    }

    public var mboxName: String {
        if let template = recordTemplate { return template.name }
        return notification!.mboxName
    }

    /// Stamped by the box's own clock (`DisplayNotification.stampedByBoxClock`); a record never is.
    public var stampedByBoxClock: Bool {
        notification?.stampedByBoxClock ?? false
    }

    public var id: String {
        withIDBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The id's UTF-8 bytes.
    public func withIDBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let notification { return notification.withIDBytes(body) }
        return idText.withBytes(body)
    }

    /// Whether its id was made here (as every record's is), not read from a journal or a test.
    var hasGeneratedID: Bool {
        notification?.hasGeneratedID ?? true
    }

    /// How many bytes at the start of `bytes` are its generated id; nil when they are not, or its id was read from
    /// a journal or a test (`DisplayNotification.idLength(at:)`).
    func idLength(at bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        if let notification { return notification.idLength(at: bytes) }
        return idText.withBytes { id in
            guard bytes.count >= id.count, memcmp(bytes.baseAddress!, id.baseAddress!, id.count) == 0 else {
                return nil
            }
            return id.count
        }
    }

    /// A generated id as a JSON string, its quotes included; nil for an id read from a journal or a test.
    func withQuotedID<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        if let notification { return notification.withQuotedID(body) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 38) { quoted in
            var cursor = ByteCursor(quoted.baseAddress!)
            cursor.put(UInt8(ascii: "\""))
            idText.withBytes { cursor.put($0) }
            cursor.put(UInt8(ascii: "\""))
            return body(UnsafeBufferPointer(rebasing: quoted[..<cursor.count]))
        }
    }

    /// Writes the id as a JSON string.
    func writeID(to writer: inout JSONWriter) {
        if let notification { return notification.writeID(to: &writer) }
        _ = withQuotedID { writer.bytes.append(contentsOf: $0) }
    }

    /// The most bytes `writeEncoded` writes.
    var maxEncodedCount: Int {
        guard let template = recordTemplate else { return notification!.encodedCount }
        return DisplayNotification.displayHeadCapacity + 2 + template.fragment.count
    }

    /// Writes its Delivery API `notifications` item at `out` (room for `maxEncodedCount` bytes); `digits` writes a
    /// record's timestamp (those of a batch repeat in a flood).
    func writeEncoded(to out: inout ByteCursor, digits: inout RepeatedDigits) {
        guard let template = recordTemplate else { return notification!.writeEncoded(to: &out) }
        idText.withBytes {
            DisplayNotification.writeDisplayHead(id: $0, timestampMs: timestampMs, to: &out, digits: &digits)
        }
        out.put(UInt8(ascii: ","))
        out.put(UnsafeBufferPointer(template.fragment.bytes))
        out.put(UInt8(ascii: "}"))
    }

    /// A record's short journal line (`{"a":…,"i":…}`, its template's `definition`) at `line`, room for
    /// `DisplayNotification.shortDisplayLineCapacity` bytes.
    func writeRecordJournalLine(
        of template: DisplayTemplate,
        to line: inout ByteCursor,
        digits: inout (definition: RepeatedDigits, timestamp: RepeatedDigits)
    ) {
        idText.withBytes { id in
            DisplayNotification.writeShortDisplayLine(
                definition: template.definition,
                id: id,
                timestampMs: timestampMs,
                to: &line,
                digits: &digits
            )
        }
    }

    /// Its Delivery API `notifications` item, encoded.
    public var encoded: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: maxEncodedCount) { buffer, count in
            var cursor = ByteCursor(buffer.baseAddress!)
            var digits = RepeatedDigits()
            writeEncoded(to: &cursor, digits: &digits)
            count = cursor.count
        }
    }
}
