import Foundation
import PreflightProtocol
import StateFiles
import TestSupport
import Testing
import UpstreamHTTP

@testable import PassEntitlement

@Test func snapshotShowsPerRequestorState() async throws {
    let harness = Harness()
    harness.login()
    harness.fake.decide("r2", authorized: false, error: ["code": "preauthorization_denied_by_mvpd"])
    _ = await harness.preauthorize(["r1", "r2"])
    harness.clock.advance(by: .seconds(7))
    _ = await harness.preauthorize(["r1"])
    _ = await harness.preauthorize(["x"], requestor: "hbo")
    let snapshot = harness.entitlement.snapshot()
    #expect(snapshot.serverURL == "https://pass.test")
    #expect(snapshot.registration == .registered)
    #expect(snapshot.token == .valid)
    #expect(snapshot.tokenExpiresAtMs == harness.clock.epochOrigin + 3_600_000)
    let espn = try #require(snapshot.requestor("espn"))
    #expect(espn.configurationState == .configured)
    #expect(espn.mvpds == ["Cablevision", "Comcast_SSO"])
    #expect(espn.sessionState == "authenticated")
    #expect(espn.sessionMvpd == "Cablevision")
    #expect(espn.sessionNotAfterMs == harness.clock.epochOrigin + 3_600_000)
    #expect(espn.decisions == [PassSnapshot.Requestor.Decision(mvpd: "Cablevision", resource: "r1", ageMs: 7000)])
    #expect(espn.counters.outcomes == ["response": 2])
    #expect(espn.counters.codes == ["preauthorization_denied_by_mvpd": 1])
    #expect(espn.counters.permitted == 2)
    #expect(espn.counters.denied == 1)
    #expect(espn.counters.fromCache == 1)
    #expect(snapshot.requestor("nbc")?.configurationState == .pending)
    #expect(snapshot.requestor("nbc")?.sessionState == "unknown")
    #expect(snapshot.unknownRequestorAnswers == 1)
}

@Test func clearDropsProfilesAndDecisionsButKeepsTheRegistration() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1", "r2"])
    let cleared = harness.entitlement.clear(requestor: "espn", registration: false)
    #expect(cleared == ClearedPassState(requestor: "espn", profiles: 1, decisions: 2, registration: false))
    #expect(harness.cached(["r1"]) == nil)
    #expect(FileManager.default.fileExists(atPath: "\(harness.directory)/pass-registration.json"))
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("profiles") == 2)
    #expect(harness.fake.count("register") == 1)
}

@Test func clearingTheRegistrationRegistersAnewAtTheNextCall() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    let cleared = harness.entitlement.clear(requestor: nil, registration: true)
    #expect(cleared.registration)
    #expect(cleared.requestor == nil)
    #expect(!FileManager.default.fileExists(atPath: "\(harness.directory)/pass-registration.json"))
    #expect(harness.entitlement.snapshot().token == PassSnapshot.TokenState.none)
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("register") == 2)
    #expect(FileSystem.permissions(of: "\(harness.directory)/pass-registration.json") == 0o600)
}

@Test func updatedConfigurationAddsAndRemovesRequestors() async {
    let harness = Harness()
    harness.login()
    harness.login("fox")
    _ = await harness.preauthorize(["r1"])
    var configuration = Harness.configuration(requestors: ["nbc", "fox"])
    configuration.timeout = .seconds(2)
    harness.entitlement.update(configuration: configuration)
    let removed = await harness.preauthorize(["r1"])
    #expect(removed.statusCode == "requestor_not_configured")
    #expect(removed.failure?.message.contains("not configured on this box") == true)
    #expect(await harness.preauthorize(["r1"], requestor: "fox") == permits(["r1"]))
    #expect(harness.fake.requests("preauthorize").last?.timeout == .seconds(2))
    #expect(harness.fake.count("token") == 1, "the token survives a reload that keeps the server")
    #expect(harness.entitlement.snapshot().requestors.map(\.name) == ["nbc", "fox"])
}

