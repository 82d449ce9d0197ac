import PreflightCore
import PreflightProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One option of an mbox as Target returned it.
public struct OfferOption: Sendable, Hashable {
    public var type: String
    public var content: JSONValue
    public var eventToken: String?

    public init(type: String, content: JSONValue, eventToken: String?) {
        self.type = type
        self.content = content
        self.eventToken = eventToken
    }

    /// html (and any text) options as they are; json options serialized as JSON.
    public var contentText: String {
        if case .string(let text) = content, type != "json" { return text }
        return JSONWriter.string(content)
    }
}

/// What a cached offer (and a click metric, a deferred display) is kept under: the mbox and the Target property
/// (workspace) it was fetched for. Two publishers' apps on one box ask under their own property tokens, and
/// never see each other's offers; nil is the configured property.
public struct OfferKey: Sendable, Hashable {
    public var name: String
    public var property: String?

    public init(_ name: String, property: String? = nil) {
        self.name = name
        self.property = property
    }
}

/// A prefetched mbox: what is needed to answer a load and to tell Target it was shown.
///
/// Immutable once cached and shared by reference: a cache hit hands out a pointer, not a copy of the
/// content. Everything a hit needs is prepared here, once: the content as a JSON string, and the part
/// of a display notification that depends only on the offer.
public final class CachedOffer: Sendable {
    /// An option as Target returned it, without its content: the content lives once, in
    /// `encodedContent`, and `options` cuts it back into pieces for the admin view.
    public struct OptionInfo: Sendable, Hashable {
        public let type: String
        public let eventToken: String?
        /// Length in UTF-8 bytes of this option's part of the concatenated content.
        let contentBytes: Int
        /// The content was JSON (a `json` option, or anything that was not a plain string).
        let isJSON: Bool
    }

    public let name: String
    /// The property token it was fetched under; nil: the configured property.
    public let property: String?
    /// Decided on the box from the rules artifact (`DecidedOffers`), not prefetched: its element says
    /// `"source":"on-device"` and its display notification is the one Adobe's engines send.
    public let decidedOnDevice: Bool
    public let optionInfo: [OptionInfo]
    public let state: String?
    /// The event token of Target's click metric for this mbox, when it sent one.
    public let clickToken: String?
    /// `data` of a `withData` load: `{"responseTokens", "analyticsPayload", "clickMetricAnalyticsPayload"}`,
    /// encoded once; nil when Target sent none of them.
    let encodedData: [UInt8]?
    /// The whole result of a load of this mbox alone, ready to append to a reply: `{"contents":[<element>]}`,
    /// the element (`loadResultElement`) being `{"name":…,"content":…,"source":"cache"}` (or `"on-device"`), the
    /// content being the options' content concatenated in order and encoded as a JSON string. The only copy of
    /// the content. Held whole so that a cached load appends it in one copy: composing the element between its
    /// brackets for each load copied the content twice (about 100 instructions of 1 KiB).
    let loadResult: [UInt8]
    /// Where the encoded content lies in `loadResult`.
    private let contentRange: Range<Int>
    /// What every display notification of the offer shares (`DisplayTemplate`: its members, `"mbox":{"name":…,
    /// "state":…},"tokens":[…]`, and the number the journal defines them under): a queued display holds this, not the
    /// offer.
    let displayTemplate: DisplayTemplate
    public let cachedAt: MonotonicInstant
    public let cachedAtEpochMs: Int64
    private let hitCount = Atomic<Int>(0)
    private static let definitions = Atomic<Int>(0)

    /// Approximate bytes this entry holds (encoded content, notification fragment, tokens, state,
    /// name, fixed overhead), for the cache budget.
    public let bytes: Int

