import Foundation
import PreflightCore
import PreflightProtocol
import Testing
import UpstreamHTTP

@testable import TargetOffers

/// Loads decided on the box, answered again on the I/O thread while the same load would be decided the same
/// way, and decided afresh as soon as anything it depends on moves.
@Suite struct DecidedOffersTests {
    /// 1_800_000_000_000 is the manual clock's epoch origin: `hero` is on for 5 s from then.
    private static let artifact = Array(
        """
        {"version":"1.0.0","meta":{},"globalMbox":"target-global-mbox","responseTokens":["activity.id"],
        "localMboxes":["logo","hero"],"remoteMboxes":[],"localViews":[],"remoteViews":[],
        "rules":{"mboxes":{
          "logo":[{"ruleKey":"1","meta":{"activity.id":1,"audience.ids":[]},"condition":true,
            "consequence":{"name":"logo","options":[{"type":"html","content":"<b>logo</b>","eventToken":"logo-token"}],
            "metrics":[{"type":"click","eventToken":"logo-click"}]}}],
          "hero":[{"ruleKey":"2","meta":{"activity.id":2,"audience.ids":[]},
            "condition":{"<=":[1800000000000,{"var":"current_timestamp"},1800000005000]},
            "consequence":{"name":"hero","options":[{"type":"html","content":"sale","eventToken":"hero-token"}]}}]},
          "views":{}}}
        """.utf8
    )

    private struct Box {
        let target: TargetService
        let clock: ManualClock
    }

    private func box() async throws -> Box {
        let transport = ScriptedTransport()
        transport.answer(HTTPResponse(status: 200, body: Self.artifact))
        let clock = manualClock()
        let target = onDeviceService(transport, folder: nil, clock: clock)
        #expect(await target.fetchArtifact() == .updated)
        return Box(target: target, clock: clock)
    }

    private func load(_ name: String, notifyDisplay: Bool = true) -> LoadRequestsCommand {
        var command = LoadRequestsCommand(requests: [LoadRequest(name: name, defaultContent: "default")])
        command.notifyDisplay = notifyDisplay
        return command
    }

    /// The load as the I/O thread answers it: the reply's result when answered there, else nil (a task's work).
    private func answeredAtOnce(_ target: TargetService, _ command: LoadRequestsCommand) -> JSONValue? {
        var reply = JSONWriter()
        guard target.loadFromCache(command, appendingResultTo: &reply) == nil else { return nil }
        return try? JSONReader.read(reply.bytes)
    }

    /// A plain load of `name` as the I/O thread reads it in place (`{"cmd":"loadRequests",…}` with one mbox and
    /// nothing else): its result when answered there, else nil.
    private func answeredInPlace(_ target: TargetService, _ name: String) -> JSONValue? {
        var reply = JSONWriter()
        let answered = Array(name.utf8).withUnsafeBufferPointer {
            target.loadPlain($0, receivedAt: .now, appendingResultTo: &reply)
        }
        return answered ? try? JSONReader.read(reply.bytes) : nil
    }

    private func loadInTask(_ target: TargetService, _ command: LoadRequestsCommand) async throws -> JSONValue {
        var reply = JSONWriter()
        let pending = try #require(target.loadFromCache(command, appendingResultTo: &reply))
        return try JSONReader.read(await target.completeLoad(pending))
    }

    /// The first element of a load's `contents`.
    private func element(_ result: JSONValue) -> JSONValue? {
        result["contents"]?.arrayValue?.first
    }

    private func queued(_ target: TargetService) -> [JSONObject] {
        target.notifications.take(max: 100).compactMap { try? JSONReader.read($0.encoded).objectValue }
    }

