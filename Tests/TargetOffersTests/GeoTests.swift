import Foundation
import PreflightCore
import PreflightProtocol
import Testing
import UpstreamHTTP

@testable import TargetOffers

private let sanFrancisco: [String: String] = [
    "x-geo-latitude": "37.75", "x-geo-longitude": "-122.4", "x-geo-country-code": "US", "x-geo-region-code": "CA",
    "x-geo-city": "SAN FRANCISCO",
]

/// A rules artifact that targets by geo: mbox `geo-offer` has an offer in San Francisco only.
private func geoArtifactJSON(geoTargeting: Bool = true) -> [UInt8] {
    Array(
        """
        {"version":"1.0.0","meta":{"clientCode":"acme","environment":"production"},\
        "globalMbox":"target-global-mbox","geoTargetingEnabled":\(geoTargeting),"responseTokens":[],\
        "remoteMboxes":[],"remoteViews":[],"localMboxes":["geo-offer"],"localViews":[],\
        "rules":{"mboxes":{"geo-offer":[{"ruleKey":"1","activityId":1,"meta":{"activity.id":1,\
        "activity.type":"xt","experience.id":0,"location.name":"geo-offer","location.type":"mbox",\
        "location.id":0,"offer.id":2,"option.id":3},\
        "condition":{"==":[{"var":"geo.city"},"SAN FRANCISCO"]},\
        "consequence":{"name":"geo-offer","options":[{"type":"html","eventToken":"t","content":"sf"}],\
        "metrics":[]}}]},"views":{}}}
        """.utf8
    )
}

private struct FixedGenerator: RandomNumberGenerator {
    mutating func next() -> UInt64 { 0 }
}

@Suite struct GeoPollingTests {
    @Test func theXGeoHeadersOfATwoHundredAreTheLocation() throws {
        let answer = GeoPolling.interpret(
            HTTPResponse(status: 200, headers: sanFrancisco.merging(["x-forwarded-for": "203.0.113.9"]) { a, _ in a })
        )
        guard case .located(let location) = answer else {
            Issue.record("not located: \(answer)")
            return
        }
        #expect(location.city == "SAN FRANCISCO" && location.regionCode == "CA" && location.countryCode == "US")
        #expect(location.latitude == 37.75 && location.longitude == -122.4)
        // Only the x-geo-* headers are kept: the box's address is nobody's business here.
        #expect(location.headers == sanFrancisco)
        #expect(location.json["x-geo-city"] == .string("SAN FRANCISCO") && location.json["x-forwarded-for"] == nil)
    }

    @Test func anAnswerWithoutALocationOrAnotherStatusIsAFailure() {
        #expect(GeoPolling.interpret(HTTPResponse(status: 200)) == .failed("no x-geo-* headers in the answer"))
        #expect(
            GeoPolling.interpret(HTTPResponse(status: 200, headers: ["x-geo-city": ""]))
                == .failed("no x-geo-* headers in the answer")
        )
        #expect(GeoPolling.interpret(HTTPResponse(status: 503, headers: sanFrancisco)) == .failed("HTTP 503"))
    }

    @Test func theKeptFormReadsBack() throws {
        let location = try #require(GeoAnswer(headers: sanFrancisco))
        #expect(GeoAnswer(json: location.json) == location)
        #expect(GeoAnswer(json: ["x-geo-city": .integer(3)]) == nil)
        #expect(GeoAnswer(headers: ["x-geo-latitude": "north"])?.latitude == nil)
    }

    @Test func successesWaitTheIntervalAndFailuresBackOffAsTheArtifactDoes() {
        var generator = FixedGenerator()
        let interval = Duration.seconds(300)
        #expect(
            ArtifactPolling.delay(failed: false, failuresInARow: 0, interval: interval, using: &generator) == interval
        )
        #expect(ArtifactPolling.delay(failed: false, failuresInARow: 0, interval: nil, using: &generator) == nil)
        #expect(
            ArtifactPolling.delay(failed: true, failuresInARow: 1, interval: interval, using: &generator) == .seconds(5)
        )
        #expect(
            ArtifactPolling.delay(failed: true, failuresInARow: 20, interval: .seconds(60), using: &generator)
                == .seconds(60)
        )
        #expect(
            ArtifactPolling.delay(failed: true, failuresInARow: 20, interval: nil, using: &generator) == .seconds(150)
        )
        #expect(GeoPolling.defaultURL == "https://assets.adobetarget.com/v1/geo")
    }
}

