import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// The engine's own behaviour around Adobe's cases: the artifact's version, geo lookups, property
/// tokens, new visitors, notifications, macros, time, and repeatable decisions.
@Suite struct DecisioningEngineTests {
    private let conf = DecisioningConf(client: "acme", organizationId: "org@AdobeOrg")
    private let march25 = Int64(1_585_098_300_000)  // 2020-03-25 01:05 UTC, a Wednesday

    /// An artifact with one mbox whose rules are given (each `[condition, content]`), activity 1.
    private func artifact(
        mbox: String = "hero",
        _ rules: [(JSONValue, JSONValue)],
        extra: JSONObject = [:],
        optionType: JSONValue = "json"
    ) throws -> DecisioningEngine {
        var list: [JSONValue] = []
        for (index, (condition, content)) in rules.enumerated() {
            var rule: JSONObject = [
                "ruleKey": .string("r\(index)"), "activityId": 1,
                "meta": [
                    "activity.id": 1, "activity.name": "Hero test", "activity.type": "ab",
                    "experience.id": .integer(Int64(index)), "audience.ids": [],
                ],
                "condition": condition,
                "consequence": [
                    "name": .string(mbox),
                    "options": [["type": optionType, "content": content, "eventToken": .string("token-\(index)")]],
                    "metrics": [],
                ],
            ]
            if let tokens = extra["propertyTokens"] { rule["propertyTokens"] = tokens }
            list.append(.object(rule))
        }
        var json: JSONObject = [
            "version": "1.0.0",
            "meta": ["clientCode": "acme", "environment": "production", "generatedAt": "2026-01-02T03:04:05Z"],
            "globalMbox": "target-global-mbox", "responseTokens": ["activity.id", "geo.city"],
            "localMboxes": [.string(mbox)], "remoteMboxes": ["remote-only"], "localViews": [], "remoteViews": [],
            "rules": ["mboxes": [mbox: .array(list)], "views": [:]],
        ]
        for (key, value) in extra where key != "propertyTokens" { json[key] = value }
        return DecisioningEngine(artifact: try DecisioningArtifact(.object(json)))
    }

    private func request(
        _ mode: String = "execute",
        mboxes: [JSONValue] = [["name": "hero", "index": 1]]
    ) -> JSONObject {
        ["id": ["tntId": "visitor.28_0"], "context": ["channel": "web"], mode: ["mboxes": .array(mboxes)]]
    }

    private func sequence() -> () -> String {
        var next = 0
        return {
            next += 1
            return "id-\(next)"
        }
    }

    private func firstOption(_ decision: Decision, _ mode: String = "execute") -> JSONValue? {
        decision.response[mode]?["mboxes"]?.arrayValue?.first?["options"]?.arrayValue?.first
    }