    @Test func aDecisionIsAnsweredAgainAtOnceWithItsOwnNotification() async throws {
        let box = try await box()
        let target = box.target
        let first = try await loadInTask(target, load("logo"))
        #expect(element(first)?["source"] == "on-device" && element(first)?["content"] == "<b>logo</b>")
        let again = try #require(answeredAtOnce(target, load("logo")))
        #expect(again == first)
        #expect(answeredInPlace(target, "logo") == first)
        // Three displays, each the notification Adobe's engines send for an executed mbox.
        let notifications = queued(target)
        #expect(notifications.count == 3)
        for notification in notifications {
            #expect(notification["type"] == "display" && notification["tokens"] == ["logo-token"])
            #expect(notification["mbox"] == ["name": "logo"] && notification["impressionId"]?.stringValue != nil)
            #expect(notification["parameters"] == nil && notification["profileParameters"] == nil)
        }
        #expect(target.counters.onDeviceLoads == 3 && target.counters.misses == 3 && target.counters.hits == 0)
        // The click metric of the decision is remembered for clickedLocation.
        guard case .success = target.clickedLocation(ClickedLocationCommand(name: "logo")) else {
            Issue.record("no click metric remembered")
            return
        }
    }

    @Test func aNewVisitorIdOrClearedOffersOrNewRulesDecideAfresh() async throws {
        let box = try await box()
        let target = box.target
        // A visitor with no id takes the engine's tntId, which is then what allocation reads.
        // Each time, a plain load read in place is not answered from the decision before either.
        #expect(answeredInPlace(target, "logo") == nil)
        _ = try await loadInTask(target, load("logo"))
        #expect(target.visitor.current.tntId != nil)
        #expect(answeredAtOnce(target, load("logo")) != nil)
        #expect(answeredInPlace(target, "logo") != nil)

        target.visitor.setThirdPartyId("household-7", saving: false)
        #expect(answeredInPlace(target, "logo") == nil)
        _ = try await loadInTask(target, load("logo"))
        #expect(answeredAtOnce(target, load("logo")) != nil)

        _ = target.clearCache()
        #expect(answeredInPlace(target, "logo") == nil)
        _ = try await loadInTask(target, load("logo"))
        #expect(answeredAtOnce(target, load("logo")) != nil)

        #expect(await target.fetchArtifact() == .updated)
        #expect(answeredInPlace(target, "logo") == nil)
        _ = try await loadInTask(target, load("logo"))

        var serverSide = target.configuration
        serverSide.decisioningMethod = .serverSide
        target.update(configuration: serverSide)
        #expect(answeredAtOnce(target, load("logo")) == nil)
        #expect(answeredInPlace(target, "logo") == nil)
    }

    @Test func aDecisionHoldsOnlyWhileTheRulesDecideTheSame() async throws {
        let box = try await box()
        let target = box.target
        box.clock.advance(by: .seconds(4))
        let during = try await loadInTask(target, load("hero"))
        #expect(element(during)?["content"] == "sale")
        #expect(answeredAtOnce(target, load("hero")) == during)
        #expect(answeredInPlace(target, "hero") == during)
        // Past the activity's end: decided again, to the default.
        box.clock.advance(by: .seconds(2))
        #expect(answeredInPlace(target, "hero") == nil)
        let after = try await loadInTask(target, load("hero"))
        #expect(element(after)?["source"] == "default")
    }

    @Test func anAppThatNotifiesItselfGetsNoNotificationUntilItSaysSo() async throws {
        let box = try await box()
        let target = box.target
        _ = try await loadInTask(target, load("logo", notifyDisplay: false))
        #expect(answeredAtOnce(target, load("logo", notifyDisplay: false)) != nil)
        #expect(queued(target).isEmpty)
        let done = target.displayedLocations(DisplayedLocationsCommand(names: ["logo"]))
        #expect(done.notified == ["logo"])
        let notifications = queued(target)
        #expect(notifications.count == 1 && notifications.first?["impressionId"] != nil)
    }
}

@Suite struct DecidedOffersBoundTests {
    private let inputs = DecidedOffers.Inputs(service: 0, identity: 0)

