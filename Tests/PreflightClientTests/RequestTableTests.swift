import Testing

@testable import PreflightClient

/// The Lazy Pirate policy, with time passed in: no sockets, no sleeping.
@Suite struct RequestTableTests {
    let start = ContinuousClock.now
    let timeout = Duration.seconds(5)

    private func describe(_ attempts: Int, _ timeout: Duration) -> PreflightError {
        PreflightError(code: .timedOut, message: "\(attempts) attempts")
    }

    private func table(_ ids: [String], maxAttempts: Int = 3) -> RequestTable<String> {
        var table = RequestTable<String>(maxAttempts: maxAttempts)
        for id in ids {
            table.add(id: id, body: Array(id.utf8), timeout: timeout, waiter: "waiter-\(id)", now: start)
        }
        return table
    }

    private func sendAll(_ table: inout RequestTable<String>) -> [String] {
        var sent: [String] = []
        while let (id, _) = table.nextToSend() {
            table.markSent(id)
            sent.append(id)
        }
        return sent
    }

    @Test func sendsInSubmissionOrderAndCompletesByID() {
        var table = table(["1", "2", "3"])
        #expect(sendAll(&table) == ["1", "2", "3"])
        #expect(!table.hasReadyToSend())
        #expect(table.complete("2") == "waiter-2")
        #expect(table.complete("2") == nil)
        #expect(table.count == 2)
    }

    @Test func aSentRequestPastItsDeadlineIsSentAgainOnANewSocket() {
        var table = table(["1", "2"])
        _ = sendAll(&table)
        table.add(id: "3", body: [], timeout: timeout, waiter: "waiter-3", now: start + .seconds(3))
        _ = sendAll(&table)

        let expiry = table.expire(now: start + timeout, describe: describe)

        #expect(expiry.failed.isEmpty)
        #expect(expiry.needsNewSocket)
        #expect(table.attempt(of: "1") == 2)
        #expect(table.attempt(of: "3") == 1)
        table.requeueSent()
        // Everything still waiting for a reply goes again, oldest first; 3 keeps its own deadline.
        #expect(sendAll(&table) == ["1", "2", "3"])
        #expect(table.nextWakeUp() == start + .seconds(8))
    }

    @Test func theLastAttemptPastItsDeadlineFailsTheRequest() {
        var table = table(["1"], maxAttempts: 2)
        _ = sendAll(&table)
        _ = table.expire(now: start + timeout, describe: describe)
        table.requeueSent()
        _ = sendAll(&table)

        let expiry = table.expire(now: start + timeout * 2, describe: describe)

        #expect(expiry.failed.map(\.waiter) == ["waiter-1"])
        #expect(expiry.failed.first?.error == PreflightError(code: .timedOut, message: "2 attempts"))
        #expect(table.isEmpty)
        #expect(table.nextWakeUp() == nil)
    }

    @Test func nothingHappensBeforeADeadline() {
        var table = table(["1"])
        _ = sendAll(&table)
        let expiry = table.expire(now: start + timeout - .milliseconds(1), describe: describe)
        #expect(expiry.failed.isEmpty)
        #expect(!expiry.needsNewSocket)
        #expect(table.nextWakeUp() == start + timeout)
    }

    @Test func retryLaterWaitsOutTheDelayThenSendsAgain() {
        var table = table(["1"])
        _ = sendAll(&table)
        let reason = PreflightError(code: .shuttingDown, message: "stopping")

        #expect(table.retryLater("1", reason: reason, delay: .milliseconds(100), now: start) == nil)

        #expect(!table.hasReadyToSend())
        #expect(table.nextWakeUp() == start + .milliseconds(100))
        _ = table.expire(now: start + .milliseconds(99), describe: describe)
        #expect(!table.hasReadyToSend())
        let expiry = table.expire(now: start + .milliseconds(100), describe: describe)
        #expect(!expiry.needsNewSocket)
        #expect(sendAll(&table) == ["1"])
        // The new attempt's deadline counts from the end of the delay.
        #expect(table.nextWakeUp() == start + .milliseconds(100) + timeout)
    }

    @Test func retryLaterOnTheLastAttemptFailsWithTheReason() {
        var table = table(["1"], maxAttempts: 2)
        let reason = PreflightError(code: .agentUnreachable, message: "no socket file")
        #expect(table.retryLater("1", reason: reason, delay: .zero, now: start) == nil)
        _ = table.expire(now: start, describe: describe)

        let failed = table.retryLater("1", reason: reason, delay: .zero, now: start)

        #expect(failed?.waiter == "waiter-1")
        #expect(failed?.error == reason)
        #expect(table.isEmpty)
    }

    @Test func aSingleAttemptTableNeverRetries() {
        var table = table(["1"], maxAttempts: 1)
        let failed = table.retryLater(
            "1",
            reason: PreflightError(code: .overloaded, message: "busy"),
            delay: .zero,
            now: start
        )
        #expect(failed?.error.code == .overloaded)
    }

    @Test func backoffDoublesFromTheBase() {
        let base = Duration.milliseconds(100)
        #expect(RequestTable<String>.backoff(base: base, after: 1) == .milliseconds(100))
        #expect(RequestTable<String>.backoff(base: base, after: 2) == .milliseconds(200))
        #expect(RequestTable<String>.backoff(base: base, after: 3) == .milliseconds(400))
    }

    @Test func aRequestWaitingForAConnectionPastItsDeadlineAsksForANewSocketToo() {
        var table = table(["1"])
        let expiry = table.expire(now: start + timeout, describe: describe)
        #expect(expiry.needsNewSocket)
        #expect(table.readyIDs() == ["1"])
        #expect(sendAll(&table) == ["1"])
    }

    @Test func answeredAndDelayedRequestsAreNotSentTwice() {
        var table = table(["1", "2", "3"])
        _ = table.complete("1")
        _ = table.retryLater(
            "2",
            reason: PreflightError(code: .shuttingDown, message: ""),
            delay: .seconds(1),
            now: start
        )
        #expect(sendAll(&table) == ["3"])
        _ = table.expire(now: start + .seconds(1), describe: describe)
        #expect(sendAll(&table) == ["2"])
        table.requeueSent()
        #expect(sendAll(&table) == ["2", "3"])
    }

    @Test func removeAllHandsBackEveryWaiterInOrder() {
        var table = table(["1", "2", "3"])
        _ = sendAll(&table)
        #expect(table.removeAll() == ["waiter-1", "waiter-2", "waiter-3"])
        #expect(table.isEmpty)
        #expect(!table.hasReadyToSend())
    }
}
