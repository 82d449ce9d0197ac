/// Time as the Adobe Pass code reads it, injected so that token refresh, decision TTLs, profile expiry,
/// pacing and back-off are tested without sleeping.
///
/// Two clocks, on purpose: `now` is monotonic and drives every duration the agent measures itself
/// (TTLs, pacing, deadlines), so that a wall-clock step at boot (NTP) neither stalls nor floods the
/// pacer; `epochMilliseconds` is the wall clock, used only where Adobe speaks wall time (a profile's
/// `notBefore`/`notAfter`, timestamps shown to people).
public struct PassClock: Sendable {
    /// Monotonic time.
    public var now: @Sendable () -> ContinuousClock.Instant
    /// Wall-clock milliseconds since the Unix epoch.
    public var epochMilliseconds: @Sendable () -> Int64
    /// Suspends for a span of `now` time; throws `CancellationError` when the task is cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        epochMilliseconds: @escaping @Sendable () -> Int64,
        sleep: @escaping @Sendable (Duration) async throws -> Void
    ) {
        self.now = now
        self.epochMilliseconds = epochMilliseconds
        self.sleep = sleep
    }

    /// The system's clocks.
    public static let system = PassClock(
        now: { ContinuousClock.now },
        epochMilliseconds: { systemEpochMilliseconds() },
        sleep: { duration in try await Task.sleep(for: duration) }
    )
}

extension Duration {
    /// Whole milliseconds, rounded down (negative durations stay negative).
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