    /// The key of a load of `name`, with one mbox parameter or none (the name alone).
    private func key(_ name: String, parameter: String?) -> DecidedOffers.Key {
        DecidedOffers.Key(
            name: name,
            targeting: MboxTargeting(mboxParameters: parameter.map { [Parameter("n", $0)] } ?? []),
            profile: [],
            property: nil
        )
    }

    private func decided(_ name: String, content: String) -> CachedOffer {
        CachedOffer(
            name: name,
            options: [OfferOption(type: "html", content: .string(content), eventToken: "t")],
            state: nil,
            now: .now,
            epochMs: 0,
            decidedOnDevice: true
        )
    }

    @Test func theOldestGoesPastTheCapacity() {
        let kept = DecidedOffers()
        func key(_ index: Int) -> DecidedOffers.Key { self.key("hero", parameter: "\(index)") }
        let offer = decided("hero", content: "x")
        for index in 0..<(DecidedOffers.capacity + 10) {
            kept.keep(offer, for: key(index), span: 0..<10, inputs: inputs)
            // Kept again: replaced, not counted twice.
            kept.keep(offer, for: key(index), span: 0..<10, inputs: inputs)
        }
        #expect(kept.count == DecidedOffers.capacity)
        #expect(kept.offer(for: key(9), at: 5, inputs: inputs) == nil)
        #expect(kept.offer(for: key(10), at: 5, inputs: inputs) != nil)
        #expect(kept.offer(for: key(DecidedOffers.capacity + 9), at: 5, inputs: inputs) != nil)
        // Outside its span, or under other inputs, it does not answer.
        #expect(kept.offer(for: key(10), at: 10, inputs: inputs) == nil)
        #expect(kept.offer(for: key(10), at: 5, inputs: DecidedOffers.Inputs(service: 1, identity: 0)) == nil)
    }

    /// Loads of a name alone are kept by the name's bytes (a plain load looks them up in place), the others by
    /// their whole key; one bound and one age order over both.
    @Test func namesAloneAndWholeKeysShareTheBoundAndTheOrder() {
        let kept = DecidedOffers()
        // Even: the name alone; odd: the same name with a parameter.
        func key(_ index: Int) -> DecidedOffers.Key {
            self.key("mbox-\(index / 2)", parameter: index % 2 == 0 ? nil : "\(index)")
        }
        func byBytes(_ name: String, at epochMs: Int64 = 5, inputs: DecidedOffers.Inputs? = nil) -> CachedOffer? {
            let inputs = inputs ?? self.inputs
            return Array(name.utf8).withUnsafeBufferPointer { kept.offer(name: $0, at: epochMs, inputs: inputs) }
        }
        for index in 0..<(DecidedOffers.capacity + 10) {
            let offer = decided("mbox-\(index / 2)", content: "offer \(index)")
            kept.keep(offer, for: key(index), span: 0..<10, inputs: inputs)
        }
        #expect(kept.count == DecidedOffers.capacity)
        // The ten oldest went, of both kinds.
        #expect(byBytes("mbox-4") == nil)
        #expect(kept.offer(for: key(9), at: 5, inputs: inputs) == nil)
        // A name alone answers by its bytes and by its key, with its own offer, not its parameterized twin's.
        #expect(byBytes("mbox-5")?.content == "offer 10")
        #expect(kept.offer(for: key(10), at: 5, inputs: inputs)?.content == "offer 10")
        #expect(kept.offer(for: key(11), at: 5, inputs: inputs)?.content == "offer 11")
        // Outside its span, or under other inputs, a name alone does not answer either.
        #expect(byBytes("mbox-5", at: 10) == nil)
        #expect(byBytes("mbox-5", inputs: DecidedOffers.Inputs(service: 1, identity: 0)) == nil)
        kept.removeAll()
        #expect(kept.count == 0 && byBytes("mbox-200") == nil)
    }
}
