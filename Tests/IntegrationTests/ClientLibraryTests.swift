import Foundation
import PreflightClient
import PreflightProtocol
import Synchronization
import Testing

/// The Swift client library against a real `preflightd`, with `preflight-sim` standing in for Adobe Target
/// and Adobe Pass: what an app on the box would see.
@Suite struct ClientLibraryTests {
    /// The seed example's prefetch (tests/python/test_target.py), through the SDK-shaped types.
    static var seedPrefetch: [TargetPrefetchObject] {
        var logo = TargetPrefetchObject(name: "logo", mboxParameters: ["status": "platinum"])
        logo.productParameters = ["id": "24D3412", "categoryId": "Books"]
        logo.orderParameters = ["id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"]
        var buttonColor = TargetPrefetchObject(name: "buttonColor", mboxParameters: ["userType": "Paid"])
        buttonColor.productParameters = ["id": "764334", "categoryId": "Online"]
        buttonColor.orderParameters = ["id": "4t4uxksa", "total": "54.90", "purchasedProductIds": "id1, id2"]
        return [logo, buttonColor]
    }

    static func seedLoad(_ callback: (@Sendable (String, String?) -> Void)? = nil) -> [TargetRequestObject] {
        [
            TargetRequestObject(name: "logo", defaultContent: "BlueWhale", mboxParameters: ["status": "platinum"]) {
                callback?("logo", $0)
            },
            TargetRequestObject(name: "buttonColor", defaultContent: "red") { callback?("buttonColor", $0) },
        ]
    }

    static let profile = ["age": "20-32"]

    @Test func seedPrefetchThenLoadIsServedFromTheCacheThroughTheCallbacks() async throws {
        let setup = try await UpstreamSetup()
        let client = try PreflightClient(endpoint: setup.agent.appEndpoint, configuration: .patient)

        let prefetched = await withCheckedContinuation { continuation in
            client.targetPrefetchContent(Self.seedPrefetch, profileParameters: Self.profile) { success in
                continuation.resume(returning: success)
            }
        }
        #expect(prefetched)

        let (stream, delivered) = AsyncStream.makeStream(of: (name: String, content: String?).self)
        startLoad(client, Self.seedLoad { delivered.yield(($0, $1)) }, profileParameters: Self.profile)
        var contents: [String: String?] = [:]
        for await (name, content) in stream {
            contents[name] = content
            if contents.count == 2 { break }
        }
        let logo = try #require(contents["logo"] ?? nil)
        #expect(logo.hasPrefix("<img"))
        #expect(try JSONReader.read(#require(contents["buttonColor"] ?? nil)) == ["color": "blue"])

        let again = await client.targetLoadRequests(Self.seedLoad(), profileParameters: Self.profile)
        #expect(again.map(\.source) == [.cache, .cache])
        #expect(again.allSatisfy { $0.failure == nil })
        // One prefetch call, and nothing fetched with execute: both loads were answered from the cache.
        let deliveries = try await setup.simulator.requests("delivery")
        #expect(deliveries.filter { $0["body"]?["prefetch"] != nil }.count == 1)
        #expect(deliveries.allSatisfy { $0["body"]?["execute"] == nil })
        let prefetchCall = try #require(deliveries.first { $0["body"]?["prefetch"] != nil })
        let logoMbox = prefetchCall["body"]?["prefetch"]?["mboxes"]?.arrayValue?.first
        #expect(logoMbox?["order"]?["purchasedProductIds"] == ["34", "125", "99"])
        #expect(logoMbox?["profileParameters"] == ["age": "20-32"])
        try await setup.finish()
    }

    @Test func aLoadOfAnMboxNotPrefetchedIsFetchedFromTargetNow() async throws {
        let setup = try await UpstreamSetup()
        let client = try PreflightClient(endpoint: setup.agent.appEndpoint, configuration: .patient)

        let contents = await client.targetLoadRequests([
            TargetRequestObject(name: "hero", defaultContent: "plain hero"),
            TargetRequestObject(name: "nothing-for-this", defaultContent: "fallback"),
        ])

        #expect(contents.map(\.source) == [.network, .default])
        #expect(contents[0].content != "plain hero")
        #expect(contents[1].content == "fallback")
        #expect(contents.allSatisfy { $0.failure == nil })
        #expect(try await client.targetPrefetchClearCache() == 0)
        try await setup.finish()
    }