@Test func newServerURLRegistersAndConfiguresAgain() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    var configuration = Harness.configuration()
    configuration.serverURL = "https://pass-2.test"
    harness.entitlement.update(configuration: configuration)
    #expect(harness.cached(["r1"]) == nil)
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("register") == 2)
    #expect(harness.fake.requests("register").last?.url == "https://pass-2.test/o/client/register")
    #expect(harness.fake.count("configuration") == 2)
}

@Test func runRegistersConfiguresAndRetriesWithBackoff() async throws {
    // Each wait below ends with the loop asleep having handled the answers, told by the one sleeper on the
    // clock and the time it sleeps for, which the loop works out from those answers. A wait that fails ends
    // the test: going on would move the clock under a loop that has not got there, and what failed next
    // would look like the loop's fault (a retry that never came, a reload that did not wake it).
    let harness = Harness()
    harness.fake.script("configuration", .respond(FakePass.json(503, FakePass.adobeError(503, "service_unavailable"))))
    let run = Pending { await harness.entitlement.maintain() }
    // espn refused, nbc configured: asleep until espn's retry, a second on.
    try #require(
        await eventually {
            harness.fake.count("configuration") == 2 && harness.clock.sleeperCount == 1
                && harness.clock.nextWakeUp == .seconds(1)
        }
    )
    #expect(harness.fake.count("register") == 1)
    #expect(harness.entitlement.snapshot().requestor("espn")?.configurationState == .failed)
    #expect(harness.entitlement.snapshot().requestor("nbc")?.configurationState == .configured)
    harness.clock.advance(by: .seconds(1))
    // espn configured at the retry: asleep until the token's renewal (3600 s lifetime: at 3540 s).
    try #require(
        await eventually {
            harness.fake.count("configuration") == 3 && harness.clock.sleeperCount == 1
                && harness.clock.nextWakeUp == .seconds(3539)
        }
    )
    #expect(harness.entitlement.snapshot().requestor("espn")?.configurationState == .configured)
    // A reload wakes the loop at once for a new requestor.
    harness.entitlement.update(configuration: Harness.configuration(requestors: ["espn", "nbc", "fox"]))
    try #require(
        await eventually {
            harness.fake.count("configuration") == 4 && harness.clock.sleeperCount == 1
                && harness.clock.nextWakeUp == .seconds(3539)
        }
    )
    #expect(harness.fake.requests("configuration").last?.url.hasSuffix("/fox/configuration") == true)
    #expect(harness.entitlement.snapshot().requestor("fox")?.configurationState == .configured)
    // The token is renewed before it expires.
    harness.clock.advance(by: .seconds(3539))
    #expect(await eventually { harness.fake.count("token") == 2 })
    run.cancel()
    #expect(await run.wait() != nil, "run() returns when cancelled")
}

@Test func noSecretAppearsInSnapshotEventsOrLogs() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.fake.revokeTokens()
    _ = await harness.preauthorize(["r2"])
    harness.fake.script(
        "preauthorize",
        .respond(FakePass.json(400, FakePass.adobeError(400, "invalid_parameter_resources")))
    )
    _ = await harness.preauthorize(["r3"])
    harness.fake.forgetClients()
    harness.fake.revokeTokens()
    _ = await harness.preauthorize(["r4"])
    _ = harness.entitlement.clear(requestor: nil, registration: false)

    var output = harness.logs.all
    output += harness.events.all.map { "\($0.topic) \(JSONValue.object($0.body).text)" }
    // Everything the snapshot holds, every field the agent may show (auth.list, status, the status line).
    output.append(String(describing: harness.entitlement.snapshot()))
    let secrets = [Harness.softwareStatement] + harness.fake.clientSecrets + harness.fake.issuedTokens
    #expect(secrets.count >= 5)
    #expect(harness.logs.all.count > 5, "logging was captured")
    for secret in secrets {
        for line in output {
            #expect(!line.contains(secret), "a secret leaked into: \(line)")
        }
    }
}
