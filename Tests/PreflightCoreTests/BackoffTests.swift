import PreflightCore
import Testing

/// Always the same draw: `value` for every call.
private struct FixedGenerator: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

@Suite struct BackoffTests {
    @Test func doublesFromTheBaseUpToTheDoublingLimit() {
        let backoff = Backoff(base: .seconds(1), doublings: 6)
        let delays = (0...9).map { backoff.delay(attempt: $0) }
        #expect(delays == [1, 1, 2, 4, 8, 16, 32, 64, 64, 64].map { Duration.seconds($0) })
    }

    @Test func neverWaitsPastTheCap() {
        let backoff = Backoff(base: .seconds(1), doublings: 6, cap: .seconds(60))
        #expect(backoff.delay(attempt: 6) == .seconds(32))
        #expect(backoff.delay(attempt: 7) == .seconds(60))
        #expect(backoff.delay(attempt: 100) == .seconds(60))
    }

    @Test func keepsSubSecondBases() {
        let backoff = Backoff(base: .milliseconds(100), doublings: 10)
        #expect(backoff.delay(attempt: 3) == .milliseconds(400))
        #expect(backoff.delay(attempt: 11) == .milliseconds(102_400))
        #expect(backoff.delay(attempt: 30) == .milliseconds(102_400))
    }

    @Test func equalJitterStaysBetweenHalfAndAllOfTheDelay() {
        let backoff = Backoff(base: .seconds(1), doublings: 8, cap: .seconds(300), jitter: .equal)
        var low = FixedGenerator(value: 0)
        #expect(backoff.delay(attempt: 1, using: &low) == .milliseconds(500))
        #expect(backoff.delay(attempt: 9, using: &low) == .seconds(128))
        // The draw is taken modulo the half's nanoseconds plus one.
        var highFirst = FixedGenerator(value: 500_000_000)
        #expect(backoff.delay(attempt: 1, using: &highFirst) == .seconds(1))
        var highNinth = FixedGenerator(value: 128_000_000_000)
        #expect(backoff.delay(attempt: 9, using: &highNinth) == .seconds(256))
        var wrapping = FixedGenerator(value: 500_000_001)
        #expect(backoff.delay(attempt: 1, using: &wrapping) == .milliseconds(500))
        for attempt in 1...12 {
            let full = Backoff(base: .seconds(1), doublings: 8, cap: .seconds(300)).delay(attempt: attempt)
            let delay = backoff.delay(attempt: attempt)
            #expect(delay >= full / 2 && delay <= full)
        }
    }
}