    @Test func refusesAnArtifactWhoseMajorVersionIsNot1() throws {
        #expect(
            throws: ArtifactError(
                code: .unsupportedVersion,
                message: "The artifact version (2.0.0) is not supported: only major version 1 is"
            )
        ) {
            try DecisioningArtifact(["version": "2.0.0", "rules": [:]])
        }
        #expect(throws: ArtifactError.self) { try DecisioningArtifact(["rules": [:]]) }
        #expect(throws: ArtifactError.self) { try DecisioningArtifact(json: Array("not json".utf8)) }
        #expect(throws: ArtifactError.self) { try DecisioningArtifact("just a string") }
        #expect(try DecisioningArtifact(["version": "1.7.3"]).version == "1.7.3")
    }

    @Test func describesTheArtifactForTheWiring() throws {
        let engine = try artifact([(true, "a"), (false, "b")])
        #expect(engine.artifact.rulesCount == 2)
        #expect(engine.artifact.generatedAt == "2026-01-02T03:04:05Z")
        #expect(engine.artifact.localMboxes == ["hero"])
        #expect(engine.artifact.remoteMboxes == ["remote-only"])
        #expect(engine.artifact.globalMbox == "target-global-mbox")
        let dependency = engine.remoteDependency(
            for: request(mboxes: [["name": "hero"], ["name": "remote-only"], ["name": "unknown"]])
        )
        #expect(dependency.mboxes == ["remote-only", "unknown"])
        #expect(dependency.isNeeded)
    }

    @Test func reportsMboxesOnlyTheEdgeCanDecide() throws {
        let engine = try artifact([(true, "a")])
        let decision = engine.decide(
            request: request(mboxes: [["name": "hero", "index": 1], ["name": "unknown", "index": 2]]),
            conf: conf,
            nowMs: march25
        )
        #expect(decision.response["status"] == 206)
        #expect(decision.response["remoteMboxes"] == ["unknown"])
        #expect(decision.response["execute"]?["mboxes"]?.arrayValue?.last == ["name": "unknown", "index": 2])
    }

    @Test func asksForAGeoLookupWhenTheRequestHasOnlyAnAddress() throws {
        let engine = try artifact(
            [(["==": [["var": "geo.city"], "PARIS"]], "paris"), (true, "elsewhere")],
            extra: ["geoTargetingEnabled": true]
        )
        var geoRequest = request()
        geoRequest["context"] = ["geo": ["ipAddress": "192.0.2.10"]]
        #expect(engine.geoLookup(for: geoRequest) == GeoLookup(ipAddress: "192.0.2.10"))
        let without = engine.decide(request: geoRequest, conf: conf, nowMs: march25)
        #expect(without.geoLookup == GeoLookup(ipAddress: "192.0.2.10"))
        #expect(firstOption(without)?["content"] == "elsewhere")

        let answer: JSONObject = ["x-geo-city": "PARIS", "x-geo-latitude": "48.86", "x-geo-country-code": "FR"]
        let with = engine.decide(request: geoRequest, conf: conf, nowMs: march25, geo: answer)
        #expect(with.geoLookup == nil)
        #expect(firstOption(with)?["content"] == "paris")
        #expect(firstOption(with)?["responseTokens"]?["geo.city"] == "PARIS")
        let sentGeo = with.notificationRequest()?["context"]?["geo"]
        #expect(sentGeo == ["ipAddress": "192.0.2.10", "latitude": 48.86, "countryCode": "FR", "city": "PARIS"])

        geoRequest["context"] = ["geo": ["ipAddress": "unknownIpAddress"]]
        #expect(engine.geoLookup(for: geoRequest) == GeoLookup(ipAddress: nil))
        geoRequest["context"] = ["geo": ["ipAddress": "not an address"]]
        #expect(engine.geoLookup(for: geoRequest) == nil)
        geoRequest["context"] = ["geo": ["ipAddress": "192.0.2.10", "city": "LYON"]]
        #expect(engine.geoLookup(for: geoRequest) == nil)
    }

    @Test func filtersRulesByThePropertyOfTheRequestOrElseOfTheConfiguration() throws {
        let engine = try artifact([(true, "property rule")], extra: ["propertyTokens": ["p-1"]])
        #expect(firstOption(engine.decide(request: request(), conf: conf, nowMs: march25)) == nil)
        var configured = conf
        configured.propertyToken = "p-1"
        #expect(
            firstOption(engine.decide(request: request(), conf: configured, nowMs: march25))?["content"]
                == "property rule"
        )
        var other = request()
        other["property"] = ["token": "p-2"]
        #expect(firstOption(engine.decide(request: other, conf: configured, nowMs: march25)) == nil)
    }

    @Test func givesANewVisitorATntIdWithTheLocationHint() throws {
        let engine = try artifact([(["<=": [0, ["var": "allocation"], 100]], "in")])
        var anonymous = request()
        anonymous["id"] = nil
        let decision = engine.decide(
            request: anonymous,
            conf: conf,
            nowMs: march25,
            options: DecisionOptions(locationHint: "35", makeIdentifier: sequence())
        )
        #expect(decision.response["requestId"] == "id-1")
        #expect(decision.response["id"] == ["tntId": "id-2.35_0"])
        #expect(decision.notificationRequest()?["id"] == ["tntId": "id-2.35_0"])
    }

    @Test func notifiesEachDisplayedTokenOncePerMbox() throws {
        let engine = try artifact([(true, "a")])
        let twice = request(mboxes: [["name": "hero", "index": 1], ["name": "hero", "index": 2]])
        let decision = engine.decide(
            request: twice,
            conf: conf,
            nowMs: march25,
            options: DecisionOptions(makeIdentifier: sequence())
        )
        #expect(decision.notifications.count == 1)
        #expect(
            decision.notifications.first
                == [
                    "id": "id-2", "impressionId": "id-3", "timestamp": .integer(march25), "type": "display",
                    "mbox": ["name": "hero"], "tokens": ["token-0"],
                ]
        )
        #expect(decision.response["execute"]?["mboxes"]?.arrayValue?.count == 2)
        let prefetched = engine.decide(request: request("prefetch"), conf: conf, nowMs: march25)
        #expect(prefetched.notifications.isEmpty)
        #expect(firstOption(prefetched, "prefetch")?["eventToken"] == "token-0")
        #expect(prefetched.notificationRequest() == nil)
        #expect(
            prefetched.notificationRequest(telemetry: [["requestId": "r"]])?["telemetry"] == [
                "entries": [["requestId": "r"]]
            ]
        )
    }

    @Test func aConditionThatCannotBeEvaluatedDoesNotMatch() throws {
        let engine = try artifact([(["startsWith": ["a", "b"]], "broken"), (true, "fallback")])
        #expect(firstOption(engine.decide(request: request(), conf: conf, nowMs: march25))?["content"] == "fallback")
    }

    @Test func replacesCampaignMacrosInHTML() throws {
        let html: JSONValue =
            "${activity.id}|${campaign.name}|${campaign.recipe.id}|${mbox.name}|${mbox.tier}|${Campaign.id}|${nothing.here}|${bad-key}"
        let engine = try artifact([(true, html)], optionType: "html")
        let decision = engine.decide(
            request: request(mboxes: [["name": "hero", "index": 1, "parameters": ["tier": "gold"]]]),
            conf: conf,
            nowMs: march25
        )
        #expect(
            firstOption(decision)?["content"] == "1|Hero test|0|hero|gold|${Campaign.id}|${nothing.here}|${bad-key}"
        )
    }

    @Test func decidesByTheTimeGiven() throws {
        // Weekdays 09:00 to 17:00 UTC, as Target writes a schedule.
        let schedule: JSONValue = [
            "and": [["<=": [1, ["var": "current_day"], 5]], ["<=": ["0900", ["var": "current_time"], "1700"]]]
        ]
        let engine = try artifact([(schedule, "office hours"), (true, "otherwise")])
        let wednesdayNoon = Int64(1_585_137_600_000)  // 2020-03-25 12:00 UTC
        let sundayNoon = Int64(1_585_483_200_000)  // 2020-03-29 12:00 UTC
        #expect(
            firstOption(engine.decide(request: request(), conf: conf, nowMs: wednesdayNoon))?["content"]
                == "office hours"
        )
        #expect(firstOption(engine.decide(request: request(), conf: conf, nowMs: march25))?["content"] == "otherwise")
        #expect(
            firstOption(engine.decide(request: request(), conf: conf, nowMs: sundayNoon))?["content"] == "otherwise"
        )
    }

    @Test func theSameInputsGiveTheSameDecision() throws {
        let engine = try artifact([(["<": [["var": "allocation"], 50]], "low"), (true, "high")])
        var traced = request()
        traced["trace"] = [:]
        let first = engine.decide(
            request: traced,
            conf: conf,
            nowMs: march25,
            options: DecisionOptions(makeIdentifier: sequence())
        )
        let second = engine.decide(
            request: traced,
            conf: conf,
            nowMs: march25,
            options: DecisionOptions(makeIdentifier: sequence())
        )
        #expect(first.response == second.response)
        #expect(first.notifications == second.notifications)
        #expect(first.response["execute"]?["mboxes"]?.arrayValue?.first?["trace"] != nil)
    }

    @Test func telemetryEntriesDescribeTheRequest() throws {
        let engine = try artifact([(true, "a")])
        let decision = engine.decide(
            request: request("prefetch"),
            conf: conf,
            nowMs: march25,
            options: DecisionOptions(makeIdentifier: sequence())
        )
        #expect(
            decision.telemetryEntry(execution: 1.234_56, parsing: 0.5)
                == [
                    "requestId": "id-1", "timestamp": .integer(march25), "execution": 1.23, "parsing": 0.5,
                    "mode": "local",
                    "features": ["prefetchMboxCount": 1, "decisioningMethod": "on-device"],
                ]
        )
        var quiet = conf
        quiet.telemetryEnabled = false
        let muted = engine.decide(request: request("prefetch"), conf: quiet, nowMs: march25)
        #expect(muted.notificationRequest(telemetry: [decision.telemetryEntry(execution: 1)]) == nil)
    }
}

