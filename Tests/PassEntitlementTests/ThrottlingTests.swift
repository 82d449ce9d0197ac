import PreflightProtocol
import TestSupport
import Testing
import UpstreamHTTP

@testable import PassEntitlement

private func throttled(retryAfter: String?) -> HTTPResponse {
    var headers = ["content-type": "text/html"]
    if let retryAfter { headers["retry-after"] = retryAfter }
    return HTTPResponse(
        status: 429,
        headers: headers,
        body: Array("<html><head><title>429 Too Many Requests</title></head></html>".utf8)
    )
}

@Test func identicalConcurrentCommandsShareOneUpstreamCall() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["warm-up"])
    harness.fake.hold("preauthorize")
    let tasks = (0..<5).map { _ in
        Pending { await harness.preauthorize(["r1", "r2"]) }
    }
    #expect(await eventually { await harness.entitlement.batcher.waiting == 5 && harness.fake.gate.waiting == 1 })
    harness.fake.gate.open()
    for task in tasks {
        #expect(await task.wait() == permits(["r1", "r2"]))
    }
    #expect(harness.fake.count("preauthorize") == 2, "the warm-up and one shared call")
}

@Test func commandsWaitingForPacingShareBatches() async throws {
    // Burst spent: every call waits for its slot, and commands arriving meanwhile join the open batch.
    let harness = Harness(configuration: Harness.configuration(burst: 0))
    harness.login()
    let warmUp = Pending { await harness.preauthorize(["warm-up"]) }
    // register, token, configuration, profiles, preauthorize: each after the previous one's slot.
    for _ in 0..<4 {
        try #require(await eventually { harness.clock.sleeperCount == 1 })
        harness.clock.advance(by: .milliseconds(1100))
    }
    #expect(await warmUp.wait() == permits(["warm-up"]))
    let tasks = (0..<4).map { index in
        Pending { await harness.preauthorize(["r\(index)"]) }
    }
    // Four callers waiting is not yet their batch asleep for its slot: that is its own task, which may not
    // have got there; the clock must not move before it has.
    try #require(
        await eventually { await harness.entitlement.batcher.waiting == 4 && harness.clock.sleeperCount == 1 }
    )
    harness.clock.advance(by: .milliseconds(1100))
    for (index, task) in tasks.enumerated() {
        #expect(await task.wait() == permits(["r\(index)"]))
    }
    #expect(harness.fake.count("preauthorize") == 2)
    #expect(harness.fake.requests("preauthorize").last?.jsonBody?["resources"]?.arrayValue?.count == 4)
}

@Test func throttledRequestWaitsForRetryAfterAndSucceeds() async throws {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script("preauthorize", .respond(throttled(retryAfter: "3")))
    let task = Pending { await harness.preauthorize(["r1"]) }
    try #require(await eventually { harness.clock.sleeperCount == 1 })
    #expect(harness.clock.nextWakeUp == .seconds(3))
    #expect(harness.fake.count("preauthorize") == 2)
    harness.clock.advance(by: .seconds(3))
    #expect(await task.wait() == permits(["r1"]))
    #expect(harness.fake.count("preauthorize") == 3)
    #expect(
        harness.events.bodies("upstream.error").contains { $0["status"] == 429 && $0["operation"] == "preauthorize" }
    )
    #expect(harness.entitlement.snapshot().burstRemaining == 0)
}

@Test func throttledRequestWithoutRetryAfterBacksOff() async throws {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script("preauthorize", .respond(throttled(retryAfter: nil)), .respond(throttled(retryAfter: nil)))
    let task = Pending { await harness.preauthorize(["r1"]) }
    try #require(await eventually { harness.clock.sleeperCount == 1 })
    // One second of back-off, but never closer than the pacing interval to the refused request.
    #expect(harness.clock.nextWakeUp == .milliseconds(1100))
    harness.clock.advance(by: .milliseconds(1100))
    try #require(await eventually { harness.fake.count("preauthorize") == 3 && harness.clock.sleeperCount == 1 })
    #expect(harness.clock.nextWakeUp == .seconds(2))
    harness.clock.advance(by: .seconds(2))
    #expect(await task.wait() == permits(["r1"]))
}

@Test func throttlingBeyondTheDeadlineAnswersNetworkErrorAtOnce() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script("preauthorize", .respond(throttled(retryAfter: "60")))
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.outcome == "failure")
    #expect(answer.statusCode == "network_error")
    // The next command does not hit Adobe while the Retry-After lasts: it is answered without a call.
    let calls = harness.fake.count("preauthorize")
    #expect(await harness.preauthorize(["r2"]).statusCode == "network_error")
    #expect(harness.fake.count("preauthorize") == calls)
}

@Test func pacedRequestsWaitForTheirSlot() async throws {
    let harness = Harness(configuration: Harness.configuration(burst: 3))
    harness.login()
    // register, token, configuration and profiles spend the steady slot and the burst of 3.
    let task = Pending { await harness.preauthorize(["r1"]) }
    try #require(await eventually { harness.clock.sleeperCount == 1 })
    #expect(harness.fake.count("preauthorize") == 0)
    #expect(harness.clock.nextWakeUp == .milliseconds(1100))
    harness.clock.advance(by: .milliseconds(1100))
    #expect(await task.wait() == permits(["r1"]))
}

@Test func twentyAppsAtBootAllGetDecisionsDespiteThePacer() async {
    // The default budget (burst 10, then one per 1.1 s); twenty apps with different resources at once.
    let harness = Harness(configuration: Harness.configuration(burst: 10))
    harness.login()
    let finished = Counter()
    let tasks = (0..<20).map { index in
        Pending {
            let answer = await harness.preauthorize(["movie-\(index)"])
            finished.increment()
            return answer
        }
    }
    // Let the manual clock run whenever someone waits for a pacing slot.
    let done = await eventually {
        if finished.count == 20 { return true }
        if harness.clock.sleeperCount > 0 { harness.clock.advance(by: .milliseconds(100)) }
        return false
    }
    #expect(done)
    for (index, task) in tasks.enumerated() {
        #expect(task.value == permits(["movie-\(index)"]))
    }
    #expect(harness.fake.count("preauthorize") <= 10)
}