    @Test func withoutAnAgentLoadsAnswerDefaultsAndPreauthorizeFailsWithNetworkError() async throws {
        // No socket file at all, and a socket file left by a killed agent that nobody serves.
        let neverStarted = try TestFolder()
        let killed = try await AgentProcess()
        try await killed.stop(signal: SIGKILL)
        #expect(FileManager.default.fileExists(atPath: killed.socketFiles[0]))

        for endpoint in ["ipc://\(neverStarted.path("run/app.sock"))", killed.appEndpoint] {
            let client = try PreflightClient(endpoint: endpoint, requestor: "acme-requestor")
            let contents = await client.targetLoadRequests(Self.seedLoad(), profileParameters: Self.profile)
            #expect(contents.map(\.content) == ["BlueWhale", "red"])
            #expect(contents.map(\.source) == [.default, .default])
            #expect(contents.allSatisfy { $0.failure?.code == .agentUnreachable })
            #expect(await client.targetPrefetchContent(Self.seedPrefetch) == false)

            let request = PreauthorizeRequest.Builder().setResources(["resource1"]).build()
            let failure = await #expect(throws: PreauthorizeFailure.self) { try await client.preauthorize(request) }
            #expect(failure?.status.getCode() == "network_error")
            #expect(failure?.status.getStatus() == 0)
            #expect(failure?.response.getDecisions().isEmpty == true)
        }
    }

    @Test func survivesAnAgentRestartWithoutANewClient() async throws {
        let setup = try await UpstreamSetup()
        let client = try PreflightClient(endpoint: setup.agent.appEndpoint)
        #expect(await client.targetPrefetchContent(Self.seedPrefetch, profileParameters: Self.profile))
        #expect(await client.targetLoadRequests(Self.seedLoad()).map(\.source) == [.cache, .cache])

        try await setup.agent.stop(signal: SIGTERM)
        let whileDown = await client.targetLoadRequests(Self.seedLoad())
        #expect(whileDown.map(\.content) == ["BlueWhale", "red"])
        #expect(whileDown.allSatisfy { $0.failure?.isUnreachable == true })

        try await setup.agent.restart()
        // The same client: its socket reconnects by itself. The cache died with the old agent, so prefetch again.
        #expect(await client.targetPrefetchContent(Self.seedPrefetch, profileParameters: Self.profile))
        let afterRestart = await client.targetLoadRequests(Self.seedLoad())
        #expect(afterRestart.map(\.source) == [.cache, .cache])
        #expect(afterRestart.allSatisfy { $0.failure == nil })
        try await setup.finish()
    }

