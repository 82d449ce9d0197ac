import Foundation
import PreflightProtocol
import StateFiles
import Testing
import UpstreamHTTP

@testable import PassEntitlement

@Test func registersOnceAndReusesTheRegistrationAcrossRestarts() async throws {
    let directory = makeTemporaryDirectory()
    let first = Harness(directory: directory)
    first.login()
    #expect(await first.preauthorize(["r1"]) == permits(["r1"]))
    #expect(first.fake.count("register") == 1)
    let register = try #require(first.fake.requests("register").first)
    #expect(register.header("Content-Type") == "application/json")
    #expect(register.header("X-Device-Info") != nil)
    #expect(register.jsonBody?["software_statement"]?.stringValue == Harness.softwareStatement)
    #expect(register.jsonBody?["redirect_uri"]?.stringValue == "https://preflight.invalid/pass/callback")

    let path = "\(directory)/pass-registration.json"
    #expect(FileSystem.permissions(of: path) == 0o600)
    let stored = try JSONReader.read(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    let clientID = try #require(stored["client_id"]?.stringValue)
    #expect(stored["software_statement"] == nil, "the statement itself is not stored")

    // A restart: a new Entitlement over the same state directory and the same Adobe Pass.
    let second = Harness(directory: directory, fake: first.fake)
    #expect(await second.preauthorize(["r2"]) == permits(["r2"]))
    #expect(first.fake.count("register") == 1, "never registers again while the registration works")
    let tokenRequests = first.fake.requests("token")
    #expect(tokenRequests.count == 2)
    #expect(tokenRequests.allSatisfy { FakePass.formFields($0.body)["client_id"] == clientID })
}

@Test func tokenRequestIsAFormBodyWithClientCredentials() async throws {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    let token = try #require(harness.fake.requests("token").first)
    #expect(token.method == "POST")
    #expect(token.url == "https://pass.test/o/client/token")
    #expect(token.header("Content-Type") == "application/x-www-form-urlencoded")
    let form = FakePass.formFields(token.body)
    #expect(form["grant_type"] == "client_credentials")
    #expect(form["client_id"] != nil && form["client_secret"] != nil)
    #expect(!token.url.contains("secret"), "the secret never goes into a URL")
}

@Test func corruptRegistrationFileIsMovedAsideAndReplaced() async throws {
    let directory = makeTemporaryDirectory()
    let path = "\(directory)/pass-registration.json"
    try "{\"client_id\": 12, trailing garbage".write(toFile: path, atomically: true, encoding: .utf8)
    let harness = Harness(directory: directory)
    harness.login()
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("register") == 1)
    let names = try FileManager.default.contentsOfDirectory(atPath: directory)
    #expect(names.contains { $0.hasPrefix("pass-registration.json.corrupt-") })
    #expect(FileSystem.permissions(of: path) == 0o600)
    #expect(harness.logs.all.contains { $0.contains("corrupt") && $0.hasPrefix("warning") })
}

@Test func invalidClientAtTheTokenEndpointRegistersAnewOnce() async {
    let directory = makeTemporaryDirectory()
    let first = Harness(directory: directory)
    first.login()
    _ = await first.preauthorize(["r1"])
    first.fake.forgetClients()
    let second = Harness(directory: directory, fake: first.fake)
    #expect(await second.preauthorize(["r2"]) == permits(["r2"]))
    #expect(first.fake.count("register") == 2)
}

@Test func tokenIsRenewedBeforeItExpires() async {
    let harness = Harness()
    harness.fake.setTokenLifetime(seconds: 100)
    harness.login()
    _ = await harness.preauthorize(["r1"], disabled: [.localCache])
    #expect(harness.fake.count("token") == 1)
    // 100 s lifetime: renewed a fifth before expiry, at 80 s.
    harness.clock.advance(by: .seconds(79))
    _ = await harness.preauthorize(["r1"], disabled: [.localCache])
    #expect(harness.fake.count("token") == 1)
    harness.clock.advance(by: .seconds(2))
    #expect(await harness.preauthorize(["r1"], disabled: [.localCache]) == permits(["r1"]))
    #expect(harness.fake.count("token") == 2)
}

@Test func refusedTokenIsReplacedOnceAndTheCallRetried() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.fake.revokeTokens()
    #expect(await harness.preauthorize(["r2"]) == permits(["r2"]))
    #expect(harness.fake.count("token") == 2)
    #expect(harness.fake.count("preauthorize") == 3, "one refused, one retried, one before")
}

@Test func aSecondRefusalIsPassedThroughWithoutLooping() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    let refused = FakePass.json(401, FakePass.adobeError(401, "invalid_access_token_service_provider"))
    harness.fake.script("preauthorize", .respond(refused), .respond(refused))
    let answer = await harness.preauthorize(["r2"])
    #expect(answer.outcome == "response")
    #expect(answer.adobeStatus?.status == 401)
    #expect(answer.statusCode == "invalid_access_token_service_provider")
    #expect(harness.fake.count("token") == 2)
}

@Test func noObtainableTokenAnswersAccessTokenUnavailable() async {
    let harness = Harness()
    harness.fake.setTokenLifetime(seconds: 100)
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.clock.advance(by: .seconds(101))
    harness.fake.script("token", .respond(FakePass.json(400, ["error": "invalid_request"])))
    let answer = await harness.preauthorize(["r2"])
    #expect(answer.outcome == "failure")
    #expect(answer.resourceIDs == [])
    #expect(answer.failure != nil, "an agent-side failure: status 0")
    #expect(answer.statusCode == "access_token_unavailable")
    #expect(answer.failure?.action == ErrorAction.none)
}

@Test func withoutATokenNoRequestorGetsConfigured() async {
    var configuration = Harness.configuration()
    configuration.softwareStatement = ""
    let harness = Harness(configuration: configuration)
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.statusCode == "requestor_not_configured")
    #expect(answer.failure?.action == .retry)
    #expect(answer.failure?.message.contains("pass.softwareStatement") == true)
    #expect(harness.fake.count("register") == 0)
}

@Test func failedRenewalKeepsTheValidTokenAndSpacesAttempts() async {
    let harness = Harness()
    harness.fake.setTokenLifetime(seconds: 100)
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.clock.advance(by: .seconds(81))
    harness.fake.script("token", .respond(FakePass.json(500, ["error": "server_error"])))
    #expect(await harness.preauthorize(["r1"], disabled: [.localCache]) == permits(["r1"]))
    #expect(harness.fake.count("token") == 2)
    #expect(await harness.preauthorize(["r1"], disabled: [.localCache]) == permits(["r1"]))
    #expect(harness.fake.count("token") == 2, "no new attempt right after a failed one")
    harness.clock.advance(by: .seconds(2))
    #expect(await harness.preauthorize(["r1"], disabled: [.localCache]) == permits(["r1"]))
    #expect(harness.fake.count("token") == 3)
}
