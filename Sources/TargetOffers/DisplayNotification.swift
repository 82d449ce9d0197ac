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
/// Held as the encoded JSON of its Delivery API `notifications` item, in pieces: its own members (id,
/// type, timestamp, and the load's targeting) in its object, and the members that depend only on the offer
/// (`"mbox":{…},"tokens":[…]`, `fragment`), which a display shares with its cached offer. Written into a
/// Delivery request as those bytes, never rebuilt as a tree.
///
/// A value whose fields and bytes live in one immutable object (its bytes in the object's tail): a copy (into
/// a batch, the in-flight table, a request) is one reference count, where the fields themselves were five
/// references and about 350 instructions to copy and destroy; a notification was copied six times between its
/// queueing and Target's answer. One allocation, its bytes written straight into it: an array of its own cost
/// a cached load about 500 instructions more to make and the sender one more `free`.
///
/// The tail is the notification's short journal line, `{"a":<definition>,"i":<its own members>}` (and
/// `"boxClock":true`), with the item's own members inside it: journaling a display is one copy of about 90
/// bytes (`NotificationJournal`), and a queued notification holds no copy of its offer's mbox state and tokens
/// (most of an item: 240 bytes for the bench's offer, more for a real one's).
///
/// `@unchecked Sendable`: its one stored property is that object, which the standard library declares not
/// `Sendable` (a `ManagedBuffer` may be mutated); this one is written only while it is made, before any other
/// thread can see it, and only read after.
public struct DisplayNotification: @unchecked Sendable, Hashable {
    private struct Header {
        /// The id as given, for one read from a journal or a test; nil for one made here, whose id is the
        /// 36 plain bytes at `idBytes` in the tail (no `String` made and freed per cached load).
        let storedID: String?
        let idBytes: Range<Int>
        let timestampMs: Int64
        let mboxName: String
        let property: String?
        let stampedByBoxClock: Bool
        /// The item's members before `fragment`, `{"id":…,"timestamp":…`, in the tail.
        let head: Range<Int>
        /// The item's members after `fragment` (a load's targeting) and its closing brace, in the tail.
        let rest: Range<Int>
        /// The short journal line's length: the whole tail.
        let lineCount: Int
        let timestampDigits: Range<Int>
        let serial: Int
        /// The offer's `DisplayTemplate.definition` for a display of a cached offer, whose `fragment` the journal
        /// writes once per file; 0 for any other (its journal line is the whole one).
        let definition: Int
        /// The members between `head` and `rest` without their braces: `"mbox":{…},"tokens":[…]` (a display
        /// shares its offer's); empty for an item without other members. Held here, and read through
        /// `fragmentBytes` (its bytes, which live as long as it does) with no reference count to pay: a request
        /// body copies it for each notification.
        let fragment: Fragment
        let fragmentBytes: UnsafeBufferPointer<UInt8>
    }

    /// Bytes made once and shared: an offer's members of its display notifications (`DisplayTemplate`), at an
    /// address that stays put while the object lives (allocated by it, freed by its `deinit`).
    ///
    /// `@unchecked Sendable`: written only in `init`, read only after.
    final class Fragment: @unchecked Sendable {
        let bytes: UnsafeMutableBufferPointer<UInt8>

        init(_ contents: [UInt8]) {
            bytes = .allocate(capacity: contents.count)
            _ = bytes.initialize(from: contents)
        }

        deinit {
            bytes.deallocate()
        }

        var count: Int { bytes.count }
    }

    /// Written once, when made, and never changed after.
    private final class Fields: ManagedBuffer<Header, UInt8> {
        /// A notification whose tail `write` writes (at most `capacity` bytes), returning the header that says
        /// where it wrote what.
        static func make(capacity: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Header) -> Fields {
            let buffer = create(minimumCapacity: capacity) { buffer in
                buffer.withUnsafeMutablePointerToElements(write)
            }
            return unsafeDowncast(buffer, to: Fields.self)
        }

