import PreflightCore
import PreflightProtocol
import Testing

@testable import PreflightAgent

/// The plain loads a batch answered are counted as they are answered and recorded together at its end.
@Suite struct CommandStatisticsTests {
    private func loads(_ statistics: CommandStatistics) -> JSONValue? {
        statistics.json["loadRequests"]
    }

    @Test func plainLoadsAreRecordedAtTheEndOfTheirBatchWithItsTime() {
        let statistics = CommandStatistics()
        let started = MonotonicInstant.now
        statistics.countPlainLoad()
        statistics.countPlainLoad()
        statistics.countPlainLoad()
        #expect(loads(statistics) == nil, "nothing shown before the batch ends")
        statistics.recordPlainLoads(since: started)
        #expect(loads(statistics)?["count"] == .integer(3))
        #expect(loads(statistics)?["errors"] == .object([:]))
        // Recorded once: a batch with no plain load records nothing more.
        statistics.recordPlainLoads(since: started)
        #expect(loads(statistics)?["count"] == .integer(3))
        statistics.countPlainLoad()
        statistics.recordPlainLoads(since: .now)
        #expect(loads(statistics)?["count"] == .integer(4))
        // Loads answered the general way are counted with them.
        statistics.record(.command(.loadRequests), since: started, errorCode: "invalid_argument")
        #expect(loads(statistics)?["count"] == .integer(5))
        #expect(loads(statistics)?["errors"] == .object(["invalid_argument": 1]))
        statistics.reset()
        #expect(loads(statistics) == nil)
    }
}
