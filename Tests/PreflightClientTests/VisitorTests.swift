import PreflightProtocol
import Testing

@testable import PreflightClient

/// The visitor commands' JSON, alone.
@Suite struct VisitorWireTests {
    @Test func aSetterSendsTheIdOrNullToClear() {
        #expect(
            JSONWriter.string(.object(VisitorWire.setArguments("thirdPartyId", "household-42")))
                == #"{"thirdPartyId":"household-42"}"#
        )
        #expect(JSONWriter.string(.object(VisitorWire.setArguments("tntId", nil))) == #"{"tntId":null}"#)
        // AEP's setters take an empty string as "clear"; the agent would refuse it.
        #expect(JSONWriter.string(.object(VisitorWire.setArguments("tntId", ""))) == #"{"tntId":null}"#)
    }

    @Test func anAnswerIsTheIdOrNilForNull() throws {
        let set = try JSONReader.read(#"{"thirdPartyId":"household-42"}"#)
        #expect(try VisitorWire.id("thirdPartyId", of: .setThirdPartyId, from: set) == "household-42")
        let none = try JSONReader.read(#"{"tntId":null}"#)
        #expect(try VisitorWire.id("tntId", of: .getTntId, from: none) == nil)
    }

    @Test func anAnswerWithoutTheIdIsABadReply() throws {
        for text in [#"{}"#, #"{"tntId":7}"#, #"{"sessionId":"s"}"#, #"[]"#] {
            let error = #expect(throws: PreflightError.self) {
                try VisitorWire.id("tntId", of: .getTntId, from: try JSONReader.read(text))
            }
            #expect(error?.code == .badReply, "\(text)")
            #expect(error?.message == "getTntId result without tntId")
        }
    }

    @Test func aResetAnswersHowManyCachedOffersWent() throws {
        #expect(try VisitorWire.cleared(from: try JSONReader.read(#"{"cleared":3}"#)) == 3)
        #expect(try VisitorWire.cleared(from: try JSONReader.read(#"{"cleared":0}"#)) == 0)
        for text in [#"{}"#, #"{"cleared":-1}"#, #"{"cleared":1.5}"#, #"{"cleared":"2"}"#, #"{"cleared":1e300}"#] {
            #expect(throws: PreflightError.self, "\(text)") {
                try VisitorWire.cleared(from: try JSONReader.read(text))
            }
        }
    }
}