        /// The tail's bytes in `range`.
        func withBytes<Result>(_ range: Range<Int>, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            withUnsafeMutablePointerToElements {
                body(UnsafeBufferPointer(start: $0 + range.lowerBound, count: range.count))
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
        var head: Range<Int> { withUnsafeMutablePointerToHeader { $0.pointee.head } }
        var rest: Range<Int> { withUnsafeMutablePointerToHeader { $0.pointee.rest } }
        var lineCount: Int { withUnsafeMutablePointerToHeader { $0.pointee.lineCount } }
        var fragment: Fragment { withUnsafeMutablePointerToHeader { $0.pointee.fragment } }
        var fragmentBytes: UnsafeBufferPointer<UInt8> { withUnsafeMutablePointerToHeader { $0.pointee.fragmentBytes } }
    }

    private var fields: Fields

    public var id: String {
        fields.storedID ?? withIDBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// The id's UTF-8 bytes, without making a `String` of a generated one.
    public func withIDBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if var stored = fields.storedID { return stored.withUTF8(body) }
        return fields.withBytes(fields.idBytes, body)
    }

    /// How many bytes at the start of `bytes` are this notification's generated id (its 36 hex digits and dashes,
    /// compared in place); nil when they are not, and for an id read from a journal or a test, which is left to
    /// be read as JSON (`NotificationAnswer.read`'s `sent`).
    func idLength(at bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard fields.storedID == nil else { return nil }
        return fields.withBytes(fields.idBytes) { id in
            guard bytes.count >= id.count, let start = bytes.baseAddress, memcmp(start, id.baseAddress!, id.count) == 0
            else { return nil }
            return id.count
        }
    }

    /// Whether its id was made here (36 hex digits and dashes in its item), not read from a journal or a test.
    var hasGeneratedID: Bool { fields.storedID == nil }

    /// A generated id as a JSON string, its quotes included, in place in the item (`{"id":"…"` starts it);
    /// nil for an id read from a journal or a test, which may need escaping (`writeID`).
    func withQuotedID<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard fields.storedID == nil else { return nil }
        let range = fields.idBytes
        return fields.withBytes((range.lowerBound - 1)..<(range.upperBound + 1), body)
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
    public var encoded: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: encodedCount) { buffer, count in
            var cursor = ByteCursor(buffer.baseAddress!)
            writeEncoded(to: &cursor)
            count = cursor.count
        }
    }

    /// The item's length in bytes.
    public var encodedCount: Int {
        fields.withUnsafeMutablePointerToHeader { header in
            let fragment = header.pointee.fragmentBytes.count
            return header.pointee.head.count + (fragment == 0 ? 0 : fragment + 1) + header.pointee.rest.count
        }
    }

    /// Writes the item at `out` (room for `encodedCount` bytes), for a request body: its own members around
    /// its offer's.
    public func writeEncoded(to out: inout ByteCursor) {
        fields.withUnsafeMutablePointers { header, tail in
            let head = header.pointee.head
            out.put(UnsafeBufferPointer(start: tail + head.lowerBound, count: head.count))
            let fragment = header.pointee.fragmentBytes
            if !fragment.isEmpty {
                out.put(UInt8(ascii: ","))
                out.put(fragment)
            }
            let rest = header.pointee.rest
            // Most often the closing brace alone: one byte, not a copy.
            if rest.count == 1 {
                out.put(tail[rest.lowerBound])
            } else {
                out.put(UnsafeBufferPointer(start: tail + rest.lowerBound, count: rest.count))
            }
        }
    }

    /// Its whole journal line, newline included: `{"add":<item>}`, with `"property"` when it has one and
    /// `"boxClock":true` when stamped by the box's clock. What a notification without a definition is journaled
    /// as, and what a compaction writes for every one.
    func appendWholeJournalLine(to bytes: inout [UInt8]) {
        let propertyMember = Self.propertyMember(property)
        var writer = JSONWriter(reservingCapacity: 0)
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        writer.appendComposed(
            capacity: Self.addLinePrefix.utf8CodeUnitCount + encodedCount + propertyMember.count
                + Self.boxClockMember.utf8CodeUnitCount + 2
        ) { line in
            line.put(Self.addLinePrefix)
            writeEncoded(to: &line)
            line.put(propertyMember)
            if stampedByBoxClock { line.put(Self.boxClockMember) }
            line.put(UInt8(ascii: "}"))
            line.put(0x0A)
        }
    }

    /// The offer this display's short journal line refers to (`DisplayTemplate.definition`); 0: none,
    /// the journal writes its whole line (a click, one read back from a journal).
    var definition: Int { fields.definition }

