import PreflightProtocol
import Testing
import ZeroMQ

@testable import PreflightClient

/// A ROUTER socket playing the agent, frame by frame: what the client sends, and what it does with replies
/// that come out of order, late, or never.
final class FakeAgent {
    struct Received {
        var routingID: [UInt8]
        var request: Request
        /// The body exactly as it came over the wire.
        var body: [UInt8]
    }

    let folder: ScratchFolder
    let endpoint: String
    private let context: ZeroMQContext
    private let socket: ZeroMQSocket

    init() throws {
        folder = try ScratchFolder()
        endpoint = "ipc://\(folder.file("app.sock"))"
        context = try ZeroMQContext(ioThreads: 1)
        socket = try context.makeSocket(.router)
        try socket.setOption(.linger(milliseconds: 0))
        try socket.bind(endpoint)
    }

    deinit {
        socket.close()
    }

    /// The next request, waiting up to `timeout` (generous: the client's thread may be slow to get a core).
    ///
    /// Polls without blocking and sleeps in between: a test blocking a thread of the small cooperative pool
    /// (two threads on a two-core machine) would stop the very tasks that are to send the request.
    func receive(timeout: Duration = .seconds(30)) async throws -> Received {
        guard try await hasRequest(within: timeout) else {
            throw ScratchError(message: "no request within \(timeout)")
        }
        let frames = try socket.receive()
        guard frames.count == 3, frames[1].isEmpty else {
            throw ScratchError(message: "expected [routing id][empty][body], got \(frames.count) frames")
        }
        return Received(routingID: frames[0], request: try Request.decode(frames[2]).get(), body: frames[2])
    }

    /// Whether a request arrives within `timeout`.
    func hasRequest(within timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            var items = [PollItem(socket: socket, events: .readable)]
            if try poll(&items, timeout: .zero) > 0 { return true }
            if ContinuousClock.now >= deadline { return false }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    func reply(to received: Received, result: JSONValue) throws {
        try socket.send([received.routingID, [], Reply.success(id: received.request.id, result: result)])
    }

    func reply(to received: Received, error: ProtocolError) throws {
        try socket.send([received.routingID, [], Reply.failure(id: received.request.id, error: error)])
    }

    /// A `loadRequests` result answering each request with its default content plus `suffix`, from `cache`.
    static func echoContents(_ request: Request, suffix: String) -> JSONValue {
        let requests = request.args?["requests"]?.arrayValue ?? []
        return [
            "contents": .array(
                requests.map {
                    [
                        "name": $0["name"] ?? "",
                        "content": .string(($0["defaultContent"]?.stringValue ?? "") + suffix),
                        "source": "cache",
                    ]
                }
            )
        ]
    }
}

@Suite struct FakeAgentTests {
    @Test func eachCommandPutsTheDocumentedJSONOnTheWire() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, requestor: "acme-requestor", configuration: .patient)

