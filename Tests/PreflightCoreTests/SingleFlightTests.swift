import PreflightCore
import Synchronization
import Testing

/// Operations hold on a manual clock until the test advances it, so the test knows how many are running.
extension ManualClock {
    fileprivate func hold() async { try? await sleep(for: .seconds(1)) }
    fileprivate func release() { advance(by: .seconds(1)) }
}

private struct Failure: Error, Equatable {
    var reason: String
}

@Suite struct SingleFlightTests {
    @Test func concurrentCallersForOneKeyShareOneCall() async {
        let flights = SingleFlight<String, Int>()
        let calls = Mutex(0)
        let gate = ManualClock()
        let operation: @Sendable () async -> Int = {
            let call = calls.withLock { count in
                count += 1
                return count
            }
            await gate.hold()
            return call * 10
        }
        async let first = flights.run("a", operation)
        while gate.sleeperCount == 0 { await Task.yield() }
        #expect(flights.isRunning("a"))
        // Joining is synchronous: the second caller shares the first call before anything is released.
        let joined = flights.begin("a", operation)
        async let second = joined.value()
        async let other = flights.run("b", operation)
        while gate.sleeperCount < 2 { await Task.yield() }
        gate.release()
        let results = await [first, second, other]
        #expect(results[0] == 10 && results[1] == 10)
        #expect(results[2] == 20)
        #expect(calls.withLock { $0 } == 2)
        #expect(!flights.isRunning("a") && !flights.isRunning("b"))
        // Once finished, the next caller starts a new call.
        async let again = flights.run("a", operation)
        while gate.sleeperCount == 0 { await Task.yield() }
        gate.release()
        #expect(await again == 30)
    }

    @Test func everySharerGetsTheSameFailure() async {
        let flights = SingleFlight<Int, Result<String, Failure>>()
        let gate = ManualClock()
        let calls = Mutex(0)
        let operation: @Sendable () async -> Result<String, Failure> = {
            calls.withLock { $0 += 1 }
            await gate.hold()
            return .failure(Failure(reason: "upstream down"))
        }
        let first = flights.begin(1, operation)
        let second = flights.begin(1, operation)
        while gate.sleeperCount == 0 { await Task.yield() }
        gate.release()
        #expect(await first.value() == .failure(Failure(reason: "upstream down")))
        #expect(await second.value() == .failure(Failure(reason: "upstream down")))
        #expect(calls.withLock { $0 } == 1)
        #expect(!flights.isRunning(1))
    }

    @Test func aBatchJoinsRunningKeysAndStartsOneCallForTheRest() async {
        let flights = SingleFlight<String, String>()
        let gate = ManualClock()
        let batches = Mutex([[String]]())
        let operation: @Sendable ([String]) async -> [String: String] = { keys in
            batches.withLock { $0.append(keys) }
            await gate.hold()
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, "value of \($0)") })
        }
        async let first = flights.run(batch: ["x", "y", "x"], operation)
        while gate.sleeperCount == 0 { await Task.yield() }
        async let second = flights.run(batch: ["z", "y"], operation)
        while gate.sleeperCount < 2 { await Task.yield() }
        gate.release()
        let (one, two) = await (first, second)
        #expect(one == ["x": "value of x", "y": "value of y"])
        #expect(two == ["z": "value of z", "y": "value of y"])
        #expect(batches.withLock { $0 } == [["x", "y"], ["z"]])
        #expect(!flights.isRunning("x") && !flights.isRunning("y") && !flights.isRunning("z"))
    }
}
