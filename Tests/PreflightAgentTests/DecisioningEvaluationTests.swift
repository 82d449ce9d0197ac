import PreflightProtocol
import TargetDecisioning
import Testing

@testable import PreflightAgent

/// `decisioning.evaluate`'s arguments: defaults from the agent, overrides, and each refusal's field.
@Suite struct DecisioningEvaluationTests {
    static let defaults = DecisioningConf(client: "acme", organizationId: "", propertyToken: "box-property")
    static let artifact: JSONValue = [
        "version": "1.0.0", "geoTargetingEnabled": true,
        "rules": [
            "mboxes": [
                "hero": [
                    [
                        "ruleKey": "1", "activityId": 1, "meta": ["activity.id": 1],
                        "condition": ["==": [["var": "geo.city"], "PARIS"]],
                        "consequence": [
                            "name": "hero", "options": [["type": "html", "content": "Bonjour", "eventToken": "t"]],
                        ],
                    ]
                ]
            ]
        ],
    ]
    static let request: JSONValue = [
        "id": ["tntId": "v.28_0"], "context": ["channel": "web", "geo": ["ipAddress": "8.8.8.8"]],
        "execute": ["mboxes": [["name": "hero", "index": 1]]],
    ]

    static func decode(_ args: JSONObject) throws(ProtocolError) -> DecisioningEvaluation {
        try DecisioningEvaluation.decode(ArgumentReader(args), defaults: defaults) { 42 }
    }

    @Test func confAndNowDefaultToTheAgents() throws {
        let evaluation = try Self.decode(["artifact": Self.artifact, "request": Self.request])
        #expect(evaluation.conf == Self.defaults)
        #expect(evaluation.nowMs == 42)
        #expect(evaluation.geo == nil)
    }

    @Test func givenConfMembersWinAndANullPropertyTokenClearsIt() throws {
        let evaluation = try Self.decode([
            "artifact": Self.artifact, "request": Self.request, "now": 7,
            "conf": [
                "client": "other", "organizationId": "O@AdobeOrg", "propertyToken": nil, "telemetryEnabled": false,
            ],
        ])
        #expect(
            evaluation.conf
                == DecisioningConf(client: "other", organizationId: "O@AdobeOrg", telemetryEnabled: false)
        )
        #expect(evaluation.nowMs == 7)
    }

    static let badArguments: [(JSONObject, String)] = {
        let artifact = DecisioningEvaluationTests.artifact
        let request = DecisioningEvaluationTests.request
        var cases: [(JSONObject, String)] = []
        cases.append((["request": request], "artifact"))
        cases.append((["artifact": "rules.json", "request": request], "artifact"))
        cases.append((["artifact": artifact], "request"))
        cases.append((["artifact": artifact, "request": [1]], "request"))
        cases.append((["artifact": artifact, "request": request, "conf": ["client": 1]], "conf.client"))
        cases.append(
            (["artifact": artifact, "request": request, "conf": ["telemetryEnabled": "no"]], "conf.telemetryEnabled")
        )
        cases.append(
            (["artifact": artifact, "request": request, "conf": ["pollingInterval": 0]], "conf.pollingInterval")
        )
        cases.append((["artifact": artifact, "request": request, "now": 1.5], "now"))
        cases.append((["artifact": artifact, "request": request, "geo": "Paris"], "geo"))
        cases.append((["artifact": artifact, "request": request, "locationHint": 28], "locationHint"))
        cases.append((["artifact": artifact, "request": request, "extra": true], "extra"))
        return cases
    }()

    @Test(arguments: badArguments)
    func eachBadArgumentNamesItsField(args: JSONObject, field: String) {
        #expect {
            try Self.decode(args)
        } throws: { error in
            guard let error = error as? ProtocolError else { return false }
            return error.code == .invalidArgument && error.field == field
        }
    }

    @Test func anArtifactOfAnotherMajorVersionIsRefusedWithTheEnginesReason() throws {
        var artifact = Self.artifact.objectValue ?? [:]
        artifact["version"] = "2.1.0"
        let evaluation = try Self.decode(["artifact": .object(artifact), "request": Self.request])
        guard case .failure(let error) = evaluation.evaluate() else {
            Issue.record("a version 2 artifact was decided from")
            return
        }
        #expect(error.code == .invalidArgument && error.field == "artifact")
        #expect(error.message.contains("only major version 1"))
    }

    @Test func geoNeededAndNotGivenIsReportedAndGeoGivenAnswersIt() throws {
        let without = try Self.decode(["artifact": Self.artifact, "request": Self.request])
        guard case .success(let first) = without.evaluate() else {
            Issue.record("no result")
            return
        }
        #expect(first["geoLookup"] == ["ipAddress": "8.8.8.8"])
        #expect(first["notifications"] == [])
        #expect(first["notificationRequest"] != .null)  // telemetry alone still goes out

        let with = try Self.decode([
            "artifact": Self.artifact, "request": Self.request, "geo": ["x-geo-city": "PARIS"],
        ])
        guard case .success(let second) = with.evaluate() else {
            Issue.record("no result")
            return
        }
        #expect(second["geoLookup"] == nil)
        #expect(second["notifications"]?.arrayValue?.count == 1)
        let hero = second["response"]?["execute"]?["mboxes"]?.arrayValue?.first
        #expect(hero?["options"]?.arrayValue?.first?["content"] == "Bonjour")
    }
}
