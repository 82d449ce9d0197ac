import PreflightCore
import Synchronization
import Testing

@Suite struct ClockTests {
    /// The agent's instant is integer nanoseconds: arithmetic with `Duration` round-trips, a duration of "for ever"
    /// saturates instead of trapping, and milliseconds between instants truncate towards zero, as `Duration`'s do.
    @Test func monotonicInstantsAddSubtractAndSaturate() {
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        #expect((start + .milliseconds(1500)) - start == .milliseconds(1500))
        #expect(start.duration(to: start - .nanoseconds(7)) == .nanoseconds(-7))
        #expect(start.advanced(by: .seconds(Int64.max)) == MonotonicInstant(nanoseconds: .max))
        #expect(
            MonotonicInstant(nanoseconds: -1).advanced(by: .seconds(Int64.min)) == MonotonicInstant(nanoseconds: .min)
        )
        #expect((start + .microseconds(1999)).milliseconds(since: start) == 1)
        #expect((start - .microseconds(1999)).milliseconds(since: start) == -1)
        #expect(start < start + .nanoseconds(1))
        // Between saturated instants, exact (a Duration holds it) or saturated (milliseconds), never wrapped.
        let far = MonotonicInstant(nanoseconds: .max)
        let past = MonotonicInstant(nanoseconds: .min)
        #expect(far - past == .nanoseconds(Int64.max) * 2 + .nanoseconds(1))
        #expect(past - far < .zero)
        #expect(far.milliseconds(since: past) == Int64.max / 1_000_000)
        #expect(past.milliseconds(since: far) == Int64.min / 1_000_000)
        #expect(Duration.seconds(Int64.max).saturatingNanoseconds == .max)
        #expect(Duration.milliseconds(-3).saturatingNanoseconds == -3_000_000)
    }

    /// `now` reads a clock that never goes back and moves on.
    @Test func monotonicNowMovesForward() {
        let first = MonotonicInstant.now
        var later = MonotonicInstant.now
        while later == first { later = .now }
        #expect(later > first)
        #expect(first.nanoseconds > 0)
    }

    @Test func manualClockMovesBothClocksOnlyWhenAdvanced() {
        let clock = ManualClock(epochOrigin: 1_800_000_000_000)
        let start = clock.now()
        #expect(clock.epochMilliseconds() == 1_800_000_000_000)
        #expect(clock.now() == start)
        clock.advance(by: .milliseconds(1500))
        #expect(clock.now() - start == .milliseconds(1500))
        #expect(clock.epochMilliseconds() == 1_800_000_001_500)
    }

    @Test func manualClockWakesSleepersWhenTheirTimeComes() async throws {
        let clock = ManualClock()
        let woke = Mutex(false)
        let sleeper = Task {
            try await clock.sleep(for: .seconds(3))
            woke.withLock { $0 = true }
        }
        while clock.sleeperCount == 0 { await Task.yield() }
        #expect(clock.nextWakeUp == .seconds(3))
        clock.advance(by: .seconds(2))
        #expect(clock.sleeperCount == 1)
        #expect(clock.nextWakeUp == .seconds(1))
        #expect(!woke.withLock { $0 })
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(woke.withLock { $0 })
        #expect(clock.sleeperCount == 0)
        #expect(clock.nextWakeUp == nil)
    }

    @Test func cancellingASleeperOnTheManualClockThrows() async {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        while clock.sleeperCount == 0 { await Task.yield() }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func systemClockReadsTheSystemsClocks() async throws {
        let clock: any AgentClock = SystemClock()
        let wall = clock.epochMilliseconds()
        // After 2020 and before 2100.
        #expect(wall > 1_577_836_800_000 && wall < 4_102_444_800_000)
        let start = clock.now()
        let startNanoseconds = SystemClock.monotonicNanoseconds()
        try await clock.sleep(for: .milliseconds(5))
        #expect(clock.now() - start >= .milliseconds(5))
        #expect(SystemClock.monotonicNanoseconds() - startNanoseconds >= 5_000_000)
    }

    @Test func wholeMillisecondsRoundTowardsZero() {
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.microseconds(1999).wholeMilliseconds == 1)
        #expect(Duration.seconds(-2).wholeMilliseconds == -2000)
    }
}
