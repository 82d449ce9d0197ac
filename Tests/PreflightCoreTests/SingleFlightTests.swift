import PreflightCore
import Synchronization
import Testing

/// Holds operations until opened, and counts who is waiting.
private final class Latch: Sendable {
    private let state = Mutex((open: false, waiters: [CheckedContinuation<Void, Never>]()))

    var waiting: Int { state.withLock { $0.waiters.count } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

private struct Failure: Error, Equatable {
    var reason: String
}

@Suite struct SingleFlightTests {
    @Test func concurrentCallersForOneKeyShareOneCall() async {
        let flights = SingleFlight<String, Int>()
        let calls = Mutex(0)
        let latch = Latch()
        let operation: @Sendable () async -> Int = {
            let call = calls.withLock { count in
                count += 1
                return count
            }
            await latch.wait()
            return call * 10
        }
        async let first = flights.run("a", operation)
        while latch.waiting == 0 { await Task.yield() }
        #expect(flights.isRunning("a"))
        async let second = flights.run("a", operation)
        async let other = flights.run("b", operation)
        while latch.waiting < 2 { await Task.yield() }
        latch.open()
        let results = await [first, second, other]
        #expect(results[0] == 10 && results[1] == 10)
        #expect(results[2] == 20)
        #expect(calls.withLock { $0 } == 2)
        #expect(!flights.isRunning("a") && !flights.isRunning("b"))
        // Once finished, the next caller starts a new call.
        #expect(await flights.run("a", operation) == 30)
    }

    @Test func everySharerGetsTheSameFailure() async {
        let flights = SingleFlight<Int, Result<String, Failure>>()
        let latch = Latch()
        let calls = Mutex(0)
        let operation: @Sendable () async -> Result<String, Failure> = {
            calls.withLock { $0 += 1 }
            await latch.wait()
            return .failure(Failure(reason: "upstream down"))
        }
        let first = flights.begin(1, operation)
        let second = flights.begin(1, operation)
        while latch.waiting == 0 { await Task.yield() }
        latch.open()
        #expect(await first.value() == .failure(Failure(reason: "upstream down")))
        #expect(await second.value() == .failure(Failure(reason: "upstream down")))
        #expect(calls.withLock { $0 } == 1)
        #expect(!flights.isRunning(1))
    }

    @Test func aBatchJoinsRunningKeysAndStartsOneCallForTheRest() async {
        let flights = SingleFlight<String, String>()
        let latch = Latch()
        let batches = Mutex([[String]]())
        let operation: @Sendable ([String]) async -> [String: String] = { keys in
            batches.withLock { $0.append(keys) }
            await latch.wait()
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, "value of \($0)") })
        }
        async let first = flights.run(batch: ["x", "y", "x"], operation)
        while latch.waiting == 0 { await Task.yield() }
        async let second = flights.run(batch: ["z", "y"], operation)
        while latch.waiting < 2 { await Task.yield() }
        latch.open()
        let (one, two) = await (first, second)
        #expect(one == ["x": "value of x", "y": "value of y"])
        #expect(two == ["z": "value of z", "y": "value of y"])
        #expect(batches.withLock { $0 } == [["x", "y"], ["z"]])
        #expect(!flights.isRunning("x") && !flights.isRunning("y") && !flights.isRunning("z"))
    }
}
