import PreflightCore

/// Keeps the agent's calls to Adobe Pass inside the device limit: one request per `interval` plus a
/// one-time burst, and nothing at all while Adobe has said "429, retry after". A value type driven by
/// the instants it is given, so its tests need no clock.
///
/// Slots are handed out in order: a caller reserves the earliest free slot, sleeps until it, then sends.
struct RequestPacer: Sendable {
    private(set) var interval: Duration
    /// Burst requests left; never refilled (Adobe's burst is one-time).
    private(set) var burstRemaining: Int
    /// The earliest instant the steady rate allows the next request.
    private var nextSlot: MonotonicInstant?
    /// No request before this (set from a 429's Retry-After).
    private(set) var blockedUntil: MonotonicInstant?

    init(pacing: PassPacing) {
        interval = pacing.interval
        burstRemaining = max(0, pacing.burst)
    }

    /// Reserves the earliest slot at or after `now` and returns it, or returns nil (reserving nothing)
    /// when that slot is later than `deadline`.
    mutating func reserve(now: MonotonicInstant, deadline: MonotonicInstant) -> MonotonicInstant? {
        var earliest = now
        if let blockedUntil, blockedUntil > earliest { earliest = blockedUntil }
        var next = self
        let slot: MonotonicInstant
        if next.nextSlot.map({ earliest >= $0 }) ?? true {
            slot = earliest
            next.nextSlot = earliest + interval
        } else if next.burstRemaining > 0 {
            next.burstRemaining -= 1
            slot = earliest
        } else {
            slot = next.nextSlot!
            next.nextSlot = slot + interval
        }
        guard slot <= deadline else { return nil }
        self = next
        return slot
    }

    /// Whether a request may go now, or a 429 since the slot was reserved says to wait longer.
    func isBlocked(at now: MonotonicInstant) -> Bool {
        blockedUntil.map { now < $0 } ?? false
    }

    /// After a 429: no request before `until`; the burst is evidently spent upstream, whatever we counted.
    mutating func block(until: MonotonicInstant) {
        if blockedUntil.map({ until > $0 }) ?? true { blockedUntil = until }
        burstRemaining = 0
        if nextSlot.map({ $0 < until }) ?? true { nextSlot = until }
    }

    /// Applies changed pacing, keeping what has been spent.
    mutating func update(_ pacing: PassPacing) {
        interval = pacing.interval
        burstRemaining = min(burstRemaining, max(0, pacing.burst))
    }
}