/// The visitor calls against a fake agent: the bytes each puts on the wire, and what it makes of the answer.
@Suite struct VisitorCallTests {
    /// Makes one async call, checks the whole body the agent received (its id is "1"), answers `reply` (a result
    /// or an error), returns what the call returned.
    private func exchange<Answer: Sendable>(
        _ expectedBody: String,
        reply: Result<JSONValue, ProtocolError>,
        configuration: PreflightClient.Configuration = .patient,
        _ call: @escaping @Sendable (PreflightClient) async -> Answer
    ) async throws -> Answer {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: configuration)
        let task = Task { await call(client) }
        let received = try await agent.receive()
        #expect(String(decoding: received.body, as: UTF8.self) == expectedBody)
        switch reply {
        case .success(let result): try agent.reply(to: received, result: result)
        case .failure(let error): try agent.reply(to: received, error: error)
        }
        return await task.value
    }

    @Test func eachGetterSendsItsCommandAndReadsTheId() async throws {
        let thirdPartyId = try await exchange(
            #"{"v":1,"id":"1","cmd":"getThirdPartyId"}"#,
            reply: .success(["thirdPartyId": "household-42"])
        ) { await $0.getThirdPartyId() }
        #expect(thirdPartyId == "household-42")

        let tntId = try await exchange(
            #"{"v":1,"id":"1","cmd":"getTntId"}"#,
            reply: .success(["tntId": "59556adfc927491282bd524e396d0c1e.35_0"])
        ) { await $0.getTntId() }
        #expect(tntId == "59556adfc927491282bd524e396d0c1e.35_0")

        let sessionId = try await exchange(
            #"{"v":1,"id":"1","cmd":"getSessionId"}"#,
            reply: .success(["sessionId": "web-session-1"])
        ) { await $0.getSessionId() }
        #expect(sessionId == "web-session-1")

        let none = try await exchange(#"{"v":1,"id":"1","cmd":"getTntId"}"#, reply: .success(["tntId": .null])) {
            await $0.getTntId()
        }
        #expect(none == nil)
    }

    @Test func eachSetterSendsTheIdAndReturnsTheOneInEffect() async throws {
        let set = try await exchange(
            #"{"v":1,"id":"1","cmd":"setThirdPartyId","args":{"thirdPartyId":"household-42"}}"#,
            reply: .success(["thirdPartyId": "household-42"])
        ) { try? await $0.setThirdPartyId("household-42") }
        #expect(set == "household-42")

        let cleared = try await exchange(
            #"{"v":1,"id":"1","cmd":"setThirdPartyId","args":{"thirdPartyId":null}}"#,
            reply: .success(["thirdPartyId": .null])
        ) { client -> Result<String?, PreflightError> in
            do throws(PreflightError) { return .success(try await client.setThirdPartyId(nil)) } catch {
                return .failure(error)
            }
        }
        #expect(cleared == .success(nil))

        let tntId = try await exchange(
            #"{"v":1,"id":"1","cmd":"setTntId","args":{"tntId":"migrated-visitor-7"}}"#,
            reply: .success(["tntId": "migrated-visitor-7"])
        ) { try? await $0.setTntId("migrated-visitor-7") }
        #expect(tntId == "migrated-visitor-7")

        _ = try await exchange(
            #"{"v":1,"id":"1","cmd":"setTntId","args":{"tntId":null}}"#,
            reply: .success(["tntId": .null])
        ) { try? await $0.setTntId("") }

        let sessionId = try await exchange(
            #"{"v":1,"id":"1","cmd":"setSessionId","args":{"sessionId":"web-session-1"}}"#,
            reply: .success(["sessionId": "web-session-1"])
        ) { try? await $0.setSessionId("web-session-1") }
        #expect(sessionId == "web-session-1")
    }

    @Test func aRefusedIdThrowsTheAgentsInvalidArgumentWithItsField() async throws {
        let refused = try await exchange(
            #"{"v":1,"id":"1","cmd":"setSessionId","args":{"sessionId":"has space"}}"#,
            reply: .failure(
                .invalidArgument("sessionId", "sessionId may hold printable characters other than a space, ? and /")
            )
        ) { client -> PreflightError? in
            do throws(PreflightError) {
                try await client.setSessionId("has space")
                return nil
            } catch {
                return error
            }
        }
        #expect(refused?.code == .invalidArgument)
        #expect(refused?.field == "sessionId")
        #expect(refused?.isUnreachable == false)
    }

    @Test func resetExperienceSendsTheCommandAndReturnsHowManyOffersWent() async throws {
        let cleared = try await exchange(#"{"v":1,"id":"1","cmd":"resetExperience"}"#, reply: .success(["cleared": 2]))
        {
            try? await $0.resetExperience()
        }
        #expect(cleared == 2)
    }

    @Test func aResetWaitsThePreauthorizeTimeoutNotTheShortOne() async throws {
        // The agent sends the queued notifications before it answers a reset: longer than a get may take.
        let agent = try FakeAgent()
        let client = try PreflightClient(
            endpoint: agent.endpoint,
            configuration: .init(requestTimeout: .milliseconds(200), preauthorizeTimeout: .seconds(600), retries: 0)
        )
        let reset = Task { () throws(PreflightError) -> Int in try await client.resetExperience() }
        let resetRequest = try await agent.receive()
        #expect(resetRequest.request.command == "resetExperience")
        // A get sent after it, left unanswered, times out with the short timeout while the reset still waits
        // (with no retries left, the client keeps its socket, and the reset's answer comes on it).
        let get = Task { await client.getTntId() }
        let getRequest = try await agent.receive()
        #expect(getRequest.request.command == "getTntId")
        #expect(await get.value == nil)
        try agent.reply(to: resetRequest, result: ["cleared": 1])
        #expect(try await reset.value == 1)
    }

    @Test func theAEPFormsGoOutInTheOrderTheAppCalledThem() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: .patient)
        let (stream, sink) = AsyncStream.makeStream(of: String.self)

        callTheAEPForms(client, sink)
        // Each call was handed over before it returned (it took its id then), not by a task started later.
        #expect(client.core.makeID() == "6")

        var received: [FakeAgent.Received] = []
        for _ in 0..<5 { received.append(try await agent.receive()) }
        #expect(
            received.map { String(decoding: $0.body, as: UTF8.self) } == [
                #"{"v":1,"id":"1","cmd":"setThirdPartyId","args":{"thirdPartyId":"household-42"}}"#,
                #"{"v":1,"id":"2","cmd":"setTntId","args":{"tntId":null}}"#,
                #"{"v":1,"id":"3","cmd":"setSessionId","args":{"sessionId":"web-session-1"}}"#,
                #"{"v":1,"id":"4","cmd":"getThirdPartyId"}"#,
                #"{"v":1,"id":"5","cmd":"resetExperience"}"#,
            ]
        )
        let answers: [JSONValue] = [
            ["thirdPartyId": "household-42"], ["tntId": .null], ["sessionId": "web-session-1"],
            ["thirdPartyId": "household-42"], ["cleared": 0],
        ]
        for (request, answer) in zip(received, answers) {
            try agent.reply(to: request, result: answer)
        }
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == "getThirdPartyId household-42 nil")
    }

    @Test func theGettersCallbackFormsReadTheIdOrSayWhyNot() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: .patient)
        let (stream, sink) = AsyncStream.makeStream(of: String.self)
        var iterator = stream.makeAsyncIterator()

        callTheGetters(client, sink)
        let requests = [try await agent.receive(), try await agent.receive(), try await agent.receive()]
        #expect(requests.map(\.request.command) == ["getThirdPartyId", "getTntId", "getSessionId"])
        try agent.reply(to: requests[0], result: ["thirdPartyId": .null])
        #expect(await iterator.next() == "getThirdPartyId nil nil")
        try agent.reply(to: requests[1], result: ["tntId": "t.35_0"])
        #expect(await iterator.next() == "getTntId t.35_0 nil")
        try agent.reply(to: requests[2], result: ["session": "?"])
        #expect(await iterator.next() == "getSessionId nil bad_reply")
    }
}

