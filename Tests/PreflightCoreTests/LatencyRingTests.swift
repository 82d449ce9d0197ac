import PreflightCore
import Testing

@Suite struct LatencyRingTests {
    @Test func nearestRankPercentiles() {
        var ring = LatencyRing()
        #expect(ring.percentiles([50]) == nil)
        for sample in (1...100).reversed() { ring.record(milliseconds: Double(sample)) }
        #expect(ring.percentiles([0, 1, 50, 90, 99, 100]) == [1, 1, 50, 90, 99, 100])
        var small = LatencyRing()
        for sample in [3.0, 1.0, 2.0] { small.record(milliseconds: sample) }
        // Rank ceil(p/100 × n): p50 of three is the second, p90 and p99 the third.
        #expect(small.percentiles([50, 90, 99]) == [2, 3, 3])
    }

    @Test func keepsOnlyTheMostRecentSamples() {
        var ring = LatencyRing(capacity: 3)
        for sample in 1...5 { ring.record(milliseconds: Double(sample)) }
        #expect(ring.count == 5)
        #expect(ring.recent == [3, 4, 5])
        #expect(ring.percentiles([0, 100]) == [3, 5])
        ring.record(milliseconds: 0.5)
        #expect(ring.recent == [4, 5, 0.5])
        #expect(ring.percentiles([50]) == [4])
    }

    @Test func equalRingsHoldTheSameSamplesInOrder() {
        var one = LatencyRing(capacity: 2)
        var two = LatencyRing(capacity: 2)
        for sample in [1.0, 2.0, 3.0] { one.record(milliseconds: sample) }
        two.record(milliseconds: 9)
        #expect(one != two)
        for sample in [2.0, 3.0] { two.record(milliseconds: sample) }
        #expect(one == two)
    }
}