    @Test func loadsRunningThroughARestartAllAnswerAndTheAgentServesThemAgainAfterIt() async throws {
        // Target unreachable (the default test configuration): the agent itself answers each load's default.
        let agent = try await AgentProcess()
        let client = try PreflightClient(endpoint: agent.appEndpoint)
        let running = Flag()
        let servedAfterRestart = Flag()
        let restarted = Flag()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var answered = 0
                    while !servedAfterRestart.isSet && !Task.isCancelled {
                        let contents = await client.targetLoadRequests([
                            TargetRequestObject(name: "worker\(worker)", defaultContent: "default \(worker)")
                        ])
                        #expect(contents.map(\.content) == ["default \(worker)"])
                        answered += 1
                        running.set()
                        if restarted.isSet, contents[0].failure == nil { servedAfterRestart.set() }
                        await Task.yield()
                    }
                    return answered
                }
            }
            try await waitFor("loads to be running") { running.isSet }
            try await agent.stop(signal: SIGTERM)
            try await agent.restart()
            restarted.set()
            try await waitFor(timeout: .seconds(60), "a load answered by the restarted agent") {
                servedAfterRestart.isSet
            }
            var total = 0
            for try await answered in group { total += answered }
            #expect(total >= 8)
        }
        #expect(try await client.ping().version == preflightVersion)
    }

    @Test func aHungAgentTimesOutToDefaultsAndServesAgainOnceItWakes() async throws {
        let agent = try await AgentProcess()
        let client = try PreflightClient(
            endpoint: agent.appEndpoint,
            configuration: .init(requestTimeout: .milliseconds(500), retries: 1)
        )
        // Short attempts: on a loaded machine even a running agent may miss one, so wait until one is answered.
        try await waitFor("the agent to answer within an attempt") { (try? await client.ping()) != nil }
        // Stopped: the socket file is live (the kernel still accepts connections), but nothing answers.
        try await agent.suspend()
        let stopped = await client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        kill(agent.process.processIdentifier, SIGCONT)

        #expect(stopped.map(\.content) == ["d"])
        #expect(stopped.first?.failure?.code == .timedOut)
        // Awake again, it works through the connections that piled up; the same client is answered soon.
        try await waitFor(timeout: .seconds(60), "a load answered by the woken agent") {
            let awake = await client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
            #expect(awake.map(\.content) == ["d"])
            return awake.first?.failure == nil
        }
    }

    @Test func seedPreauthorizeWithLocalCacheDisabledAgainstAdobePass() async throws {
        let setup = try await UpstreamSetup()
        try await setup.logIn()
        let client = try PreflightClient(
            endpoint: setup.agent.appEndpoint,
            requestor: UpstreamSetup.requestor,
            configuration: .patient
        )
        try await setup.waitUntilConfigured(client)
        let callsBefore = try await setup.simulator.requests("preauthorize").count

        let request = PreauthorizeRequest.Builder()
            .setResources(["resource1", "resource2", "resource3"])
            .disableFeatures([.localCache])
            .build()
        let (outcome, response) = await withCheckedContinuation { continuation in
            client.preauthorize(
                request,
                didCompleteWith: AccessEnablerCallback<PreauthorizeResponse>(
                    onResponse: { continuation.resume(returning: ("response", $0)) },
                    onFailure: { continuation.resume(returning: ("failure", $0)) }
                )
            )
        }

        #expect(outcome == "response")
        #expect(response.getStatus() == nil)
        #expect(response.getDecisions().map { $0.getId() } == ["resource1", "resource2", "resource3"])
        #expect(response.getDecisions().allSatisfy { $0.isAuthorized() && $0.getError() == nil })
        // LOCAL_CACHE disabled: asked Adobe Pass again, also the second time.
        let again = try await client.preauthorize(request)
        #expect(again.getDecisions().map { $0.isAuthorized() } == [true, true, true])
        #expect(try await setup.simulator.requests("preauthorize").count == callsBefore + 2)
        try await setup.finish()
    }

    @Test func aDenialCarriesAdobesEnhancedErrorAndALoggedOutUserFails() async throws {
        let setup = try await UpstreamSetup()
        try await setup.logIn()
        let enhanced: JSONValue = [
            "status": 403, "code": "preauthorization_denied_by_mvpd", "message": "The MVPD said no.",
            "details": "Your package does not include this channel.", "helpUrl": "https://example.com/help",
            "trace": "8bcb17f9", "action": "none",
        ]
        try await setup.simulator.call(
            "PUT",
            "/_sim/pass/decisions",
            [
                "serviceProvider": .string(UpstreamSetup.requestor),
                "decisions": ["r2": ["authorized": false, "error": enhanced]],
            ]
        )
        let client = try PreflightClient(
            endpoint: setup.agent.appEndpoint,
            requestor: UpstreamSetup.requestor,
            configuration: .patient
        )
        try await setup.waitUntilConfigured(client)

        let response = try await client.preauthorize(PreauthorizeRequest.Builder().setResources(["r1", "r2"]).build())

        #expect(response.getDecisions().map { $0.isAuthorized() } == [true, false])
        let error = try #require(response.getDecisions()[1].getError())
        #expect(error.getStatus() == 403)
        #expect(error.getCode() == "preauthorization_denied_by_mvpd")
        #expect(error.getDetails() == "Your package does not include this channel.")
        #expect(error.getHelpUrl() == "https://example.com/help")
        #expect(error.getTrace() == "8bcb17f9")
        #expect(error.getAction() == "none")

        try await setup.simulator.call("POST", "/_sim/pass/logout", [:])
        try setup.agent.adminCall("auth.clear")
        let failure = await #expect(throws: PreauthorizeFailure.self) {
            try await client.preauthorize(
                PreauthorizeRequest.Builder().setResources(["r1"]).disableFeatures(.localCache).build()
            )
        }
        #expect(failure?.status.getCode() == "authentication_session_missing")
        #expect(failure?.status.getAction() == "authentication")
        try await setup.finish()
    }

    @Test func twoHundredConcurrentLoadsFromFiftyTasksEachGetTheirOwnContent() async throws {
        let setup = try await UpstreamSetup()
        var offers = JSONObject()
        for index in 0..<50 {
            offers["m\(index)"] = ["options": [["type": "html", "content": .string("offer \(index)")]]]
        }
        try await setup.simulator.call("PUT", "/_sim/target/offers", .object(offers))
        let client = try PreflightClient(endpoint: setup.agent.appEndpoint, configuration: .patient)
        try #require(await client.targetPrefetchContent((0..<50).map { TargetPrefetchObject(name: "m\($0)") }))

        let results = await withTaskGroup(of: [(expected: [String], got: [TargetContent])].self) { group in
            for task in 0..<50 {
                group.addTask {
                    // Four loads at once from each task, two mboxes each: 200 loads in flight together.
                    func load(_ number: Int) async -> (expected: [String], got: [TargetContent]) {
                        let mboxes = [(task * 4 + number) % 50, (task * 4 + number + 25) % 50]
                        let got = await client.targetLoadRequests(
                            mboxes.map {
                                TargetRequestObject(name: "m\($0)", defaultContent: "default \(task)-\(number)")
                            }
                        )
                        return (mboxes.map { "offer \($0)" }, got)
                    }
                    async let first = load(0)
                    async let second = load(1)
                    async let third = load(2)
                    async let fourth = load(3)
                    return await [first, second, third, fourth]
                }
            }
            var all: [(expected: [String], got: [TargetContent])] = []
            for await batch in group { all += batch }
            return all
        }

        #expect(results.count == 200)
        for result in results {
            #expect(result.got.map(\.content) == result.expected)
            #expect(result.got.allSatisfy { $0.source == .cache && $0.failure == nil })
        }
        try await setup.finish()
    }
}

