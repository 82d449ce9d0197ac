import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import Testing
import UpstreamHTTP

@testable import TargetOffers

/// A Delivery API with one registered QA mode token: a request with another `qaMode.token` is refused as
/// Target refuses it (400 `Invalid QA mode token`); every other request is answered, every notification
/// acknowledged and every mbox answered with content (`P` under the preview, `L` live) and, for a request
/// traced with the accepted token, a `trace`.
private final class PreviewingDelivery: HTTPTransport {
    let previewToken: String
    let traceToken: String
    private let sentBodies = Mutex<[JSONValue]>([])

    init(previewToken: String = "preview-token-1", traceToken: String = "trace-token-1") {
        self.previewToken = previewToken
        self.traceToken = traceToken
    }

    var bodies: [JSONValue] { sentBodies.withLock { $0 } }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let body = (try? JSONReader.read(request.body)) ?? .null
        sentBodies.withLock { $0.append(body) }
        let qaToken = body["qaMode"]?["token"]?.stringValue
        if let qaToken, qaToken != previewToken {
            return HTTPResponse(status: 400, body: Array(#"{"status":400,"message":"Invalid QA mode token"}"#.utf8))
        }
        let traced = body["trace"]?["authorizationToken"]?.stringValue == traceToken
        func answers(_ kind: String) -> JSONValue {
            .array(
                (body[kind]?["mboxes"]?.arrayValue ?? []).map { mbox in
                    var answer: JSONObject = [
                        "index": mbox["index"] ?? 0, "name": mbox["name"] ?? .null,
                        "options": [
                            ["type": "html", "content": qaToken == nil ? "L" : "P", "eventToken": "t"]
                        ],
                    ]
                    if traced { answer["trace"] = ["request": ["mbox": ["name": mbox["name"] ?? .null]]] }
                    return .object(answer)
                }
            )
        }
        let answer: JSONValue = [
            "status": 200,
            "notifications": .array((body["notifications"]?.arrayValue ?? []).map { ["id": $0["id"] ?? .null] }),
            "prefetch": ["mboxes": answers("prefetch")], "execute": ["mboxes": answers("execute")],
        ]
        return HTTPResponse(status: 200, body: JSONWriter.encode(answer))
    }
}

/// The events a service published, in order.
private final class PublishedEvents: Sendable {
    private let events = Mutex<[(EventTopic, JSONObject)]>([])

    var all: [(topic: EventTopic, body: JSONObject)] { events.withLock { $0.map { (topic: $0.0, body: $0.1) } } }

    func bodies(_ topic: EventTopic) -> [JSONObject] { all.filter { $0.topic == topic }.map(\.body) }

    func record(_ topic: EventTopic, _ body: JSONObject) { events.withLock { $0.append((topic, body)) } }
}

@Suite struct QAPreviewTests {
    private let start = MonotonicInstant.now

    @Test func aPreviewIsActiveUntilItsExpiryOnTheMonotonicClock() {
        var preview = QAPreview()
        let session = preview.start(token: "tok", duration: .seconds(60), now: start)
        #expect(preview.active(at: start + .seconds(59))?.token == "tok")
        // Past its time it is no longer sent, even before anything ended it.
        #expect(preview.active(at: start + .seconds(60)) == nil)
        #expect(preview.endIfExpired(now: start + .seconds(59)) == nil)
        #expect(preview.endIfExpired(now: start + .seconds(60)) == session)
        #expect(preview.session == nil)
        #expect(preview.endIfExpired(now: start + .seconds(61)) == nil)
    }

    @Test func everyStartAndEndIsANewGeneration() {
        var preview = QAPreview()
        #expect(preview.end() == nil)
        #expect(preview.generation == 0)
        _ = preview.start(token: "a", duration: .seconds(60), now: start)
        _ = preview.start(token: "b", duration: .seconds(60), now: start)
        #expect(preview.generation == 2)
        #expect(preview.end()?.token == "b")
        #expect(preview.generation == 3)
    }

    @Test func aRefusalEndsOnlyThePreviewWhoseTokenWasRefused() {
        var preview = QAPreview()
        let refused = preview.start(token: "old", duration: .seconds(60), now: start)
        let current = preview.start(token: "new", duration: .seconds(60), now: start)
        #expect(preview.endRefused(generation: refused.generation) == nil)
        #expect(preview.session == current)
        #expect(preview.endRefused(generation: current.generation) == current)
    }

    @Test func tokensAreShownByTheirFirstFourCharacters() {
        #expect(QAPreview.masked("Xk3pQ9vLr2") == "Xk3p…")
        #expect(QAPreview.masked("éab") == "éab…")
    }
}

@Suite struct PreviewCodecTests {
    private let visitor = VisitorSession.Snapshot(sessionId: "s", tntId: "t.35_0", edgeHost: nil, sessionAge: .zero)