        async let load = client.targetLoadRequests([
            TargetRequestObject(name: "logo", defaultContent: "BlueWhale", mboxParameters: ["status": "platinum"])
        ])
        let loadRequest = try await agent.receive()
        // The whole body, byte for byte: docs/APPS.md's JSON, compact, keys in the order this client writes them
        // (its first request has id "1").
        #expect(
            String(decoding: loadRequest.body, as: UTF8.self)
                == #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"logo","#
                + #""defaultContent":"BlueWhale","mboxParameters":{"status":"platinum"}}]}}"#
        )
        try agent.reply(to: loadRequest, result: FakeAgent.echoContents(loadRequest.request, suffix: ""))
        #expect(await load.map(\.failure) == [nil])

        async let preauthorize = client.preauthorize(
            PreauthorizeRequest.Builder().setResources(["r1"]).disableFeatures(.localCache).build()
        )
        let passRequest = try await agent.receive()
        #expect(
            String(decoding: passRequest.body, as: UTF8.self)
                == #"{"v":1,"id":"2","cmd":"preauthorize","args":{"requestor":"acme-requestor","resources":["r1"],"#
                + #""disabledFeatures":["LOCAL_CACHE"]}}"#
        )
        try agent.reply(
            to: passRequest,
            result: ["outcome": "response", "resources": [["id": "r1", "authorized": true]]]
        )
        #expect(try await preauthorize.getDecisions().map { $0.isAuthorized() } == [true])

        async let cleared = client.targetPrefetchClearCache()
        let clearRequest = try await agent.receive()
        #expect(String(decoding: clearRequest.body, as: UTF8.self) == #"{"v":1,"id":"3","cmd":"clearPrefetchCache"}"#)
        try agent.reply(to: clearRequest, result: ["cleared": 3])
        #expect(try await cleared == 3)
    }

    @Test func repliesOutOfOrderReachTheCallersTheyBelongTo() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: .patient)

        async let first = client.targetLoadRequests([TargetRequestObject(name: "a", defaultContent: "first")])
        async let second = client.targetLoadRequests([TargetRequestObject(name: "b", defaultContent: "second")])
        async let third = client.targetLoadRequests([TargetRequestObject(name: "c", defaultContent: "third")])
        var received = [try await agent.receive(), try await agent.receive(), try await agent.receive()]
        // All three came pipelined over one connection, with distinct ids.
        #expect(Set(received.map(\.routingID)).count == 1)
        #expect(Set(received.map(\.request.id)).count == 3)
        received.reverse()
        for request in received {
            try agent.reply(to: request, result: FakeAgent.echoContents(request.request, suffix: " answered"))
        }

        #expect(await first.map(\.content) == ["first answered"])
        #expect(await second.map(\.content) == ["second answered"])
        #expect(await third.map(\.content) == ["third answered"])
    }

    @Test func aRequestWithoutAReplyIsSentAgainOnANewSocket() async throws {
        let agent = try FakeAgent()
        // Short attempts, and many: on a loaded machine a reply may miss an attempt; one must get through.
        let client = try PreflightClient(
            endpoint: agent.endpoint,
            configuration: .init(requestTimeout: .milliseconds(300), retries: 100)
        )
        let finished = LockedBox<[TargetContent]?>(nil)
        let load = Task {
            let contents = await client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
            finished.withLock { $0 = contents }
        }

        let ignored = try await agent.receive()
        var retries = 0
        while finished.withLock({ $0 }) == nil {
            guard try await agent.hasRequest(within: .milliseconds(20)) else { continue }
            let retried = try await agent.receive()
            #expect(retried.request == ignored.request)
            #expect(retried.routingID != ignored.routingID)
            retries += 1
            try agent.reply(to: retried, result: FakeAgent.echoContents(retried.request, suffix: "!"))
        }
        await load.value

        #expect(retries >= 1)
        let contents = try #require(finished.withLock { $0 })
        #expect(contents.map(\.content) == ["d!"])
        #expect(contents.first?.failure == nil)
    }

    @Test func afterTheLastAttemptALoadAnswersItsDefault() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(
            endpoint: agent.endpoint,
            configuration: .init(requestTimeout: .milliseconds(200), retries: 1)
        )

        async let load = client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        let first = try await agent.receive()
        let second = try await agent.receive()
        let contents = await load

        #expect(first.request.id == second.request.id)
        #expect(contents.map(\.content) == ["d"])
        #expect(contents.first?.failure?.code == .timedOut)
        // Two attempts in all: nothing more is sent.
        #expect(try await !agent.hasRequest(within: .milliseconds(300)))
    }

    @Test func shuttingDownAndOverloadedAreTriedAgain() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(
            endpoint: agent.endpoint,
            configuration: .init(requestTimeout: .seconds(60), retryDelay: .milliseconds(10))
        )

        async let load = client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        let first = try await agent.receive()
        try agent.reply(to: first, error: .shuttingDown())
        let second = try await agent.receive()
        try agent.reply(to: second, error: .overloaded(retryAfterMs: 20))
        let third = try await agent.receive()
        try agent.reply(to: third, result: FakeAgent.echoContents(third.request, suffix: "!"))

        #expect(Set([first.request.id, second.request.id, third.request.id]).count == 1)
        #expect(await load.map(\.content) == ["d!"])
    }

    @Test func anInvalidArgumentIsNotRetriedAndTheLoadAnswersItsDefault() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: .patient)

        async let load = client.targetLoadRequests([TargetRequestObject(name: "", defaultContent: "d")])
        let request = try await agent.receive()
        try agent.reply(to: request, error: .invalidArgument("requests[0].name", "name must be 1 to 250 characters"))
        let contents = await load

        #expect(contents.map(\.content) == ["d"])
        #expect(contents.first?.failure?.code == .invalidArgument)
        #expect(contents.first?.failure?.field == "requests[0].name")
        #expect(try await !agent.hasRequest(within: .milliseconds(200)))
    }

    @Test func cancellingTheCallingTaskEndsItsWait() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: .init(requestTimeout: .seconds(600)))

        let load = Task {
            await client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        }
        _ = try await agent.receive()
        load.cancel()
        let contents = await load.value

        #expect(contents.map(\.content) == ["d"])
        #expect(contents.first?.failure?.code == .cancelled)
    }

    @Test func closeEndsEveryWaitingCall() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(
            endpoint: agent.endpoint,
            requestor: "acme-requestor",
            configuration: .init(requestTimeout: .seconds(600), preauthorizeTimeout: .seconds(600))
        )

        async let load = client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        async let preauthorize = client.preauthorize(PreauthorizeRequest.Builder().setResources(["r1"]).build())
        _ = try await agent.receive()
        _ = try await agent.receive()
        client.close()

        #expect(await load.first?.failure?.code == .closed)
        do {
            _ = try await preauthorize
            Issue.record("preauthorize succeeded after close()")
        } catch let failure as PreauthorizeFailure {
            #expect(failure.status.getCode() == "network_error")
        }
    }

    @Test func theCallbackFormsCallBack() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, requestor: "acme-requestor", configuration: .patient)
        let (stream, events) = AsyncStream.makeStream(of: String.self)

        startLoad(
            client,
            [
                TargetRequestObject(name: "logo", defaultContent: "d") { events.yield("logo: \($0 ?? "nil")") }
            ]
        )
        let load = try await agent.receive()
        try agent.reply(to: load, result: FakeAgent.echoContents(load.request, suffix: "!"))
        client.targetPrefetchContent([TargetPrefetchObject(name: "logo")], profileParameters: nil) {
            events.yield("prefetch: \($0)")
        }
        let prefetch = try await agent.receive()
        try agent.reply(to: prefetch, result: ["success": true, "mboxes": [["name": "logo", "cached": true]]])
        client.preauthorize(
            PreauthorizeRequest.Builder().setResources(["r1"]).build(),
            didCompleteWith: AccessEnablerCallback(
                onResponse: { events.yield("response: \($0.getDecisions().count)") },
                onFailure: { events.yield("failure: \($0.getStatus()?.getCode() ?? "")") }
            )
        )
        let preauthorize = try await agent.receive()
        try agent.reply(
            to: preauthorize,
            result: [
                "outcome": "failure", "resources": [],
                "status": [
                    "status": 0, "code": "authentication_session_missing", "message": "m", "action": "authentication",
                ],
            ]
        )

        var seen: [String] = []
        for await event in stream {
            seen.append(event)
            if seen.count == 3 { break }
        }
        #expect(seen.sorted() == ["failure: authentication_session_missing", "logo: d!", "prefetch: true"])
    }
}

/// The callback form of `targetLoadRequests`, which async code cannot name (it picks the async overload, which
/// calls the callbacks too, but waits): an app's synchronous UI code calls it like this.
func startLoad(_ client: PreflightClient, _ requests: [TargetRequestObject], profileParameters: [String: String]? = nil)
{
    client.targetLoadRequests(requests, profileParameters: profileParameters)
}