/// The obfuscated artifact (`rules.bin`), made here the way obfuscationProvider.ts reads it.
@Suite struct ArtifactObfuscationTests {
    private let organization = "74F652E95F1B16FE0A495C92@AdobeOrg"
    private let key = "0123456789abcdef0123456789abcdef"

    private func obfuscate(_ json: String, version: String = "1", organization: String) -> [UInt8] {
        let header =
            Array(("TDA:" + version).utf8) + Array(repeating: UInt8(ascii: " "), count: 8 - 4 - version.utf8.count)
        let secret = Array(organization.utf8) + Array(key.utf8)
        let body = Array(json.utf8).enumerated().map { $0.element ^ secret[$0.offset % secret.count] }
        return header + Array(key.utf8) + body
    }

    @Test func readsTheObfuscatedForm() throws {
        let bytes = obfuscate(
            #"{"version":"1.0.0","meta":{"clientCode":"targettesting"},"rules":{}}"#,
            organization: organization
        )
        let artifact = try DecisioningArtifact(obfuscated: bytes, organizationId: organization)
        #expect(artifact.version == "1.0.0")
        #expect(artifact.meta["clientCode"] == "targettesting")
    }

    @Test func refusesAnotherOrganizationsKeyOrHeaderVersion() {
        let bytes = obfuscate(#"{"version":"1.0.0","rules":{}}"#, organization: organization)
        #expect(throws: ArtifactError.self) {
            try DecisioningArtifact(obfuscated: bytes, organizationId: "74F652E95F1B16FE0A495C92@InvalidOrg")
        }
        let future = obfuscate(#"{"version":"1.0.0","rules":{}}"#, version: "2", organization: organization)
        #expect(throws: ArtifactError.self) {
            try DecisioningArtifact(obfuscated: future, organizationId: organization)
        }
        #expect(throws: ArtifactError.self) {
            try DecisioningArtifact(obfuscated: [1, 2, 3], organizationId: organization)
        }
    }
}
