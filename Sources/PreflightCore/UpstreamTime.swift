import Synchronization

/// The agent's clock with the wall time corrected by what the upstream services say it is.
///
/// A TV box often boots with its clock at 1970 or 2000 and gets the right time minutes later from NTP,
/// or never. Adobe's services stamp every response with a `Date` header; `learn(dateHeader:receivedAt:)`
/// takes it, and `epochMilliseconds()` then answers the upstream's time, carried forward on the monotonic
/// clock, whenever the box's own clock disagrees with it by more than `tolerance`. While they agree (or
/// before any response), the box's clock is used as it is: it has millisecond precision, a `Date` header
/// only whole seconds.
///
/// Anchoring on the monotonic clock, not on an offset to the wall clock, keeps the answer right when NTP
/// steps the box's clock between two responses. Monotonic time (`now()`) and sleeping are the inner
/// clock's, untouched.
public final class UpstreamTime: AgentClock {
    /// What the agent knows of the real time.
    public struct Correction: Sendable, Equatable {
        /// Upstream time minus the box's wall clock, at the last response that carried a `Date`.
        public var offsetMs: Int64
        /// The upstream's epoch milliseconds at monotonic instant `anchor`; nil when the box's clock agreed
        /// within the tolerance and is used as it is.
        var anchorEpochMs: Int64?
        var anchor: MonotonicInstant?
    }

    private let inner: any AgentClock
    /// `inner` is the system's clocks: `stampNow` reads them directly, not through the existential (two calls
    /// through its witness table and the box's projection on every cached load).
    private let innerIsSystem: Bool
    private let tolerance: Duration
    private let state = Mutex<Correction?>(nil)
    /// What `state` says, readable without the lock on the cached-load path: 0 nothing learned yet,
    /// 1 the box's clock agrees (use it), 2 correcting (read the anchor under the lock).
    private let mode = Atomic<UInt8>(0)
    /// The box's wall clock read for the last `receivedAt` given to `stampNow` (a batch of requests), so that the
    /// batch's loads share one reading: the wall time stored first, then the instant it was read for. Two words
    /// that a caller on another thread could interleave: a mix is still two readings of the wall clock made for
    /// requests being answered now, as good as either.
    private let receiptWallMs = Atomic<Int64>(0)
    private let receipt = Atomic<Int64>(Int64.min)

    /// - Parameters:
    ///   - inner: the box's clocks (`SystemClock()` in the agent, a `ManualClock` in tests).
    ///   - tolerance: the disagreement below which the box's own wall clock is trusted. A `Date` header is
    ///     whole seconds and arrives after some network time, so this must be a few seconds.
    public init(_ inner: any AgentClock, tolerance: Duration = .seconds(3)) {
        self.inner = inner
        self.innerIsSystem = inner is SystemClock
        self.tolerance = tolerance
    }

    /// The last correction learned; nil before any `Date` header.
    public var correction: Correction? { state.withLock { $0 } }

    /// Whether the wall time is being corrected now (the box's clock is off by more than the tolerance).
    public var isCorrecting: Bool { correction?.anchor != nil }

    /// Learns from one response: `dateHeader` as the upstream sent it, `receivedAt` the monotonic instant
    /// the response arrived. An unreadable header teaches nothing.
    public func learn(dateHeader: String, receivedAt: MonotonicInstant) {
        guard let seconds = Self.parseHTTPDate(dateHeader) else { return }
        // The header truncates to the second: the real time was somewhere in that second.
        let upstreamMs = seconds * 1000 + 500
        let boxMs = inner.epochMilliseconds() - inner.now().milliseconds(since: receivedAt)
        let offsetMs = upstreamMs - boxMs
        let agrees = abs(offsetMs) <= tolerance.wholeMilliseconds
        state.withLock {
            $0 = Correction(
                offsetMs: offsetMs,
                anchorEpochMs: agrees ? nil : upstreamMs,
                anchor: agrees ? nil : receivedAt
            )
            mode.store(agrees ? 1 : 2, ordering: .releasing)
        }
    }

    public func now() -> MonotonicInstant { inner.now() }

    /// The real wall time as best known: the upstream's, when the box's clock is off.
    public func epochMilliseconds() -> Int64 { epochMilliseconds(at: inner.now()) }

