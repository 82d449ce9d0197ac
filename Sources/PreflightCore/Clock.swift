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
    func now() -> ContinuousClock.Instant
    /// Wall-clock milliseconds since the Unix epoch.
    func epochMilliseconds() -> Int64
    /// Suspends for a span of `now()` time; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clocks.
public struct SystemClock: AgentClock {
    public init() {}

    public func now() -> ContinuousClock.Instant { .now }

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

extension Duration {
    /// Whole milliseconds, rounded towards zero.
    public var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, rounded towards zero.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
