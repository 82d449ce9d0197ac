#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Time as the agent reads it, injected so that expiry, pacing, batching and back-off are tested without
/// sleeping.
///
/// Two clocks, on purpose: `now()` is monotonic and drives every duration the agent measures itself
/// (TTLs, sessions, pacing, deadlines), so that a wall-clock step at boot (NTP) neither stalls nor floods
/// anything; `epochMilliseconds()` is the wall clock, used only where the outside world speaks wall time
/// (timestamps sent upstream or shown to people).
public protocol AgentClock: Sendable {
    /// Monotonic time.
    func now() -> MonotonicInstant
    /// Wall-clock milliseconds since the Unix epoch.
    func epochMilliseconds() -> Int64
    /// Suspends for a span of `now()` time; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clocks.
public struct SystemClock: AgentClock {
    public init() {}

    public func now() -> MonotonicInstant { .now }

    public func epochMilliseconds() -> Int64 { Self.wallMilliseconds() }

    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }

    /// `CLOCK_REALTIME` in milliseconds since the Unix epoch.
    public static func wallMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// `CLOCK_MONOTONIC` in nanoseconds: the request path's timer, and the clock systemd compares
    /// `MONOTONIC_USEC` with. `now()` would do for durations, but turning its `Duration` into milliseconds
    /// goes through 128-bit arithmetic on every request.
    public static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}

/// A point in time on the agent's monotonic clock: nanoseconds of `CLOCK_BOOTTIME`, the clock
/// `ContinuousClock` reads on Linux (it goes on counting while a box is in standby, so an offer's time to
/// live is spent in standby too).
///
/// Ours, not `ContinuousClock.Instant`: the standard library's type is resilient (its layout is hidden
/// outside the library), so each copy, comparison and optional of it, and of every tuple or struct that held
/// it, went through its run-time metadata's value witnesses, and reading the clock through a call that made
/// a `Duration` in 128-bit arithmetic: about 1,300 instructions per cached load (tools/bench --profile). This
/// one is an integer the compiler sees through.
@frozen
public struct MonotonicInstant: InstantProtocol, Hashable, Sendable {
    /// Nanoseconds since the clock's origin (the box's boot).
    public var nanoseconds: Int64

    @inlinable
    public init(nanoseconds: Int64) {
        self.nanoseconds = nanoseconds
    }

    /// The clock now.
    @inlinable
    public static var now: MonotonicInstant {
        var now = timespec()
        clock_gettime(monotonicClockID, &now)
        return MonotonicInstant(nanoseconds: Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec))
    }

    #if os(Linux)
    @usableFromInline static let monotonicClockID = CLOCK_BOOTTIME
    #else
    @usableFromInline static let monotonicClockID = CLOCK_MONOTONIC_RAW
    #endif

    /// Saturates rather than trapping: a duration of "for ever" (`.seconds(Int64.max)`) is an instant no clock
    /// reaches.
    @inlinable
    public func advanced(by duration: Duration) -> MonotonicInstant {
        let (sum, overflow) = nanoseconds.addingReportingOverflow(duration.saturatingNanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? (duration < .zero ? .min : .max) : sum)
    }

    /// Exact even between saturated instants (`Duration` holds far more than 64 bits of nanoseconds).
    @inlinable
    public func duration(to other: MonotonicInstant) -> Duration {
        let (difference, overflow) = other.nanoseconds.subtractingReportingOverflow(nanoseconds)
        guard overflow else { return .nanoseconds(difference) }
        return Duration(attoseconds: (Int128(other.nanoseconds) - Int128(nanoseconds)) * 1_000_000_000)
    }

    /// Whole milliseconds from `earlier` to this instant, rounded towards zero, without a `Duration`; saturated
    /// past what 64 bits of nanoseconds hold.
    @inlinable
    public func milliseconds(since earlier: MonotonicInstant) -> Int64 {
        let (difference, overflow) = nanoseconds.subtractingReportingOverflow(earlier.nanoseconds)
        guard overflow else { return difference / 1_000_000 }
        return (nanoseconds > earlier.nanoseconds ? Int64.max : Int64.min) / 1_000_000
    }

    @inlinable
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    @inlinable
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant { lhs.advanced(by: rhs) }

    @inlinable
    public static func += (lhs: inout MonotonicInstant, rhs: Duration) { lhs = lhs.advanced(by: rhs) }

    @inlinable
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        lhs.advanced(by: .zero - rhs)
    }

    @inlinable
    public static func -= (lhs: inout MonotonicInstant, rhs: Duration) { lhs = lhs - rhs }

    @inlinable
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration { rhs.duration(to: lhs) }
}

extension Duration {
    /// Whole nanoseconds, rounded towards zero; `Int64.max` or `.min` beyond what 64 bits hold (292 years).
    @inlinable
    public var saturatingNanoseconds: Int64 {
        let nanoseconds = attoseconds / 1_000_000_000
        return Int64(exactly: nanoseconds) ?? (nanoseconds < 0 ? .min : .max)
    }

    /// Whole milliseconds, rounded towards zero.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
