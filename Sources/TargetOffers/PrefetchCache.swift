import PreflightProtocol
import Synchronization

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

/// A prefetched mbox: what is needed to answer a load and to tell Target it was shown.
public struct CachedOffer: Sendable {
    public let name: String
    public let options: [OfferOption]
    public let state: String?
    /// The options' content concatenated in order: what `loadRequests` returns.
    public let content: String
    /// `content` already encoded as a JSON string, so a cache hit appends bytes instead of escaping.
    public let encodedContent: [UInt8]
    public let eventTokens: [String]
    public let cachedAt: ContinuousClock.Instant
    public let cachedAtEpochMs: Int64
    public internal(set) var hits = 0
    public internal(set) var lastHitAt: ContinuousClock.Instant?

    /// Approximate bytes this entry holds (content, encoded copy, tokens, state, name).
    public let bytes: Int

    public init(name: String, options: [OfferOption], state: String?, now: ContinuousClock.Instant, epochMs: Int64) {
        self.name = name
        self.options = options
        self.state = state
        self.content = options.map(\.contentText).joined()
        var writer = JSONWriter(reservingCapacity: content.utf8.count + 2)
        writer.writeString(content)
        self.encodedContent = writer.bytes
        self.eventTokens = options.compactMap(\.eventToken)
        self.cachedAt = now
        self.cachedAtEpochMs = epochMs
        let tokenBytes = eventTokens.reduce(0) { $0 + $1.utf8.count }
        // Content is held twice (text and encoded); 128 bytes stand for the entry's fixed overhead.
        self.bytes =
            content.utf8.count + encodedContent.count + tokenBytes + (state?.utf8.count ?? 0) + name.utf8.count * 2
            + 128
    }
}

/// The prefetch cache: keyed by mbox name, shared by every app, bounded by a byte budget with the
/// least recently used entries evicted first. Never written to disk.
///
/// Guarded by a `Mutex` so the I/O thread reads it without a hop. Recency is an intrusive doubly
/// linked list threaded through the dictionary's values by name, so a hit, a store and an eviction
/// each cost O(1) dictionary operations whatever the number of entries.
public final class PrefetchCache: Sendable {
    private struct Node: Sendable {
        var offer: CachedOffer
        var older: String?
        var newer: String?
    }

    private struct State: Sendable {
        var nodes: [String: Node] = [:]
        var oldest: String?
        var newest: String?
        var bytes = 0
        var budget: Int
        var evictions = 0

        mutating func unlink(_ name: String) {
            guard let node = nodes[name] else { return }
            if let older = node.older { nodes[older]?.newer = node.newer } else { oldest = node.newer }
            if let newer = node.newer { nodes[newer]?.older = node.older } else { newest = node.older }
            nodes[name]?.older = nil
            nodes[name]?.newer = nil
        }

        mutating func linkAsNewest(_ name: String) {
            nodes[name]?.older = newest
            nodes[name]?.newer = nil
            if let newest { nodes[newest]?.newer = name }
            newest = name
            if oldest == nil { oldest = name }
        }

        mutating func remove(_ name: String) -> CachedOffer? {
            guard nodes[name] != nil else { return nil }
            unlink(name)
            guard let node = nodes.removeValue(forKey: name) else { return nil }
            bytes -= node.offer.bytes
            return node.offer
        }
    }

    private let state: Mutex<State>

    public init(budgetBytes: Int) {
        state = Mutex(State(budget: budgetBytes))
    }

    /// Stores an entry, replacing one of the same name, then evicts least recently used entries until
    /// the cache fits its budget. Returns how many were evicted.
    @discardableResult
    public func store(_ offer: CachedOffer) -> Int {
        state.withLock { state in
            _ = state.remove(offer.name)
            state.nodes[offer.name] = Node(offer: offer)
            state.linkAsNewest(offer.name)
            state.bytes += offer.bytes
            return Self.evict(&state)
        }
    }

    /// The entry for `name`, counted as a hit and made most recent.
    public func hit(_ name: String, now: ContinuousClock.Instant) -> CachedOffer? {
        state.withLock { state in
            guard state.nodes[name] != nil else { return nil }
            state.nodes[name]?.offer.hits += 1
            state.nodes[name]?.offer.lastHitAt = now
            if state.newest != name {
                state.unlink(name)
                state.linkAsNewest(name)
            }
            return state.nodes[name]?.offer
        }
    }

    /// The entry without counting a hit (for admin views).
    public func peek(_ name: String) -> CachedOffer? {
        state.withLock { $0.nodes[name]?.offer }
    }

    /// Removes every entry, or the one named; returns how many were removed.
    public func clear(name: String? = nil) -> Int {
        state.withLock { state in
            if let name {
                return state.remove(name) == nil ? 0 : 1
            }
            let count = state.nodes.count
            state.nodes = [:]
            state.oldest = nil
            state.newest = nil
            state.bytes = 0
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
        state.withLock { Summary(entries: $0.nodes.count, bytes: $0.bytes, budget: $0.budget, evictions: $0.evictions) }
    }

    /// Entries, most recently used first.
    public var entries: [CachedOffer] {
        state.withLock { state in
            var result: [CachedOffer] = []
            result.reserveCapacity(state.nodes.count)
            var cursor = state.newest
            while let name = cursor, let node = state.nodes[name] {
                result.append(node.offer)
                cursor = node.older
            }
            return result
        }
    }

    private static func evict(_ state: inout State) -> Int {
        var evicted = 0
        while state.bytes > state.budget, let oldest = state.oldest {
            if state.remove(oldest) != nil { evicted += 1 }
        }
        state.evictions += evicted
        return evicted
    }
}
