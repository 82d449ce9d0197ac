import DequeModule
import PreflightProtocol
import Synchronization

/// Offers decided on the box, kept while the same load would be decided the same way, so that loading
/// them again is a lookup on the I/O thread, like a cached offer, rather than a decision in a task.
///
/// A decision is a pure function of the artifact, the request (mbox, parameters, property, the box's
/// context), the visitor's ids, geo, and the time as the artifact's rules read it. An entry is kept with
/// what it was decided under: `Inputs` (counters that move whenever the artifact, the configuration, the
/// visitor's ids, geo, privacy or a preview change) and the span of time within which its mbox's rules
/// decide the same (`DecisioningEngine.stableSpan`). A load answered from here is still an on-device
/// decision: it says `"source":"on-device"` and queues the display notification the engine would.
///
/// Bounded: past `capacity` entries the oldest goes (an app that sends a fresh parameter with every load
/// only ever decides in a task). Oldest first, not whichever the dictionary lists first: that one is always
/// in the lowest bucket, and evicting from the low end packs the rest into one long probe run at the high
/// end (a profile of new decisions showed about a hundred key comparisons per lookup).
final class DecidedOffers: Sendable {
    /// What a decision depends on besides the time: the request as the agent builds it from these.
    struct Key: Hashable, Sendable {
        var name: String
        var targeting: MboxTargeting
        var profile: [Parameter]
        var property: String?

        /// A load of the name alone (no targeting, profile or property): what most loads are, and all the plain
        /// loads the I/O thread reads in place. The whole targeting compared with none, so that a member it
        /// gains one day cannot make two different loads one entry.
        var isNameAlone: Bool {
            property == nil && profile.isEmpty && targeting == MboxTargeting()
        }
    }

    /// Counters read before deciding; an entry answers only while both are where they were.
    struct Inputs: Equatable, Sendable {
        /// `TargetService.decisionInputs`: artifact, configuration, geo, privacy, preview, cleared offers.
        var service: Int
        /// `VisitorSession.identityVersion`: the ids allocation reads.
        var identity: Int
    }

    private struct Entry: Sendable {
        var offer: CachedOffer
        var span: Range<Int64>
        var inputs: Inputs
    }

    static let capacity = 512

    private struct State: Sendable {
        /// Entries of loads with parameters, a profile or a property.
        var entries: [Key: Entry] = [:]
        /// Entries of loads of a name alone, by the name's bytes (`IndexName`, as the prefetch cache's index):
        /// a plain load looks one up from its bytes in place, hashing the name only. Through `Key`, with its
        /// `String` made from the bytes, an on-device load cost the I/O thread about 1,100 instructions more
        /// than a cached one (tools/bench --profile --profile-command on-device).
        var byName: [IndexName: Entry] = [:]
        /// The keys of both, oldest first.
        var order = Deque<Key>()

        func entry(for key: Key) -> Entry? {
            key.isNameAlone ? byName[IndexName(key.name)] : entries[key]
        }

        /// Sets the entry of `key`; whether it had none.
        mutating func set(_ entry: Entry, for key: Key) -> Bool {
            if key.isNameAlone { return byName.updateValue(entry, forKey: IndexName(key.name)) == nil }
            return entries.updateValue(entry, forKey: key) == nil
        }

        mutating func remove(_ key: Key) {
            if key.isNameAlone { byName[IndexName(key.name)] = nil } else { entries[key] = nil }
        }
    }

    private let state = Mutex(State())

    /// The offer decided for `key`, if it still holds at `epochMs` under `inputs`. (One that no longer holds
    /// stays until the next decision for its key replaces it, or it is the oldest.)
    func offer(for key: Key, at epochMs: Int64, inputs: Inputs) -> CachedOffer? {
        state.withLock { state in Self.holding(state.entry(for: key), at: epochMs, inputs: inputs) }
    }

    /// `offer(for:at:inputs:)` for a load of the name alone given as its UTF-8 bytes (a plain load's, read in
    /// place): no `String` is made.
    func offer(name: UnsafeBufferPointer<UInt8>, at epochMs: Int64, inputs: Inputs) -> CachedOffer? {
        state.withLock { state in Self.holding(state.byName[IndexName(borrowing: name)], at: epochMs, inputs: inputs) }
    }

    private static func holding(_ entry: Entry?, at epochMs: Int64, inputs: Inputs) -> CachedOffer? {
        guard let entry, entry.inputs == inputs, entry.span.contains(epochMs) else { return nil }
        return entry.offer
    }

    /// Keeps `offer`, decided under `inputs`, for `span` (nothing when the span is empty).
    func keep(_ offer: CachedOffer, for key: Key, span: Range<Int64>, inputs: Inputs) {
        guard !span.isEmpty else { return }
        let entry = Entry(offer: offer, span: span, inputs: inputs)
        state.withLock { state in
            if state.set(entry, for: key) {
                state.order.append(key)
                if state.order.count > Self.capacity, let oldest = state.order.popFirst() {
                    state.remove(oldest)
                }
            }
        }
    }

    func removeAll() {
        state.withLock { $0 = State() }
    }

    var count: Int {
        state.withLock { $0.entries.count + $0.byName.count }
    }
}