    public init(
        name: String,
        options: [OfferOption],
        state: String?,
        clickToken: String? = nil,
        data: JSONObject? = nil,
        property: String? = nil,
        now: MonotonicInstant,
        epochMs: Int64,
        decidedOnDevice: Bool = false
    ) {
        self.name = name
        self.property = property
        self.decidedOnDevice = decidedOnDevice
        self.state = state
        self.clickToken = clickToken
        self.encodedData = data.map { JSONWriter.encode(.object($0)) }
        let texts = options.map(\.contentText)
        self.optionInfo = zip(options, texts).map { option, text in
            let isJSON: Bool
            if case .string = option.content, option.type != "json" { isJSON = false } else { isJSON = true }
            return OptionInfo(
                type: option.type,
                eventToken: option.eventToken,
                contentBytes: text.utf8.count,
                isJSON: isJSON
            )
        }
        let content = texts.joined()
        var writer = JSONWriter(reservingCapacity: content.utf8.count + name.utf8.count + 64)
        writer.appendASCII(Self.loadResultHead)
        self.contentRange = writeLoadResultElement(
            &writer,
            name: name,
            content: content,
            source: decidedOnDevice ? "on-device" : "cache"
        )
        writer.appendASCII(Self.loadResultTail)
        self.loadResult = writer.bytes
        let eventTokens = options.compactMap(\.eventToken)
        self.displayTemplate = DisplayTemplate(
            name: name,
            property: property,
            fragment: DisplayNotification.fragment(mbox: name, state: state, tokens: eventTokens),
            definition: CachedOffer.definitions.add(1, ordering: .relaxed).newValue
        )
        self.cachedAt = now
        self.cachedAtEpochMs = epochMs
        let tokenBytes = eventTokens.reduce(0) { $0 + $1.utf8.count }
        self.bytes =
            loadResult.count + displayTemplate.fragment.count + tokenBytes + (state?.utf8.count ?? 0)
            + name.utf8.count * 2 + 48 * optionInfo.count + 160 + (clickToken?.utf8.count ?? 0)
            + (encodedData?.count ?? 0) + (property?.utf8.count ?? 0)
    }

    /// What the cache keeps it under.
    public var key: OfferKey { OfferKey(name, property: property) }

    private static let loadResultHead: StaticString = #"{"contents":["#
    private static let loadResultTail: StaticString = "]}"

    /// This offer's element of a `loadRequests` result (`loadResult` without its brackets), for a load of
    /// several mboxes.
    var loadResultElement: ArraySlice<UInt8> {
        loadResult[Self.loadResultHead.utf8CodeUnitCount..<(loadResult.count - Self.loadResultTail.utf8CodeUnitCount)]
    }

    /// The event tokens of the options, in order.
    public var eventTokens: [String] {
        optionInfo.compactMap(\.eventToken)
    }

    /// The options' content concatenated in order, encoded as a JSON string.
    public var encodedContent: ArraySlice<UInt8> {
        loadResult[contentRange]
    }

    /// The options' content concatenated in order, as `loadRequests` returns it.
    public var content: String {
        (try? JSONReader.read(Array(encodedContent)))?.stringValue ?? ""
    }

    /// The options as Target returned them, rebuilt from the one stored copy of the content (admin views).
    public var options: [OfferOption] {
        let bytes = Array(content.utf8)
        var start = 0
        return optionInfo.map { info in
            let end = min(start + info.contentBytes, bytes.count)
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
            start = end
            let value = info.isJSON ? ((try? JSONReader.read(text)) ?? .string(text)) : .string(text)
            return OfferOption(type: info.type, content: value, eventToken: info.eventToken)
        }
    }

    /// Loads answered from this entry.
    public var hits: Int {
        hitCount.load(ordering: .relaxed)
    }

    func countHit() {
        hitCount.add(1, ordering: .relaxed)
    }
}

/// Appends one element of a `loadRequests` result, `{"name":…,"content":…,"source":…}`, and returns where
/// the encoded content lies in `writer`: a cached offer's prepared element and the answers to misses are
/// written the same way.
@discardableResult
func writeLoadResultElement(
    _ writer: inout JSONWriter,
    name: String,
    content: String,
    source: StaticString,
    data: JSONObject? = nil,
    trace: JSONValue? = nil
) -> Range<Int> {
    writer.appendASCII("{\"name\":")
    writer.writeString(name)
    writer.appendASCII(",\"content\":")
    let start = writer.bytes.count
    writer.writeString(content)
    let range = start..<writer.bytes.count
    writer.appendASCII(",\"source\":\"")
    writer.appendASCII(source)
    writer.appendASCII("\"")
    if let data {
        writer.appendASCII(",\"data\":")
        writer.write(.object(data))
    }
    if let trace {
        writer.appendASCII(",\"trace\":")
        writer.write(trace)
    }
    writer.appendASCII("}")
    return range
}