    @Test func aPreviewAndATraceAreInTheBodyAsTheDeliveryAPISpellsThem() throws {
        let request = DeliveryCodec(configuration: TargetConfiguration(clientCode: "acme")).request(
            execute: [DeliveryMbox(name: "m", targeting: MboxTargeting())],
            visitor: visitor,
            timeOffsetInMinutes: 0,
            qaModeToken: "preview-token-1",
            trace: TargetTrace(authorizationToken: "trace-token-1")
        )
        let body = try JSONReader.read(request.body)
        #expect(body["qaMode"] == ["token": "preview-token-1"])
        #expect(body["trace"] == ["authorizationToken": "trace-token-1"])
    }

    @Test func withoutThemTheBodyHasNeither() throws {
        let request = DeliveryCodec(configuration: TargetConfiguration(clientCode: "acme")).request(
            prefetch: [DeliveryMbox(name: "m", targeting: MboxTargeting())],
            visitor: visitor,
            timeOffsetInMinutes: 0
        )
        let body = try JSONReader.read(request.body)
        #expect(body["qaMode"] == nil && body["trace"] == nil)
    }

    @Test func anMboxTraceIsReadAsTargetSentIt() throws {
        let response = HTTPResponse(
            status: 200,
            body: Array(#"{"execute":{"mboxes":[{"index":0,"name":"m","trace":{"a":{"b":[1,"x"]}}}]}}"#.utf8)
        )
        #expect(try DeliveryResponse.decode(response).executed.first?.trace == ["a": ["b": [1, "x"]]])
    }

    @Test func onlyAQAModeRefusalIsTakenForOne() {
        #expect(DeliveryFailure.status(400, "Invalid QA mode token").refusesQAModeToken)
        #expect(!DeliveryFailure.status(400, "Invalid request: notifications[0]").refusesQAModeToken)
        #expect(!DeliveryFailure.status(500, "Invalid QA mode token").refusesQAModeToken)
        #expect(!DeliveryFailure.status(400, nil).refusesQAModeToken)
    }
}

@Suite struct PreviewServiceTests {
    private func service(
        _ transport: PreviewingDelivery,
        clock: ManualClock,
        events: PublishedEvents
    )
        -> TargetService
    {
        targetService(transport, clock: clock, publish: EventPublisher { events.record($0, $1) })
    }

    private func load(_ names: [String], from target: TargetService) -> Bool {
        var reply = JSONWriter()
        let command = LoadRequestsCommand(requests: names.map { LoadRequest(name: $0, defaultContent: "d") })
        return target.loadFromCache(command, appendingResultTo: &reply) == nil
    }

    @Test func aPreviewRidesEveryRequestDropsTheCacheAndEndsByItselfOnTime() async {
        let clock = manualClock()
        let delivery = PreviewingDelivery()
        let events = PublishedEvents()
        let target = service(delivery, clock: clock, events: events)
        target.cache.store(offer("live"))

        let started = target.startPreview(token: "preview-token-1", duration: .seconds(120))
        #expect(started.cleared == 1 && target.cache.summary.entries == 0)
        #expect(started.preview.maskedToken == "prev…" && started.preview.expiresIn == .seconds(120))
        _ = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(target.cache.peek("logo")?.content == "P")
        #expect(load(["logo"], from: target))
        await target.flushNotifications()
        // Prefetch and notification alike carried the token.
        #expect(delivery.bodies.count == 2)
        #expect(delivery.bodies.allSatisfy { $0["qaMode"] == ["token": "preview-token-1"] })

        clock.advance(by: .seconds(119))
        target.endPreviewIfExpired()
        #expect(target.preview?.expiresIn == .seconds(1))
        clock.advance(by: .seconds(1))
        target.endPreviewIfExpired()
        #expect(target.preview == nil)
        #expect(target.cache.summary.entries == 0)
        _ = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(delivery.bodies.last?["qaMode"] == nil)
        #expect(target.cache.peek("logo")?.content == "L")

        let previews = events.bodies(.targetPreview)
        #expect(previews.map { $0["state"] } == ["on", "off"])
        #expect(previews.last?["reason"] == "expired" && previews.last?["token"] == "prev…")
        #expect(events.bodies(.offersCleared).count == 2)
    }

    @Test func anExpiredPreviewIsNotSentBeforeItsEndIsNoticed() async {
        let clock = manualClock()
        let delivery = PreviewingDelivery()
        let target = service(delivery, clock: clock, events: PublishedEvents())
        _ = target.startPreview(token: "preview-token-1", duration: .seconds(60))
        clock.advance(by: .seconds(60))
        _ = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(delivery.bodies.last?["qaMode"] == nil)
    }