    /// The real wall time at a monotonic instant of this run (for stamping something that happened
    /// earlier, before the correction was known).
    public func epochMilliseconds(at instant: MonotonicInstant) -> Int64 {
        stamp(at: instant).epochMs
    }

    /// The real wall time at `instant` and whether it is the box's own clock, unconfirmed because no
    /// upstream has told the time yet (something stamped so is stamped again once one has), in one look.
    public func stamp(at instant: MonotonicInstant) -> (epochMs: Int64, byBoxClock: Bool) {
        let correction = state.withLock { $0 }
        if let correction, let anchor = correction.anchor, let anchorEpochMs = correction.anchorEpochMs {
            return (anchorEpochMs + instant.milliseconds(since: anchor), false)
        }
        return (inner.epochMilliseconds() - inner.now().milliseconds(since: instant), correction == nil)
    }

    /// `stamp(at: now())` with each clock read once: the cached load's path. `receivedAt`, a reading of the
    /// system's monotonic clock taken just before (for a whole batch of requests), stands for `now()` when
    /// that is the system's clock, saving a reading.
    public func stampNow(
        receivedAt: MonotonicInstant? = nil
    ) -> (now: MonotonicInstant, epochMs: Int64, byBoxClock: Bool) {
        let now = innerIsSystem ? (receivedAt ?? MonotonicInstant.now) : inner.now()
        let known = mode.load(ordering: .acquiring)
        if known < 2 {
            let wall = innerIsSystem ? wallMilliseconds(receivedAt: receivedAt) : inner.epochMilliseconds()
            return (now, wall, known == 0)
        }
        let correction = state.withLock { $0 }
        if let correction, let anchor = correction.anchor, let anchorEpochMs = correction.anchorEpochMs {
            return (now, anchorEpochMs + now.milliseconds(since: anchor), false)
        }
        return (now, inner.epochMilliseconds(), correction == nil)
    }

    /// The system's wall clock, read once per `receivedAt`: in a flood its vDSO call, once per cached load, was
    /// about 2.5% of the I/O thread's cycles (`perf record`).
    @inline(__always)
    private func wallMilliseconds(receivedAt: MonotonicInstant?) -> Int64 {
        guard let receivedAt else { return SystemClock.wallMilliseconds() }
        if receipt.load(ordering: .acquiring) == receivedAt.nanoseconds {
            return receiptWallMs.load(ordering: .relaxed)
        }
        let wall = SystemClock.wallMilliseconds()
        receiptWallMs.store(wall, ordering: .relaxed)
        receipt.store(receivedAt.nanoseconds, ordering: .releasing)
        return wall
    }

    public func sleep(for duration: Duration) async throws { try await inner.sleep(for: duration) }

    // MARK: HTTP dates

    /// The month names of an IMF-fixdate, three bytes each.
    private static let months: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"

    /// Seconds since the Unix epoch of an RFC 9110 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one
    /// form servers must send; nil for anything else. Read by position from its 29 bytes: it runs on every
    /// upstream answer (as `split` and `Int` of substrings it cost about 24,000 instructions).
    public static func parseHTTPDate(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { bytes -> Int64? in
            guard bytes.count == 29 else { return nil }
            for (index, expected) in [
                (3, ","), (4, " "), (7, " "), (11, " "), (16, " "), (19, ":"), (22, ":"),
                (25, " "), (26, "G"), (27, "M"), (28, "T"),
            ] as [(Int, Unicode.Scalar)]
            where bytes[index] != UInt8(ascii: expected) {
                return nil
            }
            func number(at start: Int, digits: Int) -> Int64? {
                var value: Int64 = 0
                for index in start..<(start + digits) {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int64(digit)
                }
                return value
            }
            let month = months.withUTF8Buffer { names in
                (0..<12).first { month in (0..<3).allSatisfy { names[month * 3 + $0] == bytes[8 + $0] } }
            }
            guard let month, let day = number(at: 5, digits: 2), (1...31).contains(day),
                let year = number(at: 12, digits: 4), let hour = number(at: 17, digits: 2),
                let minute = number(at: 20, digits: 2), let second = number(at: 23, digits: 2),
                hour < 24, minute < 60, second < 61
            else { return nil }
            let days = daysFromCivil(year: year, month: Int64(month) + 1, day: day)
            return days * 86_400 + hour * 3600 + minute * 60 + second
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
