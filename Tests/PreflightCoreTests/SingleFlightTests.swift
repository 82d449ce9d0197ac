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

/// A shared operation outlives a cancelled caller while another still waits for it, and is cancelled
/// once every caller has been (the agent stopping), so that stopping never waits on an upstream call.
@Suite struct SingleFlightCancellationTests {
    /// An operation that runs until its gate opens or it is cancelled, and returns whether it was cancelled.
    final class GatedOperation: Sendable {
        let open = Atomic(false)
        let starts = Atomic(0)

        func run() async -> Bool {
            starts.add(1, ordering: .sequentiallyConsistent)
            while !open.load(ordering: .sequentiallyConsistent) && !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(1))
            }
            return Task.isCancelled
        }
    }

    private static func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = MonotonicInstant.now + .seconds(20)
        while !condition() {
            guard MonotonicInstant.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Two callers sharing one running operation.
    private static func twoCallersOfOneOperation() async throws -> (
        SingleFlight<String, Bool>, GatedOperation, Task<Bool, Never>, Task<Bool, Never>
    ) {
        let flight = SingleFlight<String, Bool>()
        let operation = GatedOperation()
        let first = Task { await flight.run("token") { await operation.run() } }
        let second = Task { await flight.run("token") { await operation.run() } }
        try await waitUntil("two waiters") { flight.waiters("token") == 2 }
        return (flight, operation, first, second)
    }

    @Test func oneCancelledCallerLeavesTheOperationToTheOther() async throws {
        let (flight, operation, first, second) = try await Self.twoCallersOfOneOperation()
        first.cancel()
        try await Self.waitUntil("one waiter") { flight.waiters("token") == 1 }
        operation.open.store(true, ordering: .sequentiallyConsistent)
        #expect(await second.value == false, "the operation was cancelled while a caller still waited")
        #expect(await first.value == false)
        #expect(operation.starts.load(ordering: .sequentiallyConsistent) == 1)
        #expect(!flight.isRunning("token"))
    }

    @Test func theOperationIsCancelledWhenEveryCallerIs() async throws {
        let (flight, _, first, second) = try await Self.twoCallersOfOneOperation()
        first.cancel()
        second.cancel()
        #expect(await first.value == true)
        #expect(await second.value == true)
        #expect(!flight.isRunning("token"))
    }
}