@Suite struct GeoKeepingTests {
    private func service(_ transport: ScriptedTransport, folder: String) -> TargetService {
        onDeviceService(transport, folder: folder)
    }

    /// A service holding the geo sample artifact, and its transport (which then answers for the geo service).
    private func holdingTheGeoArtifact(folder: String) async -> (TargetService, ScriptedTransport) {
        let transport = ScriptedTransport()
        let target = service(transport, folder: folder)
        transport.answer(HTTPResponse(status: 200, body: geoArtifactJSON()))
        #expect(await target.fetchArtifact() == .updated)
        return (target, transport)
    }

    private func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("geo-\(UUID())").path
    }

    @Test func aLocationIsKeptCountedWhenItChangesAndReadAtTheNextStart() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let transport = ScriptedTransport()
        let target = service(transport, folder: folder)
        #expect(target.geoStatus.answer == nil && target.geoGeneration == 0)

        transport.answer(HTTPResponse(status: 200, headers: sanFrancisco))
        guard case .located = await target.fetchGeo() else {
            Issue.record("not located")
            return
        }
        let request = try #require(transport.requests.last)
        #expect(request.method == "GET" && request.url == "http://127.0.0.1:9/v1/geo")
        #expect(!request.headers.contains { $0.name.lowercased() == "x-forwarded-for" })
        #expect(target.geoStatus.answer?.city == "SAN FRANCISCO" && target.geoStatus.source == .network)
        #expect(target.geoStatus.fetchedAtMs == 1_800_000_000_000 && target.geoGeneration == 1)

        // The same place again is no change; another place is.
        await target.fetchGeo()
        #expect(target.geoGeneration == 1)
        transport.answer(HTTPResponse(status: 200, headers: ["x-geo-city": "PORTLAND", "x-geo-country-code": "US"]))
        await target.fetchGeo()
        #expect(target.geoStatus.answer?.city == "PORTLAND" && target.geoGeneration == 2)

        // A failure keeps the place held.
        transport.answer(HTTPResponse(status: 503))
        #expect(await target.fetchGeo() == .failed("HTTP 503"))
        #expect(target.geoStatus.answer?.city == "PORTLAND" && target.geoStatus.failuresInARow == 1)
        #expect(target.geoStatus.lastFetchError == "HTTP 503" && target.geoGeneration == 2)

        // The next start, offline: the kept place, from disk.
        let restarted = service(ScriptedTransport(), folder: folder)
        restarted.loadKeptGeo()
        #expect(restarted.geoStatus.answer?.city == "PORTLAND" && restarted.geoStatus.source == .disk)
        #expect(restarted.geoStatus.url == "http://127.0.0.1:9/v1/geo" && restarted.geoGeneration == 1)
    }

    /// An opt-out while a lookup is in flight (then, maybe, an opt-in): whatever the answer, it changes
    /// nothing, in `status` or on disk, and the next lookup places the box again.
    @Test(arguments: [200, 503], [false, true])
    func anAnswerToALookupInFlightAtAnOptOutChangesNothing(status: Int, optedInAgain: Bool) async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let kept = "\(folder)/target-geo.json"
        // Located by an earlier run: the place is read back from disk.
        let earlier = ScriptedTransport()
        earlier.answer(HTTPResponse(status: 200, headers: sanFrancisco))
        await service(earlier, folder: folder).fetchGeo()
        let scripted = ScriptedTransport()
        scripted.answer(HTTPResponse(status: status, headers: sanFrancisco))
        let gate = GatedDelivery(scripted)
        let target = onDeviceService(gate, folder: folder)
        target.loadKeptGeo()
        #expect(target.geoStatus.answer?.city == "SAN FRANCISCO")

        async let answered = target.fetchGeo()
        await gate.waitForRequest()
        target.setPrivacy(.optedOut)
        if optedInAgain { target.setPrivacy(.optedIn) }
        let forgotten = target.geoStatus
        #expect(forgotten.answer == nil && forgotten.lastFetchAtMs == nil && forgotten.failuresInARow == 0)
        #expect(!FileManager.default.fileExists(atPath: kept))
        gate.open()
        _ = await answered
        #expect(target.geoStatus == forgotten)
        #expect(!FileManager.default.fileExists(atPath: kept))

        // A lookup made after the opt-in is held; while opted out, none is made.
        let asked = scripted.requests.count
        let next = await target.fetchGeo()
        if optedInAgain {
            #expect(scripted.requests.count == asked + 1)
            #expect((target.geoStatus.answer != nil) == (status == 200))
            #expect(FileManager.default.fileExists(atPath: kept) == (status == 200))
        } else {
            // Not asked: `status` says why, and holds nothing else.
            var notAsked = forgotten
            notAsked.skipped = "Target privacy is optedOut"
            #expect(next == nil)
            #expect(scripted.requests.count == asked && target.geoStatus == notAsked)
            #expect(!FileManager.default.fileExists(atPath: kept))
        }
    }

    @Test func aGeoTargetedMboxIsDecidedWithThePlaceHeldAndWithoutOneBeforeIt() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (target, transport) = await holdingTheGeoArtifact(folder: folder)
        let mbox = DeliveryMbox(name: "geo-offer", targeting: MboxTargeting())
        let engine = try #require(target.onDeviceEngine)

        // No place yet: decided at once, without geo; the rule does not match.
        let before = target.decideOnDevice(engine, execute: [mbox], profile: [], property: nil)
        #expect(before.response.executed.first?.options.isEmpty ?? true)

        transport.answer(HTTPResponse(status: 200, headers: sanFrancisco))
        await target.fetchGeo()
        let inSanFrancisco = target.decideOnDevice(engine, execute: [mbox], profile: [], property: nil)
        #expect(inSanFrancisco.response.executed.first?.options.map(\.contentText) == ["sf"])

        // A load decided in San Francisco is kept, and answered again at once...
        let load = LoadRequestsCommand(requests: [LoadRequest(name: "geo-offer", defaultContent: "d")])
        var first = JSONWriter()
        _ = await target.completeLoad(try #require(target.loadFromCache(load, appendingResultTo: &first)))
        var again = JSONWriter()
        #expect(target.loadFromCache(load, appendingResultTo: &again) == nil)

        // ...until the box moves: then it is decided again, for the new place.
        transport.answer(HTTPResponse(status: 200, headers: ["x-geo-city": "PORTLAND"]))
        await target.fetchGeo()
        let elsewhere = target.decideOnDevice(engine, execute: [mbox], profile: [], property: nil)
        #expect(elsewhere.response.executed.first?.options.isEmpty ?? true)
        var moved = JSONWriter()
        #expect(target.loadFromCache(load, appendingResultTo: &moved) != nil)
    }

    @Test func thePollerLooksTheBoxUpOnceAGeoTargetingArtifactIsHeld() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (target, transport) = await holdingTheGeoArtifact(folder: folder)
        transport.answer(HTTPResponse(status: 200, headers: sanFrancisco))
        let poller = Task { await target.runGeoPolling() }
        defer { poller.cancel() }
        let deadline = MonotonicInstant.now + .seconds(20)
        while target.geoStatus.answer == nil, MonotonicInstant.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(target.geoStatus.answer?.city == "SAN FRANCISCO" && target.geoStatus.source == .network)
        #expect(transport.requests.last?.url == "http://127.0.0.1:9/v1/geo")
    }

    @Test func theRequestSaysTheAddressIsUnknownOnlyWhenTheRulesTargetByGeo() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let transport = ScriptedTransport()
        let target = service(transport, folder: folder)
        transport.answer(HTTPResponse(status: 200, headers: sanFrancisco))
        await target.fetchGeo()
        for geoTargeting in [true, false] {
            transport.answer(HTTPResponse(status: 200, body: geoArtifactJSON(geoTargeting: geoTargeting)))
            await target.fetchArtifact()
            let engine = try #require(target.onDeviceEngine)
            var body: JSONObject = ["context": ["channel": "web"]]
            let geo = target.geoForDecision(&body, engine: engine)
            if geoTargeting {
                #expect(body["context"]?["geo"]?["ipAddress"] == .string("unknownIpAddress"))
                #expect(body["context"]?["channel"] == .string("web"))
                #expect(geo?["x-geo-city"] == .string("SAN FRANCISCO"))
            } else {
                #expect(body["context"]?["geo"] == nil && geo == nil)
            }
        }
    }
}

