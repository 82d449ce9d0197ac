import Foundation
import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// Adobe's conformance cases for on-device decisioning, run through the engine and compared as
/// Adobe's runner compares them (test/decisioning.spec.js in the Node.js SDK): the response as an
/// object subset of `output`, and the notification request as an object subset of
/// `notificationOutput` (`null`: nothing is sent).
@Suite struct ConformanceTests {
    @Test func conformanceCasesArePresent() throws {
        let folder = ConformanceCase.folder
        #expect(
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("models").path),
            "Adobe's conformance cases are missing: expected them in \(folder.path) (shared/conformance beside the package, or $PREFLIGHT_SHARED/conformance)"
        )
        let cases = try ConformanceCase.load()
        #expect(cases.count >= 55, "expected Adobe's 55 conformance cases in \(folder.path), found \(cases.count)")
    }

    @Test(arguments: ConformanceCase.all())
    func conformanceCase(_ testCase: ConformanceCase) throws {
        let run = try ConformanceRun(testCase)
        if let expected = testCase.test["output"] {
            let difference = ObjectSubset.firstDifference(.object(run.decision.response), expected)
            #expect(difference == nil, "\(testCase.testDescription): response differs at \(difference ?? "")")
        }
        guard let expected = testCase.test["notificationOutput"] else { return }
        let sent = run.notificationRequest.map { JSONValue.object(["request": .object($0)]) }
        if expected == .null {
            #expect(
                sent == nil,
                "\(testCase.testDescription): expected no notification, got \(sent.map(JSONWriter.string) ?? "")"
            )
        } else {
            let difference = ObjectSubset.firstDifference(sent, expected)
            #expect(difference == nil, "\(testCase.testDescription): notification differs at \(difference ?? "")")
        }
    }
}

/// A case decided the way the agent's wiring will decide it: the artifact read (and timed, for the
/// telemetry entry the SDKs send about the download), the geo lookup done when the engine asks for one
/// (answered by the case's `mockGeo`), the decision timed for its own telemetry entry.
struct ConformanceRun {
    let decision: Decision
    let notificationRequest: JSONObject?

    init(_ testCase: ConformanceCase) throws {
        let clock = ContinuousClock()
        let loadStart = clock.now
        let engine = DecisioningEngine(artifact: try DecisioningArtifact(testCase.artifact))
        let loading = ConformanceRun.milliseconds(clock.now - loadStart)

        let conf = DecisioningConf(
            client: testCase.conf["client"]?.stringValue ?? "",
            organizationId: testCase.conf["organizationId"]?.stringValue ?? "",
            propertyToken: testCase.conf["propertyToken"]?.stringValue,
            telemetryEnabled: testCase.conf["telemetryEnabled"] != .bool(false)
        )
        let input = testCase.test["input"]?.objectValue ?? JSONObject()
        let parseStart = clock.now
        let request = try JSONReader.read(JSONWriter.string(input["request"] ?? [:])).objectValue ?? JSONObject()
        let parsing = ConformanceRun.milliseconds(clock.now - parseStart)
        let now =
            testCase.test["mockDate"]?.objectValue.map(ConformanceCase.epochMilliseconds)
            ?? Int64(Date().timeIntervalSince1970 * 1000)
        let options = DecisionOptions(
            sessionId: input["sessionId"]?.stringValue,
            locationHint: (input["locationHint"] ?? input["targetLocationHint"])?.stringValue,
            artifactTrace: ["artifactLocation": "not applicable", "pollingInterval": 0, "pollingHalted": false]
        )

        let decideStart = clock.now
        var decision = engine.decide(request: request, conf: conf, nowMs: now, options: options)
        if decision.geoLookup != nil, let answer = testCase.test["mockGeo"]?.objectValue {
            decision = engine.decide(request: request, conf: conf, nowMs: now, geo: answer, options: options)
        }
        let execution = ConformanceRun.milliseconds(clock.now - decideStart)

        self.decision = decision
        let download: JSONObject = [
            "requestId": "ArtifactDownload", "timestamp": .integer(now), "execution": .number(loading),
        ]
        notificationRequest = decision.notificationRequest(
            telemetry: [download, decision.telemetryEntry(execution: execution, parsing: parsing)]
        )
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
