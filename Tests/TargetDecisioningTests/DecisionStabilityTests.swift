import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// How long a decision stays what it is: the span `stableSpan` gives must never cover an instant at which
/// the rules decide otherwise.
@Suite struct DecisionStabilityTests {
    private let conf = DecisioningConf(client: "acme", organizationId: "org@AdobeOrg")
    private let march25 = Int64(1_585_098_300_000)  // 2020-03-25 01:05 UTC

    private func engine(_ conditions: [JSONValue], mbox: String = "hero") throws -> DecisioningEngine {
        let rules: [JSONValue] = conditions.enumerated().map { index, condition in
            [
                "ruleKey": .string("r\(index)"),
                "meta": ["activity.id": .integer(Int64(index + 1)), "audience.ids": []],
                "condition": condition,
                "consequence": [
                    "name": .string(mbox),
                    "options": [["type": "html", "content": .string("offer-\(index)"), "eventToken": "t"]],
                ],
            ]
        }
        let json: JSONObject = [
            "version": "1.0.0", "meta": [:], "globalMbox": "target-global-mbox", "responseTokens": [],
            "localMboxes": [.string(mbox)], "remoteMboxes": [], "localViews": [], "remoteViews": [],
            "rules": ["mboxes": [mbox: .array(rules)], "views": [:]],
        ]
        return DecisioningEngine(artifact: try DecisioningArtifact(.object(json)))
    }

    private func content(_ engine: DecisioningEngine, at nowMs: Int64) -> String? {
        let request: JSONObject = [
            "id": ["tntId": "visitor.28_0"], "context": ["channel": "web"],
            "execute": ["mboxes": [["name": "hero", "index": 1]]],
        ]
        let decision = engine.decide(request: request, conf: conf, nowMs: nowMs)
        return decision.response["execute"]?["mboxes"]?.arrayValue?.first?["options"]?.arrayValue?.first?["content"]?
            .stringValue
    }

    private var timestamp: JSONValue { ["var": "current_timestamp"] }

    @Test func rulesThatDoNotReadTheTimeAreStableForever() throws {
        let engine = try engine([["==": [["var": "mbox.kind"], "sports"]], true])
        #expect(engine.stableSpan(mbox: "hero", nowMs: march25) == Int64.min..<Int64.max)
        #expect(engine.stableSpan(mbox: "unknown", nowMs: march25) == Int64.min..<Int64.max)
    }

    @Test func anActivityWindowBoundsTheSpanAtItsEdges() throws {
        let start = march25 - 1000
        let end = march25 + 5000
        let engine = try engine([["<=": [.integer(start), timestamp, .integer(end)]]])
        let span = engine.stableSpan(mbox: "hero", nowMs: march25)
        // Within the window (its edges are boundaries too: the span may end a millisecond early), and long.
        #expect(span.contains(march25) && span.lowerBound >= start && span.upperBound <= end + 1)
        #expect(span.lowerBound <= start + 1 && span.upperBound >= end)
        // Every instant in the span decides as now does; outside the window the rule does not match.
        #expect(content(engine, at: span.lowerBound) == "offer-0")
        #expect(content(engine, at: span.upperBound - 1) == "offer-0")
        #expect(content(engine, at: start - 1) == nil)
        #expect(content(engine, at: end + 1) == nil)
        // Before the window, the span ends where it opens.
        #expect(engine.stableSpan(mbox: "hero", nowMs: start - 10) == Int64.min..<start)
    }

    @Test func strictComparisonsAndFractionsAreBoundedToo() throws {
        let engine = try engine([
            ["<": [timestamp, .number(Double(march25) + 0.5)]], [">": [timestamp, .integer(march25 + 10)]],
        ])
        let span = engine.stableSpan(mbox: "hero", nowMs: march25)
        #expect(span.contains(march25))
        #expect(span.upperBound == march25 + 1)
        for instant in [span.lowerBound, span.upperBound - 1] {
            #expect(content(engine, at: instant) == content(engine, at: march25))
        }
    }

    @Test func theTimeOfDayOrWeekdayHoldsForTheMinute() throws {
        let engine = try engine([["==": [["var": "current_day"], 3]]])
        let minute = march25 / 60_000 * 60_000
        #expect(engine.stableSpan(mbox: "hero", nowMs: march25 + 1234) == minute..<(minute + 60_000))
    }

    @Test func theTimeReadAnyOtherWayCannotBeBounded() throws {
        for condition: JSONValue in [
            [">": [["-": [timestamp, 5]], 0]],  // arithmetic on the time
            ["<": [timestamp, ["var": "mbox.until"]]],  // a bound from the request
            ["==": [["var": ""], 1]],  // the whole context
            ["==": [["var": ["cat": ["current_", "timestamp"]]], 1]],  // a computed path
        ] {
            let engine = try engine([condition])
            #expect(engine.stableSpan(mbox: "hero", nowMs: march25).isEmpty, "\(condition)")
        }
    }

    @Test func elementsOfAnIterationAreNotTheContext() throws {
        let condition: JSONValue = ["some": [["var": "mbox.tags"], ["==": [["var": ""], "x"]]]]
        let engine = try engine([condition])
        #expect(engine.stableSpan(mbox: "hero", nowMs: march25) == Int64.min..<Int64.max)
    }

    @Test func theGlobalMboxIsNeverStable() throws {
        let engine = try engine([true], mbox: "target-global-mbox")
        #expect(engine.stableSpan(mbox: "target-global-mbox", nowMs: march25).isEmpty)
    }
}
