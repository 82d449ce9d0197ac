import PreflightCore
import PreflightProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A notification for Target: a prefetched mbox was shown (`display`), or an offer was clicked (`click`).
///
/// Held as the encoded JSON of its Delivery API `notifications` item: it is written to the journal and
/// later into a Delivery request as those bytes, never rebuilt as a tree.
///
/// A value whose fields and encoded item live in one immutable object (its item in the object's tail): a copy
/// (into a batch, the in-flight table, a request) is one reference count, where the fields themselves were
/// five references and about 350 instructions to copy and destroy; a notification was copied six times
/// between its queueing and Target's answer. One allocation, its item written straight into it: an array of
/// its own cost a cached load about 500 instructions more to make and the sender one more `free`.
///
/// `@unchecked Sendable`: its one stored property is that object, which the standard library declares not
/// `Sendable` (a `ManagedBuffer` may be mutated); this one is written only while it is made, before any other
/// thread can see it, and only read after.
public struct DisplayNotification: @unchecked Sendable, Hashable {
    private struct Header {
        /// The id as given, for one read from a journal or a test; nil for one made here, whose id is the
        /// 36 plain bytes at `idBytes` in the item (no `String` made and freed per cached load).
        let storedID: String?
        let idBytes: Range<Int>
        let timestampMs: Int64
        let mboxName: String
        let property: String?
        let stampedByBoxClock: Bool
        /// The item's length in bytes, in the tail after `linePrefix`.
        let count: Int
        /// The journal line's length: the whole tail (`journalLine`).
        let lineCount: Int
        let timestampDigits: Range<Int>
        let serial: Int
        /// The offer's `notificationDefinition` for a display of a cached offer, whose `fragment` (in the item)
        /// the journal writes once per file; 0 for any other (its journal line is the whole one).
        let definition: Int
        let fragment: Range<Int>
    }

    /// Written once, when made, and never changed after.
    private final class Fields: ManagedBuffer<Header, UInt8> {
        /// A notification whose item `write` writes into the tail (at most `capacity` bytes), returning the
        /// header that says how many it wrote.
        static func make(capacity: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Header) -> Fields {
            let buffer = create(minimumCapacity: capacity) { buffer in
                buffer.withUnsafeMutablePointerToElements(write)
            }
            return unsafeDowncast(buffer, to: Fields.self)
        }

        /// The encoded item.
        func withItem<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            withUnsafeMutablePointers { header, bytes in
                body(
                    UnsafeBufferPointer(
                        start: bytes + DisplayNotification.linePrefix.utf8CodeUnitCount,
                        count: header.pointee.count
                    )
                )
            }
        }