/// No agent: the getters answer nil (the callback forms nil and why), the async setters and reset throw, the
/// fire-and-forget forms just return.
@Suite struct OfflineVisitorTests {
    let quick = PreflightClient.Configuration(requestTimeout: .seconds(10), retries: 2, retryDelay: .milliseconds(10))

    @Test func theGettersAnswerNilAndTheAsyncSettersThrowUnreachable() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        #expect(await client.getThirdPartyId() == nil)
        #expect(await client.getTntId() == nil)
        #expect(await client.getSessionId() == nil)
        let errors: [PreflightError?] = [
            await #expect(throws: PreflightError.self) { try await client.setThirdPartyId("household-42") },
            await #expect(throws: PreflightError.self) { try await client.setTntId(nil) },
            await #expect(throws: PreflightError.self) { try await client.setSessionId("web-session-1") },
            await #expect(throws: PreflightError.self) { try await client.resetExperience() },
        ]
        for error in errors {
            #expect(error?.code == .agentUnreachable)
            #expect(error?.isUnreachable == true)
        }
    }

    @Test func theAEPFormsCallBackWithNilAndTheErrorOrJustReturn() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        let (stream, sink) = AsyncStream.makeStream(of: String.self)

        callTheAEPForms(client, sink)
        callTheGetters(client, sink)

        var seen: [String] = []
        for await event in stream {
            seen.append(event)
            if seen.count == 4 { break }
        }
        #expect(
            seen.sorted() == [
                "getSessionId nil agent_unreachable", "getThirdPartyId nil agent_unreachable",
                "getThirdPartyId nil agent_unreachable", "getTntId nil agent_unreachable",
            ]
        )
    }

    @Test func afterCloseTheCallbacksStillCome() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        client.close()
        let (stream, sink) = AsyncStream.makeStream(of: String.self)
        callTheGetters(client, sink)
        var seen: [String] = []
        for await event in stream {
            seen.append(event)
            if seen.count == 3 { break }
        }
        #expect(Set(seen.map { $0.split(separator: " ").last! }) == ["client_closed"])
    }
}

/// The AEP forms, as an app's synchronous code calls them (async code picks the async overloads).
private func callTheAEPForms(_ client: PreflightClient, _ sink: AsyncStream<String>.Continuation) {
    client.setThirdPartyId("household-42")
    client.setTntId(nil)
    client.setSessionId("web-session-1")
    client.getThirdPartyId { id, error in sink.yield("getThirdPartyId \(id ?? "nil") \(describe(error))") }
    client.resetExperience()
}

private func callTheGetters(_ client: PreflightClient, _ sink: AsyncStream<String>.Continuation) {
    client.getThirdPartyId { id, error in sink.yield("getThirdPartyId \(id ?? "nil") \(describe(error))") }
    client.getTntId { id, error in sink.yield("getTntId \(id ?? "nil") \(describe(error))") }
    client.getSessionId { id, error in sink.yield("getSessionId \(id ?? "nil") \(describe(error))") }
}

private func describe(_ error: (any Error)?) -> String {
    guard let error else { return "nil" }
    return (error as? PreflightError)?.code.rawValue ?? "\(error)"
}