    @Test func endingAPreviewDropsItsOffers() {
        let events = PublishedEvents()
        let target = service(PreviewingDelivery(), clock: manualClock(), events: events)
        #expect(target.endPreview() == nil)
        _ = target.startPreview(token: "preview-token-1", duration: .seconds(60))
        target.cache.store(offer("logo"))
        #expect(target.endPreview() == 1)
        #expect(target.preview == nil && target.cache.summary.entries == 0)
        #expect(events.bodies(.targetPreview).last?["reason"] == "ended")
    }

    /// Target refuses an unknown token: the preview ends, the work is answered without it, and the
    /// notifications that rode along are delivered, not dropped as invalid.
    @Test func aRefusedTokenEndsThePreviewAndLosesNothing() async {
        let delivery = PreviewingDelivery()
        let events = PublishedEvents()
        let target = service(delivery, clock: manualClock(), events: events)
        target.cache.store(offer("shown"))
        #expect(load(["shown"], from: target))
        _ = target.startPreview(token: "not-registered", duration: .seconds(600))

        let result = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(result.success)
        #expect(target.cache.peek("logo")?.content == "L")
        #expect(target.preview == nil)
        #expect(delivery.bodies.map { $0["qaMode"] != nil } == [true, false])
        #expect(delivery.bodies.last?["notifications"]?.arrayValue?.count == 1)
        let queue = target.notifications.summary
        #expect(queue.counters.sent == 1 && queue.counters.refused == 0 && queue.pending == 0)
        #expect(events.bodies(.targetPreview).last?["reason"] == "refused")
    }

    /// The request sent again without the refused token is the same request: same property (workspace).
    @Test func aRefusedRequestIsSentAgainUnderItsProperty() async {
        let delivery = PreviewingDelivery()
        let target = service(delivery, clock: manualClock(), events: PublishedEvents())
        _ = target.startPreview(token: "not-registered", duration: .seconds(600))
        let result = await target.prefetch(
            PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")], propertyToken: "workspace-b")
        )
        #expect(result.success)
        #expect(delivery.bodies.map { $0["property"]?["token"] } == ["workspace-b", "workspace-b"])
        #expect(delivery.bodies.map { $0["qaMode"] != nil } == [true, false])
    }

    @Test func aRefusalSentAloneEndsThePreviewAndTheNotificationsGoWithoutIt() async {
        let delivery = PreviewingDelivery()
        let target = service(delivery, clock: manualClock(), events: PublishedEvents())
        _ = target.startPreview(token: "not-registered", duration: .seconds(600))
        target.cache.store(offer("shown"))
        #expect(load(["shown"], from: target))
        #expect(await target.flushNotifications() == 1)
        #expect(target.notifications.summary.counters.refused == 0)
        #expect(target.preview == nil)
    }

    @Test func offersDecidedBeforeAPreviewBeganAreNotCachedDuringIt() async {
        let gate = GatedDelivery(PreviewingDelivery())
        let target = targetService(gate)
        async let prefetched = target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        await gate.waitForRequest()
        _ = target.startPreview(token: "preview-token-1", duration: .seconds(60))
        gate.open()
        _ = await prefetched
        #expect(target.cache.peek("logo") == nil)
    }
}

@Suite struct TracedLoadTests {
    private func traced(_ names: [String], token: String) -> TracedLoadCommand {
        TracedLoadCommand(
            load: LoadRequestsCommand(requests: names.map { LoadRequest(name: $0, defaultContent: "d") }),
            trace: TargetTrace(authorizationToken: token)
        )
    }

    @Test func aTracedLoadGoesToTargetEvenForACachedOfferAndCarriesItsTrace() async throws {
        let delivery = PreviewingDelivery()
        let target = targetService(delivery)
        target.cache.store(offer("logo", content: "cached"))
        let result = try JSONReader.read(await target.tracedLoad(traced(["logo"], token: "trace-token-1")))
        #expect(
            result == [
                "contents": [
                    [
                        "name": "logo", "content": "L", "source": "network",
                        "trace": ["request": ["mbox": ["name": "logo"]]],
                    ]
                ]
            ]
        )
        #expect(delivery.bodies.count == 1)
        #expect(delivery.bodies[0]["trace"] == ["authorizationToken": "trace-token-1"])
        #expect(delivery.bodies[0]["execute"]?["mboxes"]?.arrayValue?.count == 1)
        // Not a cache lookup: neither a hit nor a miss, and no display notification for the cached offer.
        #expect(target.counters.hits == 0 && target.counters.misses == 0)
        #expect(target.notifications.summary.pending == 0)
    }

    @Test func aTokenTargetDoesNotAcceptGetsItsAnswerWithoutATrace() async throws {
        let target = targetService(PreviewingDelivery())
        let result = try JSONReader.read(await target.tracedLoad(traced(["logo"], token: "wrong")))
        #expect(result == ["contents": [["name": "logo", "content": "L", "source": "network", "trace": .null]]])
    }
}
