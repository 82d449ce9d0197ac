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
/// Bounded: past `capacity` entries an arbitrary one goes (an app that sends a fresh parameter with every
/// load only ever decides in a task).
final class DecidedOffers: Sendable {
    /// What a decision depends on besides the time: the request as the agent builds it from these.
    struct Key: Hashable, Sendable {
        var name: String
        var targeting: MboxTargeting
        var profile: [Parameter]
        var property: String?
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

    private let entries = Mutex<[Key: Entry]>([:])

    /// The offer decided for `key`, if it still holds at `epochMs` under `inputs`.
    func offer(for key: Key, at epochMs: Int64, inputs: Inputs) -> CachedOffer? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard entry.inputs == inputs, entry.span.contains(epochMs) else {
                entries[key] = nil
                return nil
            }
            return entry.offer
        }
    }

    /// Keeps `offer`, decided under `inputs`, for `span` (nothing when the span is empty).
    func keep(_ offer: CachedOffer, for key: Key, span: Range<Int64>, inputs: Inputs) {
        guard !span.isEmpty else { return }
        entries.withLock { entries in
            if entries[key] == nil, entries.count >= Self.capacity, let any = entries.keys.first {
                entries[any] = nil
            }
            entries[key] = Entry(offer: offer, span: span, inputs: inputs)
        }
    }

    func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    var count: Int {
        entries.withLock { $0.count }
    }
}