        /// The journal line: the whole tail.
        func withLine<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            withUnsafeMutablePointers { header, bytes in
                body(UnsafeBufferPointer(start: bytes, count: header.pointee.lineCount))
            }
        }

        // Read through the header's pointer: `header` itself is a class's stored property, and each read of it
        // paid the run-time exclusivity check (`swift_beginAccess`, about 340 instructions per notification).
        var storedID: String? { withUnsafeMutablePointerToHeader { $0.pointee.storedID } }
        var idBytes: Range<Int> { withUnsafeMutablePointerToHeader { $0.pointee.idBytes } }
        var timestampMs: Int64 { withUnsafeMutablePointerToHeader { $0.pointee.timestampMs } }
        var mboxName: String { withUnsafeMutablePointerToHeader { $0.pointee.mboxName } }
        var property: String? { withUnsafeMutablePointerToHeader { $0.pointee.property } }
        var stampedByBoxClock: Bool { withUnsafeMutablePointerToHeader { $0.pointee.stampedByBoxClock } }
        var timestampDigits: Range<Int> { withUnsafeMutablePointerToHeader { $0.pointee.timestampDigits } }
        var serial: Int { withUnsafeMutablePointerToHeader { $0.pointee.serial } }
        var definition: Int { withUnsafeMutablePointerToHeader { $0.pointee.definition } }
    }

    private var fields: Fields

    public var id: String {
        fields.storedID ?? withIDBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The id's UTF-8 bytes, without making a `String` of a generated one.
    public func withIDBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if var stored = fields.storedID { return stored.withUTF8(body) }
        return fields.withItem { body(UnsafeBufferPointer(rebasing: $0[fields.idBytes])) }
    }

    /// How many bytes at the start of `bytes` are this notification's generated id (its 36 hex digits and dashes,
    /// compared in place); nil when they are not, and for an id read from a journal or a test, which is left to
    /// be read as JSON (`NotificationAnswer.read`'s `sent`).
    func idLength(at bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard fields.storedID == nil else { return nil }
        let range = fields.idBytes
        return fields.withItem { item in
            guard bytes.count >= range.count, let start = bytes.baseAddress,
                memcmp(start, item.baseAddress! + range.lowerBound, range.count) == 0
            else { return nil }
            return range.count
        }
    }

    /// Whether its id was made here (36 hex digits and dashes in its item), not read from a journal or a test.
    var hasGeneratedID: Bool { fields.storedID == nil }

    /// A generated id as a JSON string, its quotes included, in place in the item (`{"id":"…"` starts it);
    /// nil for an id read from a journal or a test, which may need escaping (`writeID`).
    func withQuotedID<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard fields.storedID == nil else { return nil }
        let range = fields.idBytes
        return fields.withItem {
            body(UnsafeBufferPointer(rebasing: $0[(range.lowerBound - 1)..<(range.upperBound + 1)]))
        }
    }

    /// Writes the id as a JSON string: a generated id's bytes as they are (hex digits and dashes).
    public func writeID(to writer: inout JSONWriter) {
        if let stored = fields.storedID {
            writer.writeString(stored)
        } else {
            _ = withQuotedID { writer.bytes.append(contentsOf: $0) }
        }
    }
    public var timestampMs: Int64 { fields.timestampMs }
    public var mboxName: String { fields.mboxName }
    /// The property token of the offer it counts; nil: the configured property. A Delivery request carries one
    /// property, so notifications are batched by it.
    public var property: String? { fields.property }
    /// Stamped by the box's own clock before any upstream response told the agent the real time; it is
    /// stamped again when it is sent (`restamp`), by its age on the monotonic clock when it has one.
    public var stampedByBoxClock: Bool { fields.stampedByBoxClock }
    /// The Delivery API `notifications` item, encoded:
    /// `{id, type, timestamp, mbox: {name, state}, tokens, parameters, profileParameters, product, order}`.
    public var encoded: [UInt8] { withEncoded { [UInt8]($0) } }

    /// The encoded item in place, for a request body to copy.
    public func withEncoded<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        fields.withItem(body)
    }

    /// Its journal line in place (`NotificationJournal`), newline included: `{"add":<item>}`, with `"property"`
    /// when it has one and `"boxClock":true` when stamped by the box's clock. Written around the item when the
    /// notification is made, so that journaling it is one copy: four appends cost a cached load about 300
    /// instructions.
    func withJournalLine<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        fields.withLine(body)
    }

    /// The offer this display's short journal line refers to (`CachedOffer.notificationDefinition`); 0: none,
    /// the journal writes its whole line (a click, one read back from a journal, one stamped again).
    var definition: Int { fields.definition }

    /// At most how many bytes `writeShortJournalLine` writes.
    var shortJournalLineCapacity: Int {
        fields.withUnsafeMutablePointerToHeader { $0.pointee.count } + JSONWriter.maxIntegerLength
            + Self.shortLinePrefix.utf8CodeUnitCount + Self.shortLineMiddle.utf8CodeUnitCount
            + Self.boxClockMember.utf8CodeUnitCount + 2
    }

    /// Its short journal line, newline included: `{"a":<definition>,"i":<the item without the offer's
    /// members>}` (and `"boxClock":true` as in the whole line). About 90 bytes where the whole line is 240 and
    /// more (a real offer's mbox state and tokens): the journal is written for every cached load.
    func writeShortJournalLine(to line: inout ByteCursor) {
        fields.withUnsafeMutablePointers { header, tail in
            let item = UnsafePointer(tail + Self.linePrefix.utf8CodeUnitCount)
            let fragment = header.pointee.fragment
            line.put(Self.shortLinePrefix)
            line.skip(JSONWriter.writeDigits(Int64(header.pointee.definition), to: line.next))
            line.put(Self.shortLineMiddle)
            // The item up to the comma before the fragment, then what follows it (targeting, the closing brace).
            line.put(UnsafeBufferPointer(start: item, count: fragment.lowerBound - 1))
            line.put(
                UnsafeBufferPointer(
                    start: item + fragment.upperBound,
                    count: header.pointee.count - fragment.upperBound
                )
            )
            if header.pointee.stampedByBoxClock { line.put(Self.boxClockMember) }
            line.put(UInt8(ascii: "}"))
            line.put(0x0A)
        }
    }

    /// The line defining its offer for the short lines after it in the same file, newline included:
    /// `{"def":<definition>,"fragment":{<the offer's members>}}`, with `"property"` when it has one.
    func appendDefinitionLine(to bytes: inout [UInt8]) {
        var writer = JSONWriter(reservingCapacity: 0)
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        writer.appendASCII("{\"def\":")
        writer.writeInteger(Int64(definition))
        writer.appendASCII(",\"fragment\":{")
        fields.withUnsafeMutablePointers { header, tail in
            let fragment = header.pointee.fragment
            writer.bytes.append(
                contentsOf: UnsafeBufferPointer(
                    start: tail + Self.linePrefix.utf8CodeUnitCount + fragment.lowerBound,
                    count: fragment.count
                )
            )
        }
        writer.appendASCII("}")
        writer.bytes.append(contentsOf: Self.propertyMember(property))
        writer.appendASCII("}\n")
    }

    private static let shortLinePrefix: StaticString = #"{"a":"#
    private static let shortLineMiddle: StaticString = #","i":"#

    /// What comes before the item in the tail: the start of its journal line.
    fileprivate static let linePrefix: StaticString = #"{"add":"#
    private static let boxClockMember: StaticString = #","boxClock":true"#

    /// The journal line's members after the item for `property` (nil for none: every box with one publisher).
    private static func propertyMember(_ property: String?) -> [UInt8] {
        guard let property else { return [] }
        var member = JSONWriter(reservingCapacity: property.utf8.count + 16)
        member.appendASCII(",\"property\":")
        member.writeString(property)
        return member.bytes
    }

    /// The bytes the line adds around an item with `propertyMember`, at most.
    private static func lineExtra(_ propertyMember: [UInt8]) -> Int {
        linePrefix.utf8CodeUnitCount + propertyMember.count + boxClockMember.utf8CodeUnitCount + 2
    }

    /// Ends the journal line after the item written at `line`.
    private static func endLine(_ line: inout ByteCursor, propertyMember: [UInt8], stampedByBoxClock: Bool) {
        line.put(propertyMember)
        if stampedByBoxClock { line.put(boxClockMember) }
        line.put(UInt8(ascii: "}"))
        line.put(0x0A)
    }
    /// This run's number for it, unique in the process and kept by `restamp`: the queue's in-flight table is
    /// keyed by it (an integer's hash, not a 36-character id's, twice per notification).
    var serial: Int { fields.serial }

    private static let serials = Atomic<Int>(0)

    public static func == (lhs: DisplayNotification, rhs: DisplayNotification) -> Bool {
        lhs.fields === rhs.fields
            || (lhs.id == rhs.id && lhs.timestampMs == rhs.timestampMs && lhs.mboxName == rhs.mboxName
                && lhs.property == rhs.property && lhs.stampedByBoxClock == rhs.stampedByBoxClock
                && lhs.withEncoded { left in rhs.withEncoded { left.elementsEqual($0) } })
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(timestampMs)
    }

    /// Built on a cache hit from the offer's prepared fragment: no JSON tree, one buffer.
    ///
    /// An offer decided on the box gets the notification Adobe's engines send for an executed mbox
    /// (notificationProvider.js): an `impressionId`, and no parameters.
    public static func display(
        of offer: CachedOffer,
        targeting: MboxTargeting?,
        profileParameters: [Parameter],
        timestampMs: Int64,
        stampedByBoxClock: Bool = false
    ) -> DisplayNotification {
        // Two calls rather than `onDevice ? nil : targeting`: that expression copied the targeting (an outlined
        // copy through its enum tag, about 120 instructions per cached load, for a nil one).
        guard offer.decidedOnDevice else {
            return make(
                typeAndTimestamp: "\",\"type\":\"display\",\"timestamp\":",
                mboxName: offer.name,
                property: offer.property,
                fragment: offer.notificationFragment,
                definition: offer.notificationDefinition,
                targeting: targeting,
                profileParameters: profileParameters,
                timestampMs: timestampMs,
                stampedByBoxClock: stampedByBoxClock
            )
        }
        return make(
            typeAndTimestamp: "\",\"type\":\"display\",\"timestamp\":",
            mboxName: offer.name,
            property: offer.property,
            fragment: offer.notificationFragment,
            definition: offer.notificationDefinition,
            targeting: nil,
            profileParameters: [],
            timestampMs: timestampMs,
            stampedByBoxClock: stampedByBoxClock,
            withImpressionId: true
        )
    }

    /// A click on `mbox`: its click metric's event token (`clickedLocation`).
    public static func click(
        mbox name: String,
        property: String?,
        state: String?,
        token: String,
        targeting: MboxTargeting,
        profileParameters: [Parameter],
        timestampMs: Int64,
        stampedByBoxClock: Bool = false
    ) -> DisplayNotification {
        make(
            typeAndTimestamp: "\",\"type\":\"click\",\"timestamp\":",
            mboxName: name,
            property: property,
            fragment: fragment(mbox: name, state: state, tokens: [token]),
            definition: 0,
            targeting: targeting,
            profileParameters: profileParameters,
            timestampMs: timestampMs,
            stampedByBoxClock: stampedByBoxClock
        )
    }

    /// `"mbox":{"name":…,"state":…},"tokens":[…]`: the members of a notification that depend only on the
    /// mbox and its tokens.
    static func fragment(mbox name: String, state: String?, tokens: [String]) -> [UInt8] {
        var fragment = JSONWriter()
        fragment.appendASCII("\"mbox\":{\"name\":")
        fragment.writeString(name)
        if let state {
            fragment.appendASCII(",\"state\":")
            fragment.writeString(state)
        }
        fragment.appendASCII("},\"tokens\":")
        fragment.write(.array(tokens.map { .string($0) }))
        return fragment.bytes
    }

    /// `typeAndTimestamp` is the literal between the id and the timestamp's digits, type included: one append.
    private static func make(
        typeAndTimestamp: StaticString,
        mboxName: String,
        property: String?,
        fragment: [UInt8],
        definition: Int,
        targeting: MboxTargeting?,
        profileParameters: [Parameter],
        timestampMs: Int64,
        stampedByBoxClock: Bool,
        withImpressionId: Bool = false
    ) -> DisplayNotification {
        // The members a load's targeting adds (none for most loads), encoded first so that the item is then
        // written in one pass into one buffer: a display notification cost the I/O thread about 2,360
        // instructions through a JSONWriter's appends, each with its capacity check, and 1,740 written so
        // (tools/bench --profile).
        // nil: none (the plain cached load's), with no value to make, copy and destroy (`MboxTargeting` holds
        // optional product and order parameters: about 680 instructions per load for three copies).
        // `targeting == nil` was the Equatable `==` of two optionals, which copied both into a tuple (about 150
        // instructions per load); a `switch` looks at the case in place.
        var hasTargeting = !profileParameters.isEmpty
        switch targeting {
        case .some: hasTargeting = true
        case .none: break
        }
        var targetingBytes: [UInt8] = []
        let targetingMembers =
            hasTargeting
            ? DeliveryCodec.targetingJSON(targeting ?? MboxTargeting(), profileParameters: profileParameters)
            : JSONObject()
        if !targetingMembers.isEmpty {
            var writer = JSONWriter(reservingCapacity: 64 * targetingMembers.count)
            for member in targetingMembers {
                writer.appendASCII(",")
                writer.writeString(member.key)
                writer.appendASCII(":")
                writer.write(member.value)
            }
            targetingBytes = writer.bytes
        }
        let idLiteral: StaticString = "{\"id\":\""
        let impressionLiteral: StaticString = "\",\"impressionId\":\""
        let propertyMember = propertyMember(property)
        let capacity =
            idLiteral.utf8CodeUnitCount + 36 + (withImpressionId ? impressionLiteral.utf8CodeUnitCount + 36 : 0)
            + typeAndTimestamp.utf8CodeUnitCount + JSONWriter.maxIntegerLength + 1 + fragment.count
            + targetingBytes.count + 1 + lineExtra(propertyMember)
        let serial = Self.serials.add(1, ordering: .relaxed).newValue
        let fields = Fields.make(capacity: capacity) { out in
            out.update(from: linePrefix.utf8Start, count: linePrefix.utf8CodeUnitCount)
            var item = ByteCursor(out + linePrefix.utf8CodeUnitCount)
            item.put(idLiteral)
            RandomUUID.write(to: item.next)  // hex digits and dashes: nothing to escape
            let idBytes = item.count..<(item.count + 36)
            item.skip(36)
            if withImpressionId {
                item.put(impressionLiteral)
                RandomUUID.write(to: item.next)
                item.skip(36)
            }
            item.put(typeAndTimestamp)
            let length = JSONWriter.writeDigits(timestampMs, to: item.next)
            let digits = item.count..<(item.count + length)
            item.skip(length)
            item.put(UInt8(ascii: ","))
            let fragmentStart = item.count
            item.put(fragment)
            let fragmentRange = fragmentStart..<item.count
            item.put(targetingBytes)
            item.put(UInt8(ascii: "}"))
            let count = item.count
            endLine(&item, propertyMember: propertyMember, stampedByBoxClock: stampedByBoxClock)
            return Header(
                storedID: nil,
                idBytes: idBytes,
                timestampMs: timestampMs,
                mboxName: mboxName,
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                count: count,
                lineCount: linePrefix.utf8CodeUnitCount + item.count,
                timestampDigits: digits,
                serial: serial,
                definition: definition,
                fragment: fragmentRange
            )
        }
        return DisplayNotification(fields: fields)
    }

    private init(fields: Fields) {
        self.fields = fields
    }

    /// A notification whose item is `encoded`, copied into its own object.
    private init(
        storedID: String?,
        idBytes: Range<Int>,
        timestampMs: Int64,
        mboxName: String,
        property: String?,
        stampedByBoxClock: Bool,
        encoded: UnsafeBufferPointer<UInt8>,
        timestampDigits: Range<Int>,
        serial: Int = serials.add(1, ordering: .relaxed).newValue
    ) {
        let propertyMember = Self.propertyMember(property)
        fields = Fields.make(capacity: encoded.count + Self.lineExtra(propertyMember)) { out in
            out.update(from: Self.linePrefix.utf8Start, count: Self.linePrefix.utf8CodeUnitCount)
            var line = ByteCursor(out + Self.linePrefix.utf8CodeUnitCount)
            line.put(encoded)
            Self.endLine(&line, propertyMember: propertyMember, stampedByBoxClock: stampedByBoxClock)
            return Header(
                storedID: storedID,
                idBytes: idBytes,
                timestampMs: timestampMs,
                mboxName: mboxName,
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                count: encoded.count,
                lineCount: Self.linePrefix.utf8CodeUnitCount + line.count,
                timestampDigits: timestampDigits,
                serial: serial,
                definition: 0,
                fragment: 0..<0
            )
        }
    }

    /// From a Delivery API `notifications` item (a journal entry; tests): `id` and `timestamp` are
    /// required, the other members are kept as they are.
    init?(deliveryJSON: JSONValue, property: String? = nil, stampedByBoxClock: Bool = false) {
        guard case .object(let item) = deliveryJSON, let id = item["id"]?.stringValue,
            let timestamp = item["timestamp"]?.doubleValue
        else {
            return nil
        }
        var writer = JSONWriter(reservingCapacity: 256)
        writer.appendASCII("{\"id\":")
        writer.writeString(id)
        writer.appendASCII(",\"timestamp\":")
        let digitsStart = writer.bytes.count
        writer.writeInteger(Int64(timestamp))
        let digits = digitsStart..<writer.bytes.count
        for member in item where member.key != "id" && member.key != "timestamp" {
            writer.appendASCII(",")
            writer.writeString(member.key)
            writer.appendASCII(":")
            writer.write(member.value)
        }
        writer.appendASCII("}")
        self = writer.bytes.withUnsafeBufferPointer { encoded in
            DisplayNotification(
                storedID: id,
                idBytes: 0..<0,
                timestampMs: Int64(timestamp),
                mboxName: item["mbox"]?["name"]?.stringValue ?? "",
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                encoded: encoded,
                timestampDigits: digits
            )
        }
    }

    /// Sets the timestamp, now that the real time is known.
    public mutating func restamp(_ timestampMs: Int64) {
        var digits = JSONWriter(reservingCapacity: 20)
        digits.writeInteger(timestampMs)
        var encoded = self.encoded
        encoded.replaceSubrange(fields.timestampDigits, with: digits.bytes)
        let start = fields.timestampDigits.lowerBound
        // The id comes before the timestamp: its bytes stay where they are.
        fields = encoded.withUnsafeBufferPointer { encoded in
            DisplayNotification(
                storedID: fields.storedID,
                idBytes: fields.idBytes,
                timestampMs: timestampMs,
                mboxName: fields.mboxName,
                property: fields.property,
                stampedByBoxClock: false,
                encoded: encoded,
                timestampDigits: start..<(start + digits.bytes.count),
                serial: fields.serial
            ).fields
        }
    }
}