/// preflight-sim plus a preflightd that uses it for Target and Adobe Pass, each with its own folder and ports
/// (the set-up of tests/python/test_pass.py and conftest.py's target_env).
final class UpstreamSetup {
    static let requestor = "acme-requestor"
    static let mvpd = "Cablevision"
    /// JWT-shaped, as the simulator's registration requires (tests/python/agent_harness.py).
    static let softwareStatement =
        "eyJhbGciOiJub25lIn0.eyJ0ZXN0IjoicHJlZmxpZ2h0LXNlY3JldCJ9.c2VjcmV0LXNpZ25hdHVyZQ"

    let simulatorFolder: TestFolder
    let simulator: SimulatorProcess
    let agent: AgentProcess

    /// Upstream timeouts are generous: a busy two-core machine may keep the Python simulator seconds from
    /// answering, and these tests are about the client, not about upstream timeouts.
    init() async throws {
        simulatorFolder = try TestFolder()
        simulator = try await SimulatorProcess(folder: simulatorFolder)
        try await simulator.start()
        agent = try await AgentProcess(extra: [
            "target": ["serverURL": .string(simulator.url), "notificationBatchAge": 0.2, "timeout": 30],
            "pass": [
                "serverURL": .string(simulator.url), "softwareStatement": .string(Self.softwareStatement),
                "requestors": [.string(Self.requestor)], "deviceIdentifier": "test-box-0001",
                "timeout": 30, "answerDeadline": 50,
            ],
        ])
    }

    /// Logs the box in at the simulated MVPD for an hour (second-screen login done).
    func logIn() async throws {
        try await simulator.call(
            "POST",
            "/_sim/pass/login",
            ["serviceProvider": .string(Self.requestor), "mvpd": .string(Self.mvpd), "ttlSeconds": 3600]
        )
    }

    /// The agent fetches the requestor's configuration in the background after it starts.
    func waitUntilConfigured(_ client: PreflightClient) async throws {
        let probe = PreauthorizeRequest.Builder().setResources(["probe"]).disableFeatures(.localCache).build()
        try await waitFor(timeout: .seconds(60), "the requestor configuration") {
            do throws(PreauthorizeFailure) {
                _ = try await client.preauthorize(probe)
                return true
            } catch {
                return error.status.getCode() != "requestor_not_configured"
            }
        }
    }

    /// Ends the test: the simulator saw nothing the real services would refuse, and no secret reached the log.
    func finish() async throws {
        #expect(try await simulator.violationCount() == 0)
        #expect(!agent.log.contains(Self.softwareStatement))
    }
}

extension AgentProcess {
    /// One admin command, as preflightctl sends it.
    @discardableResult
    func adminCall(_ command: String, args: JSONObject? = nil) throws -> JSONValue {
        let connection = try AgentConnection(endpoint: adminEndpoint, timeout: .seconds(10))
        return try connection.request(command, args: args)
    }
}

/// A flag set once from any task.
final class Flag: Sendable {
    private let state = Mutex(false)
    var isSet: Bool { state.withLock { $0 } }
    func set() { state.withLock { $0 = true } }
}

/// The callback form of `targetLoadRequests`, which async code cannot name (it picks the async overload): an
/// app's synchronous UI code calls it like this.
func startLoad(_ client: PreflightClient, _ requests: [TargetRequestObject], profileParameters: [String: String]? = nil)
{
    client.targetLoadRequests(requests, profileParameters: profileParameters)
}

extension PreflightClient.Configuration {
    /// For tests whose agent is up: attempts long enough for the slowest machine (a retry would hide nothing
    /// here, but a give-up after the default 3 × 6 s on a loaded 2-core machine would be a false failure).
    static let patient = Self(requestTimeout: .seconds(60), preauthorizeTimeout: .seconds(60))
}