    /// Its short journal line in place, newline included: `{"a":<definition>,"i":<the item without the offer's
    /// members>}` (and `"boxClock":true` as in the whole line). About 90 bytes where the whole line is 240 and
    /// more (a real offer's mbox state and tokens): the journal is written for every cached load. Meaningful
    /// only with a `definition`.
    func withShortJournalLine<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        fields.withBytes(0..<fields.lineCount, body)
    }

    /// The line defining its offer for the short lines after it in the same file, newline included:
    /// `{"def":<definition>,"fragment":{<the offer's members>}}`, with `"property"` when it has one.
    func appendDefinitionLine(to bytes: inout [UInt8]) {
        Self.appendDefinitionLine(
            definition: definition,
            fragment: fields.fragmentBytes,
            property: property,
            to: &bytes
        )
    }

    /// The `def` line of an offer whose display notifications hold `fragment`.
    static func appendDefinitionLine(
        definition: Int,
        fragment: UnsafeBufferPointer<UInt8>,
        property: String?,
        to bytes: inout [UInt8]
    ) {
        var writer = JSONWriter(reservingCapacity: 0)
        swap(&writer.bytes, &bytes)
        defer { swap(&writer.bytes, &bytes) }
        writer.appendASCII("{\"def\":")
        writer.writeInteger(Int64(definition))
        writer.appendASCII(",\"fragment\":{")
        writer.bytes.append(contentsOf: fragment)
        writer.appendASCII("}")
        writer.bytes.append(contentsOf: Self.propertyMember(property))
        writer.appendASCII("}\n")
    }

    private static let addLinePrefix: StaticString = #"{"add":"#
    private static let idLiteral: StaticString = #"{"id":""#
    private static let displayTypeAndTimestamp: StaticString = #"","type":"display","timestamp":"#
    private static let shortLinePrefix: StaticString = #"{"a":"#
    private static let shortLineMiddle: StaticString = #","i":"#
    private static let boxClockMember: StaticString = #","boxClock":true"#

    /// The journal line's members after the item for `property` (nil for none: every box with one publisher).
    private static func propertyMember(_ property: String?) -> [UInt8] {
        guard let property else { return [] }
        var member = JSONWriter(reservingCapacity: property.utf8.count + 16)
        member.appendASCII(",\"property\":")
        member.writeString(property)
        return member.bytes
    }

    /// The bytes the short line adds around the item's own members, at most.
    private static let shortLineExtra =
        shortLinePrefix.utf8CodeUnitCount + JSONWriter.maxIntegerLength + shortLineMiddle.utf8CodeUnitCount
        + boxClockMember.utf8CodeUnitCount + 2

    /// A notification's object: its tail the short journal line around the item's own members, `head` (written by
    /// `writeHead`, which returns where it put the id and the timestamp's digits) and `rest`; `capacity` the most
    /// `writeHead` and `rest` write.
    @inline(__always)
    private static func makeFields(
        capacity: Int,
        storedID: String?,
        timestampMs: Int64,
        mboxName: String,
        property: String?,
        stampedByBoxClock: Bool,
        serial: Int,
        definition: Int,
        fragment: Fragment,
        rest: UnsafeBufferPointer<UInt8>,
        closing: Bool,
        writeHead: (inout ByteCursor) -> (id: Range<Int>, digits: Range<Int>)
    ) -> Fields {
        Fields.make(capacity: capacity + shortLineExtra) { out in
            var line = ByteCursor(out)
            line.put(shortLinePrefix)
            line.skip(JSONWriter.writeDigits(Int64(definition), to: line.next))
            line.put(shortLineMiddle)
            let headStart = line.count
            let written = writeHead(&line)
            let head = headStart..<line.count
            line.put(rest)
            if closing { line.put(UInt8(ascii: "}")) }
            let restRange = head.upperBound..<line.count
            if stampedByBoxClock { line.put(boxClockMember) }
            line.put(UInt8(ascii: "}"))
            line.put(0x0A)
            return Header(
                storedID: storedID,
                idBytes: written.id,
                timestampMs: timestampMs,
                mboxName: mboxName,
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                head: head,
                rest: restRange,
                lineCount: line.count,
                timestampDigits: written.digits,
                serial: serial,
                definition: definition,
                fragment: fragment,
                fragmentBytes: UnsafeBufferPointer(fragment.bytes)
            )
        }
    }

    /// This run's number for it, unique in the process and kept by `restamp`: the queue's in-flight table is
    /// keyed by it (an integer's hash, not a 36-character id's, twice per notification).
    var serial: Int { fields.serial }

    private static let serials = Atomic<Int>(0)

    public static func == (lhs: DisplayNotification, rhs: DisplayNotification) -> Bool {
        lhs.fields === rhs.fields
            || (lhs.id == rhs.id && lhs.timestampMs == rhs.timestampMs && lhs.mboxName == rhs.mboxName
                && lhs.property == rhs.property && lhs.stampedByBoxClock == rhs.stampedByBoxClock
                && lhs.encoded == rhs.encoded)
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
                typeAndTimestamp: displayTypeAndTimestamp,
                mboxName: offer.name,
                property: offer.property,
                fragment: offer.displayTemplate.fragment,
                definition: offer.displayTemplate.definition,
                targeting: targeting,
                profileParameters: profileParameters,
                timestampMs: timestampMs,
                stampedByBoxClock: stampedByBoxClock
            )
        }
        return make(
            typeAndTimestamp: displayTypeAndTimestamp,
            mboxName: offer.name,
            property: offer.property,
            fragment: offer.displayTemplate.fragment,
            definition: offer.displayTemplate.definition,
            targeting: nil,
            profileParameters: [],
            timestampMs: timestampMs,
            stampedByBoxClock: stampedByBoxClock,
            withImpressionId: true
        )
    }

    /// The most bytes `writeDisplayHead` writes.
    static let displayHeadCapacity =
        idLiteral.utf8CodeUnitCount + 36 + displayTypeAndTimestamp.utf8CodeUnitCount + JSONWriter.maxIntegerLength

    /// The members of a display's item before its offer's, `{"id":"…","type":"display","timestamp":…`, for a queued
    /// record (`QueuedNotification`): the bytes `display(of:…)` writes for a load without targeting. `digits` writes
    /// the timestamp's (kept across a batch or the journal, where timestamps repeat).
    static func writeDisplayHead(
        id: UnsafeBufferPointer<UInt8>,
        timestampMs: Int64,
        to out: inout ByteCursor,
        digits timestamp: inout RepeatedDigits
    ) {
        out.put(idLiteral)
        out.put(id)
        out.put(displayTypeAndTimestamp)
        timestamp.write(timestampMs, to: &out)
    }

    /// The most bytes `writeShortDisplayLine` writes.
    static let shortDisplayLineCapacity = shortLineExtra + displayHeadCapacity + 1

    /// The short journal line of a display whose head `writeDisplayHead` writes, as `display(of:…)` makes it:
    /// `{"a":<definition>,"i":{"id":"…","type":"display","timestamp":…}}`, its newline included.
    static func writeShortDisplayLine(
        definition: Int,
        id: UnsafeBufferPointer<UInt8>,
        timestampMs: Int64,
        to line: inout ByteCursor,
        digits: inout (definition: RepeatedDigits, timestamp: RepeatedDigits)
    ) {
        line.put(shortLinePrefix)
        digits.definition.write(Int64(definition), to: &line)
        line.put(shortLineMiddle)
        writeDisplayHead(id: id, timestampMs: timestampMs, to: &line, digits: &digits.timestamp)
        line.put(UInt8(ascii: "}"))
        line.put(UInt8(ascii: "}"))
        line.put(0x0A)
    }

    /// A new notification's number (`serial`): made notifications and queued records draw from the one counter, so
    /// the in-flight table orders both.
    static func nextSerial() -> Int {
        serials.add(1, ordering: .relaxed).newValue
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
    static func fragment(mbox name: String, state: String?, tokens: [String]) -> Fragment {
        var fragment = JSONWriter()
        fragment.appendASCII("\"mbox\":{\"name\":")
        fragment.writeString(name)
        if let state {
            fragment.appendASCII(",\"state\":")
            fragment.writeString(state)
        }
        fragment.appendASCII("},\"tokens\":")
        fragment.write(.array(tokens.map { .string($0) }))
        return Fragment(fragment.bytes)
    }

    /// `typeAndTimestamp` is the literal between the id and the timestamp's digits, type included: one append.
    private static func make(
        typeAndTimestamp: StaticString,
        mboxName: String,
        property: String?,
        fragment: Fragment,
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
        let impressionLiteral: StaticString = "\",\"impressionId\":\""
        let capacity =
            idLiteral.utf8CodeUnitCount + 36 + (withImpressionId ? impressionLiteral.utf8CodeUnitCount + 36 : 0)
            + typeAndTimestamp.utf8CodeUnitCount + JSONWriter.maxIntegerLength + targetingBytes.count + 1
        let serial = Self.nextSerial()
        let fields = targetingBytes.withUnsafeBufferPointer { targeting in
            makeFields(
                capacity: capacity,
                storedID: nil,
                timestampMs: timestampMs,
                mboxName: mboxName,
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                serial: serial,
                definition: definition,
                fragment: fragment,
                rest: targeting,
                closing: true
            ) { item in
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
                return (idBytes, digits)
            }
        }
        return DisplayNotification(fields: fields)
    }

    private init(fields: Fields) {
        self.fields = fields
    }

    /// Its object, for a queued notification to hold (`QueuedNotification`), and the notification again from it.
    var storage: AnyObject { fields }

    init(storage: AnyObject) {
        self.fields = unsafeDowncast(storage, to: Fields.self)
    }

    /// A notification whose item is `head` (its id and timestamp first, the timestamp's digits at `digits` in it),
    /// `fragment` and `rest` (its closing brace included), copied into its own object.
    private init(
        storedID: String?,
        idInHead: Range<Int>,
        timestampMs: Int64,
        mboxName: String,
        property: String?,
        stampedByBoxClock: Bool,
        head: [UInt8],
        digitsInHead: Range<Int>,
        fragment: Fragment,
        rest: [UInt8],
        definition: Int,
        serial: Int = serials.add(1, ordering: .relaxed).newValue
    ) {
        fields = rest.withUnsafeBufferPointer { rest in
            Self.makeFields(
                capacity: head.count + rest.count,
                storedID: storedID,
                timestampMs: timestampMs,
                mboxName: mboxName,
                property: property,
                stampedByBoxClock: stampedByBoxClock,
                serial: serial,
                definition: definition,
                fragment: fragment,
                rest: rest,
                closing: false
            ) { line in
                let start = line.count
                line.put(head)
                return (
                    (start + idInHead.lowerBound)..<(start + idInHead.upperBound),
                    (start + digitsInHead.lowerBound)..<(start + digitsInHead.upperBound)
                )
            }
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
        var head = JSONWriter(reservingCapacity: 64)
        head.appendASCII("{\"id\":")
        head.writeString(id)
        head.appendASCII(",\"timestamp\":")
        let digitsStart = head.bytes.count
        head.writeInteger(Int64(timestamp))
        let digits = digitsStart..<head.bytes.count
        var others = JSONWriter(reservingCapacity: 256)
        for member in item where member.key != "id" && member.key != "timestamp" {
            if !others.bytes.isEmpty { others.appendASCII(",") }
            others.writeString(member.key)
            others.appendASCII(":")
            others.write(member.value)
        }
        self.init(
            storedID: id,
            idInHead: 0..<0,
            timestampMs: Int64(timestamp),
            mboxName: item["mbox"]?["name"]?.stringValue ?? "",
            property: property,
            stampedByBoxClock: stampedByBoxClock,
            head: head.bytes,
            digitsInHead: digits,
            fragment: Fragment(others.bytes),
            rest: [UInt8(ascii: "}")],
            definition: 0
        )
    }

    /// Sets the timestamp, now that the real time is known.
    public mutating func restamp(_ timestampMs: Int64) {
        var digits = JSONWriter(reservingCapacity: 20)
        digits.writeInteger(timestampMs)
        let headRange = fields.head
        // The head's ranges, counted from its start.
        func inHead(_ range: Range<Int>) -> Range<Int> {
            (range.lowerBound - headRange.lowerBound)..<(range.upperBound - headRange.lowerBound)
        }
        let digitsInHead = inHead(fields.timestampDigits)
        var head = fields.withBytes(headRange) { [UInt8]($0) }
        head.replaceSubrange(digitsInHead, with: digits.bytes)
        // The id comes before the timestamp: its bytes stay where they are.
        self = DisplayNotification(
            storedID: fields.storedID,
            idInHead: fields.storedID == nil ? inHead(fields.idBytes) : 0..<0,
            timestampMs: timestampMs,
            mboxName: fields.mboxName,
            property: fields.property,
            stampedByBoxClock: false,
            head: head,
            digitsInHead: digitsInHead.lowerBound..<(digitsInHead.lowerBound + digits.bytes.count),
            fragment: fields.fragment,
            rest: fields.withBytes(fields.rest) { [UInt8]($0) },
            definition: fields.definition,
            serial: fields.serial
        )
    }
}

/// What every display notification of one cached offer shares: its mbox's name and property, its members
/// (`fragment`) and the number the journal defines them under (`definition`: this run's number for the offer, unique
/// in the process and never reused, as an address could be; `NotificationJournal` writes `fragment` once per file under
/// it, and each display's line refers to it). The offer holds it, and so does each of
/// its displays queued as a record (`QueuedNotification`), which needs no more of it: a display waiting for Target
/// holds these few hundred bytes, not the offer's content, which the cache may let go of meanwhile (its budget).
final class DisplayTemplate: Sendable {
    let name: String
    let property: String?
    let fragment: DisplayNotification.Fragment
    let definition: Int

    init(name: String, property: String?, fragment: DisplayNotification.Fragment, definition: Int) {
        self.name = name
        self.property = property
        self.fragment = fragment
        self.definition = definition
    }
}