extension CachedOffer {
    /// This offer's `loadRequests` element with its `data` (`withData`): the prepared element with a
    /// `data` member spliced in before its closing brace, `{}` when Target sent none.
    func writeLoadResultElementWithData(_ writer: inout JSONWriter) {
        writer.writeRaw(loadResultElement.dropLast())
        writer.appendASCII(",\"data\":")
        writer.writeRaw(encodedData ?? Array("{}".utf8))
        writer.appendASCII("}")
    }

    /// The element a load answered by this offer gets: with `data` or without.
    func resultElement(withData: Bool) -> [UInt8] {
        guard withData else { return Array(loadResultElement) }
        var writer = JSONWriter(reservingCapacity: loadResultElement.count + (encodedData?.count ?? 2) + 9)
        writeLoadResultElementWithData(&writer)
        return writer.bytes
    }
}

/// The prefetch cache: keyed by mbox name and property, shared by every app, bounded by a byte budget with the
/// least recently used entries evicted first. Never written to disk.
///
/// Guarded by a `Mutex` so the I/O thread reads it without a hop. Entries live in an array of slots
/// threaded into a doubly linked recency list by index, with a dictionary from name to slot: a hit is
/// one hash lookup and a few integer writes, whatever the number of entries.
public final class PrefetchCache: Sendable {
    private struct Slot: Sendable {
        var offer: CachedOffer?
        var older = -1
        var newer = -1
    }

    private struct State: Sendable {
        /// The configured property's entries by name: the common case, a lookup hashing only the name.
        var index: [IndexName: Int] = [:]
        /// Entries of other properties (`propertyToken` loads).
        var otherProperties: [OfferKey: Int] = [:]
        var slots: [Slot] = []
        var freeSlots: [Int] = []
        var oldest = -1
        var newest = -1
        var bytes = 0
        var budget: Int
        var evictions = 0

        mutating func unlink(_ slot: Int) {
            let older = slots[slot].older
            let newer = slots[slot].newer
            if older >= 0 { slots[older].newer = newer } else { oldest = newer }
            if newer >= 0 { slots[newer].older = older } else { newest = older }
            slots[slot].older = -1
            slots[slot].newer = -1
        }