/// The rules artifact's host and the geo service are Target's: while the box is not opted in, neither poller
/// asks them anything (`status` says why), what is held stays, and opting in gets both a turn at once.
@Suite struct PollersPrivacyTests {
    private func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("pollers-\(UUID())").path
    }

    /// One answer both services can take: the geo artifact for the asset host, a place for the geo service.
    private static let answer = HTTPResponse(status: 200, headers: sanFrancisco, body: geoArtifactJSON())

    private func wait(_ what: Comment, until condition: () -> Bool) async throws {
        let deadline = MonotonicInstant.now + .seconds(20)
        while !condition(), MonotonicInstant.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(condition(), what)
    }

    @Test(arguments: [TargetPrivacy.unknown, .optedOut])
    func nothingIsFetchedUnlessOptedInAndOptingInFetchesBoth(privacy: TargetPrivacy) async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // An earlier run kept the geo artifact and a place: read back, a fetch and a lookup are due at once.
        let earlier = ScriptedTransport()
        earlier.answer(Self.answer)
        let first = onDeviceService(earlier, folder: folder)
        #expect(await first.fetchArtifact() == .updated)
        #expect(await first.fetchGeo() != nil && first.geoStatus.answer != nil)

        let transport = ScriptedTransport()
        transport.answer(Self.answer)
        let target = onDeviceService(transport, folder: folder)
        target.setPrivacy(privacy)
        let pollers = [Task { await target.runArtifactPolling() }, Task { await target.runGeoPolling() }]
        defer { for poller in pollers { poller.cancel() } }
        let reason = "Target privacy is \(privacy.rawValue)"
        try await wait("both turns skipped") {
            target.artifactStatus.skipped == reason && target.geoStatus.skipped == reason
        }
        #expect(transport.requests.isEmpty)
        // The rules are kept either way; the place while `unknown` (an opt-out forgot it).
        #expect(target.artifactStatus.source == .disk && target.artifactStatus.lastFetchAtMs == nil)
        #expect((target.geoStatus.answer?.city == "SAN FRANCISCO") == (privacy == .unknown))

        target.setPrivacy(.optedIn)
        try await wait("fetched and looked up") {
            target.artifactStatus.lastFetchAtMs != nil && target.geoStatus.source == .network
        }
        #expect(Set(transport.requests.map(\.url)).count == 2)
        #expect(target.artifactStatus.skipped == nil && target.geoStatus.skipped == nil)
    }

    /// The clock stands still: after the fetch and the lookup at start, the next are never due. Only the turn
    /// that opting in asks for fetches again.
    @Test func optingInFetchesAtOnceNotAnIntervalLater() async throws {
        let folder = folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let transport = ScriptedTransport()
        transport.answer(Self.answer)
        let target = onDeviceService(transport, folder: folder)
        let pollers = [Task { await target.runArtifactPolling() }, Task { await target.runGeoPolling() }]
        defer { for poller in pollers { poller.cancel() } }
        try await wait("fetched and looked up at start") {
            target.artifactStatus.lastFetchAtMs != nil && target.geoStatus.source == .network
        }
        let asked = transport.requests.count
        target.setPrivacy(.unknown)
        target.setPrivacy(.optedIn)
        try await wait("fetched and looked up again") { transport.requests.count >= asked + 2 }
        #expect(Set(transport.requests.dropFirst(asked).map(\.url)).count == 2)
    }
}
