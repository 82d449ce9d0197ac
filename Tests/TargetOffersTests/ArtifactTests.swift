import Foundation
import PreflightCore
import PreflightProtocol
import Synchronization
import Testing
import UpstreamHTTP

@testable import TargetOffers

private func artifactJSON(version: String = "1.0.0", mboxes: String = "{}") -> [UInt8] {
    Array(
        """
        {"version":"\(version)","meta":{"clientCode":"acme","environment":"production",\
        "generatedAt":"2026-02-01T00:00:00.000Z"},"globalMbox":"target-global-mbox","geoTargetingEnabled":false,\
        "responseTokens":[],"remoteMboxes":[],"remoteViews":[],"localMboxes":[],"localViews":[],\
        "rules":{"mboxes":\(mboxes),"views":{}}}
        """.utf8
    )
}

/// Not seeded: `.none` jitter paths do not draw, `.equal` ones are checked by their range.
private struct FixedGenerator: RandomNumberGenerator {
    mutating func next() -> UInt64 { 0 }
}

@Suite struct ArtifactPollingTests {
    @Test func aTwoHundredIsReadAndItsETagKept() throws {
        let answer = ArtifactPolling.interpret(
            HTTPResponse(status: 200, headers: ["etag": "\"abc\""], body: artifactJSON()),
            format: .json,
            organizationId: "",
            holding: false
        )
        guard case .accepted(let artifact, let etag) = answer else {
            Issue.record("not accepted: \(answer)")
            return
        }
        #expect(artifact.version == "1.0.0" && etag == "\"abc\"")
        #expect(artifact.generatedAt == "2026-02-01T00:00:00.000Z")
    }

    @Test func anotherMajorVersionOrNotJSONIsRefused() {
        for body in [artifactJSON(version: "2.0.0"), Array("<html>".utf8)] {
            let answer = ArtifactPolling.interpret(
                HTTPResponse(status: 200, body: body),
                format: .json,
                organizationId: "",
                holding: true
            )
            guard case .refused = answer else {
                Issue.record("not refused: \(answer)")
                continue
            }
        }
    }

    @Test func a304KeepsWhatIsHeldAndIsAFailureWithNothingHeld() {
        guard
            case .notModified = ArtifactPolling.interpret(
                HTTPResponse(status: 304),
                format: .json,
                organizationId: "",
                holding: true
            )
        else {
            Issue.record("a 304 with an artifact held")
            return
        }
        guard
            case .failed = ArtifactPolling.interpret(
                HTTPResponse(status: 304),
                format: .json,
                organizationId: "",
                holding: false
            )
        else {
            Issue.record("a 304 with nothing held")
            return
        }
    }

    @Test func successesWaitTheIntervalAndFailuresBackOffWithinIt() {
        var generator = FixedGenerator()
        let interval = Duration.seconds(300)
        #expect(
            ArtifactPolling.delay(after: .updated, failuresInARow: 0, interval: interval, using: &generator) == interval
        )
        #expect(
            ArtifactPolling.delay(after: .refused, failuresInARow: 0, interval: interval, using: &generator) == interval
        )
        #expect(ArtifactPolling.delay(after: .notModified, failuresInARow: 0, interval: nil, using: &generator) == nil)
        // Equal jitter with a generator drawing 0: half the back-off.
        #expect(
            ArtifactPolling.delay(after: .networkError, failuresInARow: 1, interval: interval, using: &generator)
                == .seconds(5)
        )
        #expect(
            ArtifactPolling.delay(after: .httpError, failuresInARow: 3, interval: interval, using: &generator)
                == .seconds(20)
        )
        // Never past the interval, and retried even when the interval is "never".
        #expect(
            ArtifactPolling.delay(after: .httpError, failuresInARow: 20, interval: .seconds(60), using: &generator)
                == .seconds(60)
        )
        #expect(
            ArtifactPolling.delay(after: .networkError, failuresInARow: 20, interval: nil, using: &generator)
                == .seconds(150)
        )
    }

    @Test func theDefaultAddressIsTheSDKs() {
        #expect(
            TargetConfiguration.defaultArtifactURL(
                clientCode: "acme",
                environment: "production",
                propertyToken: "",
                format: .json
            ) == "https://assets.adobetarget.com/acme/production/v1/rules.json"
        )
        #expect(
            TargetConfiguration.defaultArtifactURL(
                clientCode: "acme",
                environment: "staging",
                propertyToken: "p-1",
                format: .bin
            ) == "https://assets.adobetarget.com/acme/staging/v1/p-1/rules.bin"
        )
    }
}

@Suite struct ArtifactKeepingTests {
    private func service(_ transport: ScriptedTransport, folder: String) -> TargetService {
        onDeviceService(transport, folder: folder)
    }

    @Test func aDownloadIsKeptAndSentBackAsIfNoneMatchAndReadAtTheNextStart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("artifact-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let transport = ScriptedTransport()
        transport.answer(HTTPResponse(status: 200, headers: ["etag": "\"v1\""], body: artifactJSON()))
        let target = service(transport, folder: folder)
        #expect(target.artifact == nil)
        #expect(await target.fetchArtifact() == .updated)
        #expect(target.artifact?.version == "1.0.0")
        #expect(target.artifactStatus.source == .network && target.artifactStatus.etag == "\"v1\"")

        transport.answer(HTTPResponse(status: 304))
        #expect(await target.fetchArtifact() == .notModified)
        #expect(transport.requests.last?.headers.first { $0.name == "If-None-Match" }?.value == "\"v1\"")

        transport.answer(HTTPResponse(status: 200, body: artifactJSON(version: "2.0.0")))
        #expect(await target.fetchArtifact() == .refused)
        #expect(target.artifact?.version == "1.0.0" && target.artifactStatus.lastFetchResult == .refused)

        transport.answer(HTTPResponse(status: 503))
        #expect(await target.fetchArtifact() == .httpError)
        #expect(target.artifactStatus.failuresInARow == 1 && target.artifact?.version == "1.0.0")

        // The next start, offline: the kept rules, from disk, with their ETag.
        let restarted = service(ScriptedTransport(), folder: folder)
        restarted.loadKeptArtifact(restarted.configuration)
        #expect(restarted.artifact?.version == "1.0.0")
        #expect(restarted.artifactStatus.source == .disk && restarted.artifactStatus.etag == "\"v1\"")
        #expect(restarted.artifactStatus.downloadedAtMs == 1_800_000_000_000)

        // Read again while one is held: the held one stays, and so do the decisions made with it.
        let inputs = restarted.decisionInputs.load(ordering: .acquiring)
        transport.answer(HTTPResponse(status: 200, headers: ["etag": "\"v3\""], body: artifactJSON(version: "1.0.1")))
        let online = service(transport, folder: folder)
        #expect(await online.fetchArtifact() == .updated)
        let onlineInputs = online.decisionInputs.load(ordering: .acquiring)
        online.loadKeptArtifact(online.configuration)
        #expect(online.artifact?.version == "1.0.1" && online.artifactStatus.source == .network)
        #expect(online.decisionInputs.load(ordering: .acquiring) == onlineInputs)
        restarted.loadKeptArtifact(restarted.configuration)
        #expect(restarted.decisionInputs.load(ordering: .acquiring) == inputs)
    }
}