        mutating func linkAsNewest(_ slot: Int) {
            slots[slot].older = newest
            slots[slot].newer = -1
            if newest >= 0 { slots[newest].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        mutating func insert(_ offer: CachedOffer) {
            let slot: Int
            if let free = freeSlots.popLast() {
                slot = free
                slots[slot] = Slot(offer: offer)
            } else {
                slot = slots.count
                slots.append(Slot(offer: offer))
            }
            if let property = offer.property {
                otherProperties[OfferKey(offer.name, property: property)] = slot
            } else {
                index[IndexName(offer.name)] = slot
            }
            linkAsNewest(slot)
            bytes += offer.bytes
        }

        var count: Int { index.count + otherProperties.count }

        func slot(of key: OfferKey) -> Int? {
            key.property == nil ? index[IndexName(key.name)] : otherProperties[key]
        }

        mutating func remove(_ key: OfferKey) -> CachedOffer? {
            let removed =
                key.property == nil
                ? index.removeValue(forKey: IndexName(key.name)) : otherProperties.removeValue(forKey: key)
            guard let slot = removed, let offer = slots[slot].offer else { return nil }
            unlink(slot)
            slots[slot].offer = nil
            freeSlots.append(slot)
            bytes -= offer.bytes
            return offer
        }

        mutating func removeAll() {
            index = [:]
            otherProperties = [:]
            slots = []
            freeSlots = []
            oldest = -1
            newest = -1
            bytes = 0
        }
    }

    private let state: Mutex<State>

    public init(budgetBytes: Int) {
        state = Mutex(State(budget: budgetBytes))
    }

    /// Stores an entry, replacing one of the same name and property, then evicts least recently used entries until
    /// the cache fits its budget. Returns how many were evicted.
    @discardableResult
    public func store(_ offer: CachedOffer) -> Int {
        state.withLock { state in
            _ = state.remove(offer.key)
            state.insert(offer)
            return Self.evict(&state)
        }
    }

    /// The entry for `key`, counted as a hit and made most recent.
    public func hit(_ key: OfferKey, now: MonotonicInstant) -> CachedOffer? {
        guard key.property != nil else { return hit(key.name, now: now) }
        return hit { $0.otherProperties[key] }
    }

    /// The entry of the configured property for `name`, counted as a hit and made most recent: the cached
    /// load's lookup, hashing the name alone.
    public func hit(_ name: String, now: MonotonicInstant) -> CachedOffer? {
        hit { $0.index[IndexName(name)] }
    }

    /// `hit(_:now:)` for a name given as its UTF-8 bytes (a plain load's, read in place): no `String` is made.
    public func hit(_ name: UnsafeBufferPointer<UInt8>, now: MonotonicInstant) -> CachedOffer? {
        hit { $0.index[IndexName(borrowing: name)] }
    }

    private func hit(slotIn find: (inout State) -> Int?) -> CachedOffer? {
        state.withLock { state in
            guard let slot = find(&state), let offer = state.slots[slot].offer else { return nil }
            offer.countHit()
            if state.newest != slot {
                state.unlink(slot)
                state.linkAsNewest(slot)
            }
            return offer
        }
    }

    /// The entry without counting a hit (for admin views).
    public func peek(_ key: OfferKey) -> CachedOffer? {
        state.withLock { state in state.slot(of: key).flatMap { state.slots[$0].offer } }
    }

    /// The configured property's entry for `name`, without counting a hit.
    public func peek(_ name: String) -> CachedOffer? {
        peek(OfferKey(name))
    }

    /// Removes every entry, or those of mbox `name` (under every property); returns how many were removed.
    public func clear(name: String? = nil) -> Int {
        state.withLock { state in
            if let name {
                let keys = [OfferKey(name)] + state.otherProperties.keys.filter { $0.name == name }
                return keys.reduce(0) { count, key in count + (state.remove(key) == nil ? 0 : 1) }
            }
            let count = state.count
            state.removeAll()
            return count
        }
    }

    public func setBudget(_ bytes: Int) {
        state.withLock { state in
            state.budget = bytes
            _ = Self.evict(&state)
        }
    }

    public struct Summary: Sendable, Equatable {
        public var entries: Int
        public var bytes: Int
        public var budget: Int
        public var evictions: Int
    }

    public var summary: Summary {
        state.withLock { Summary(entries: $0.count, bytes: $0.bytes, budget: $0.budget, evictions: $0.evictions) }
    }

    /// Entries, most recently used first.
    public var entries: [CachedOffer] {
        state.withLock { state in
            var result: [CachedOffer] = []
            result.reserveCapacity(state.count)
            var cursor = state.newest
            while cursor >= 0, let offer = state.slots[cursor].offer {
                result.append(offer)
                cursor = state.slots[cursor].older
            }
            return result
        }
    }

    private static func evict(_ state: inout State) -> Int {
        var evicted = 0
        while state.bytes > state.budget, state.oldest >= 0, let offer = state.slots[state.oldest].offer {
            if state.remove(offer.key) != nil { evicted += 1 }
        }
        state.evictions += evicted
        return evicted
    }
}

/// An mbox name as the cache's index holds it (`owned`), or a load's bytes looking it up (`borrowed`, only for
/// the lookup, never stored): both hashed and compared as UTF-8 bytes, so that a plain load finds its entry
/// without a `String` made of its name (validated and copied, about 270 instructions on the I/O thread, and an
/// allocation for a name over 15 bytes). Bytes, not Unicode: two spellings of one accented name are two mboxes,
/// as they are to Target.
///
/// `@unchecked Sendable`: the index stores only `owned` names; a `borrowed` one lives for one lookup on the
/// thread that made it.
enum IndexName: Hashable, @unchecked Sendable {
    case owned(String)
    case borrowed(UnsafeBufferPointer<UInt8>)

    init(_ name: String) { self = .owned(name) }
    init(borrowing bytes: UnsafeBufferPointer<UInt8>) { self = .borrowed(bytes) }

    private func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        switch self {
        case .owned(var name): return name.withUTF8(body)
        case .borrowed(let bytes): return body(bytes)
        }
    }

    static func == (lhs: IndexName, rhs: IndexName) -> Bool {
        lhs.withBytes { left in
            rhs.withBytes { right in
                left.count == right.count
                    && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
