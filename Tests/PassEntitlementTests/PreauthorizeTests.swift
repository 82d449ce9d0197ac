import Foundation
import PreflightProtocol
import Testing
import UpstreamHTTP

@testable import PassEntitlement

@Test func restCallsCarryTheDocumentedHeaders() async throws {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    let expectedDevice = "fingerprint \(Encoding.base64(SHA256.hash(Array("box-1".utf8))))"
    for operation in ["configuration", "profiles", "preauthorize"] {
        let request = try #require(harness.fake.requests(operation).first)
        #expect(request.header("Authorization")?.hasPrefix("Bearer ") == true, "\(operation)")
        #expect(request.header("AP-Device-Identifier") == expectedDevice, "\(operation)")
        #expect(request.header("X-Device-Info") == Harness.configuration().deviceInfo.headerValue, "\(operation)")
        #expect(request.header("Accept") == "application/json", "\(operation)")
    }
    let configuration = try #require(harness.fake.requests("configuration").first)
    #expect(configuration.method == "GET")
    #expect(configuration.url == "https://pass.test/api/v2/espn/configuration")
    let profiles = try #require(harness.fake.requests("profiles").first)
    #expect(profiles.url == "https://pass.test/api/v2/espn/profiles")
    let preauthorize = try #require(harness.fake.requests("preauthorize").first)
    #expect(preauthorize.method == "POST")
    #expect(preauthorize.url == "https://pass.test/api/v2/espn/decisions/preauthorize/Cablevision")
    #expect(preauthorize.header("Content-Type") == "application/json")
    #expect(preauthorize.jsonBody == ["resources": ["r1"]])
    #expect(preauthorize.header("Cache-Control") == nil)
}

@Test func unknownRequestorIsNotConfiguredOnThisBox() async {
    let harness = Harness()
    let answer = await harness.preauthorize(["r1"], requestor: "hbo")
    #expect(answer.outcome == "failure")
    #expect(answer.resourceIDs == [])
    #expect(answer.failure != nil, "an agent-side failure: status 0")
    #expect(answer.statusCode == "requestor_not_configured")
    #expect(answer.failure?.action == .retry)
    #expect(answer.failure?.message.contains("not configured on this box") == true)
    #expect(harness.fake.requests.isEmpty)
}

@Test func requestorIsNotConfiguredUntilItsConfigurationSucceeds() async {
    let harness = Harness()
    harness.login()
    harness.fake.script(
        "configuration",
        .respond(FakePass.json(500, FakePass.adobeError(500, "internal_server_error")))
    )
    let first = await harness.preauthorize(["r1"])
    #expect(first.outcome == "failure")
    #expect(first.statusCode == "requestor_not_configured")
    #expect(first.failure?.action == .retry)
    #expect(first.failure?.message.contains("internal_server_error") == true)
    // Asked again at once: no new attempt (at most one per 2 s from apps), same answer.
    #expect(await harness.preauthorize(["r1"]).statusCode == "requestor_not_configured")
    #expect(harness.fake.count("configuration") == 1)
    harness.clock.advance(by: .seconds(2))
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("configuration") == 2)
}

@Test func noProfileAnswersAuthenticationSessionMissing() async {
    let harness = Harness()
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.failure?.code == .authenticationSessionMissing)
    #expect(
        answer.failure?.message
            == "The authentication session associated with this request could not be retrieved. The user must re-authenticate with a supported MVPD in order to continue."
    )
    #expect(answer.failure?.action == .authentication)
    // Within the recheck interval the answer comes from memory.
    _ = await harness.preauthorize(["r1"])
    #expect(harness.fake.count("profiles") == 1)
    harness.clock.advance(by: .seconds(5))
    harness.login()
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("profiles") == 2)
    let sessions = harness.events.bodies("auth.session")
    #expect(sessions.map { $0["state"]?.stringValue } == ["missing", "authenticated"])
    #expect(sessions.last?["mvpd"] == "Cablevision")
}

@Test func profilePastItsNotAfterAnswersAuthenticationSessionExpired() async {
    let harness = Harness()
    harness.fake.login("espn", notAfter: harness.clock.epochMilliseconds() - 1000)
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.outcome == "failure")
    #expect(answer.statusCode == "authentication_session_expired")
    #expect(answer.failure?.action == .authentication)
    #expect(answer.failure != nil, "an agent-side failure: status 0")
}

@Test func heldProfileExpiringDropsItsDecisions() async {
    let harness = Harness()
    harness.login(for: .seconds(60))
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.cached(["r1"]) == permits(["r1"]))
    harness.clock.advance(by: .seconds(61))
    #expect(harness.cached(["r1"]) == nil)
    harness.fake.logout("espn")
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.statusCode == "authentication_session_expired")
    #expect(harness.entitlement.snapshot().requestor("espn")?.decisions == [])
    // A new login is a new profile: decisions are asked for again.
    harness.clock.advance(by: .seconds(5))
    harness.login()
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.count("preauthorize") == 2)
}

@Test func changedProfileDropsTheCache() async {
    let harness = Harness()
    harness.login(for: .seconds(60))
    _ = await harness.preauthorize(["r1"])
    harness.clock.advance(by: .seconds(61))
    harness.login(mvpd: "Comcast_SSO")
    #expect(await harness.preauthorize(["r1"]) == permits(["r1"]))
    #expect(harness.fake.requests("preauthorize").last?.url.hasSuffix("/Comcast_SSO") == true)
    #expect(harness.entitlement.snapshot().requestor("espn")?.sessionMvpd == "Comcast_SSO")
}

@Test func decisionsAndEnhancedErrorsArePassedThroughInRequestOrder() async {
    let harness = Harness()
    harness.login()
    let error: JSONObject = [
        "status": 403, "code": "preauthorization_denied_by_mvpd", "message": "The MVPD said no.",
        "details": "Package missing.", "helpUrl": "https://example.com/help", "trace": "abc-123", "action": "none",
    ]
    harness.fake.decide("r2", authorized: false, error: error)
    harness.fake.decide("r3", authorized: false)
    let answer = await harness.preauthorize(["r1", "r2", "r3"])
    #expect(answer.outcome == "response")
    #expect(answer.resourceIDs == ["r1", "r2", "r3"])
    #expect(answer.decisions.map(\.authorized) == [true, false, false])
    #expect(answer.decisions.map { $0.error == nil } == [true, false, true])
    #expect(answer.decisions.dropFirst().first?.error?.fields == error)
    let event = harness.events.bodies("auth.decisions").last
    #expect(event?["permitted"] == 1)
    #expect(event?["denied"] == 2)
    #expect(event?["source"] == "network")
    #expect(event?["mvpd"] == "Cablevision")
}

@Test func itemErrorKeepsOnlyTheFieldsAdobeSent() async {
    let harness = Harness()
    harness.login()
    harness.fake.decide(
        "r1",
        authorized: false,
        error: ["code": "network_connection_timeout", "action": "retry", "extra": 1]
    )
    let answer = await harness.preauthorize(["r1"])
    #expect(
        answer.decisions.first?.error?.fields == ["code": "network_connection_timeout", "action": "retry"]
    )
}

@Test func topLevelAdobeErrorGivesItsStatusAndNoResources() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script(
        "preauthorize",
        .respond(
            FakePass.json(
                400,
                [
                    "status": 400, "code": "bad_request", "message": "The request is invalid.", "helpUrl": "https://h",
                    "trace": "t-1", "action": "none",
                ]
            )
        )
    )
    let answer = await harness.preauthorize(["r1"])
    #expect(answer.outcome == "response")
    #expect(answer.resourceIDs == [])
    #expect(
        answer.adobeStatus?.fields == [
            "status": 400, "code": "bad_request", "message": "The request is invalid.", "helpUrl": "https://h",
            "trace": "t-1", "action": "none",
        ]
    )
    let errors = harness.events.bodies("upstream.error")
    #expect(errors.contains { $0["operation"] == "preauthorize" && $0["status"] == 400 && $0["code"] == "bad_request" })
    #expect(errors.allSatisfy { $0["service"] == "pass" })
}

@Test func transportFailuresAnswerNetworkError() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script(
        "preauthorize",
        .fail(TransportError(.connection, "refused")),
        .fail(TransportError(.timeout, "slow"))
    )
    for _ in 0..<2 {
        let answer = await harness.preauthorize(["r1"])
        #expect(answer.outcome == "failure")
        #expect(answer.resourceIDs == [])
        #expect(answer.failure != nil, "an agent-side failure: status 0")
        #expect(answer.statusCode == "network_error")
        #expect(answer.failure?.action == ErrorAction.none)
    }
    #expect(harness.events.bodies("upstream.error").filter { $0["code"] == "network_error" }.count == 2)
}

@Test func eachRequestIsBoundedByTheTimeoutAndTheDeadline() async throws {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    for request in harness.fake.requests {
        #expect(request.timeout <= .seconds(5))
        #expect(request.timeout > .zero)
    }
}

@Test func unreadableBodiesAnswerServerResponseFormatUnknown() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r0"])
    harness.fake.script(
        "preauthorize",
        .respond(HTTPResponse(status: 200, headers: ["content-type": "text/html"], body: Array("<html>oops".utf8))),
        .respond(FakePass.json(200, ["decisions": [["resource": "other", "authorized": true]]])),
        .respond(HTTPResponse(status: 502, body: Array("Bad Gateway".utf8)))
    )
    for _ in 0..<3 {
        let answer = await harness.preauthorize(["r1"])
        #expect(answer.outcome == "failure")
        #expect(answer.statusCode == "server_response_format_unknown")
        #expect(answer.failure?.action == ErrorAction.none)
    }
}

@Test func manyResourcesAreSplitAndMergedInRequestOrder() async throws {
    let harness = Harness()
    harness.login()
    let resources = (1...12).map { "res-\($0)" }
    harness.fake.decide("res-7", authorized: false)
    let answer = await harness.preauthorize(resources)
    #expect(answer.outcome == "response")
    #expect(answer.resourceIDs == resources)
    #expect(answer.decisions.dropFirst(6).first?.authorized == false)
    let calls = harness.fake.requests("preauthorize")
    #expect(calls.count == 3)
    let sent = calls.compactMap { $0.jsonBody?["resources"]?.arrayValue?.count }.sorted()
    #expect(sent == [2, 5, 5])
}

@Test func duplicateResourcesAreAnsweredEachButAskedOnce() async {
    let harness = Harness()
    harness.login()
    harness.fake.decide("b", authorized: false)
    let answer = await harness.preauthorize(["a", "b", "a"])
    #expect(answer.resourceIDs == ["a", "b", "a"])
    #expect(answer.decisions.map(\.authorized) == [true, false, true])
    #expect(harness.fake.requests("preauthorize").first?.jsonBody == ["resources": ["a", "b"]])
}

@Test func cachedPermitsAnswerWithoutAnUpstreamCall() async {
    let harness = Harness()
    harness.login()
    #expect(harness.cached(["r1"]) == nil)
    _ = await harness.preauthorize(["r1", "r2"])
    let calls = harness.fake.requests.count
    #expect(harness.cached(["r2", "r1"]) == permits(["r2", "r1"]))
    #expect(await harness.preauthorize(["r1", "r2", "r1"]) == permits(["r1", "r2", "r1"]))
    #expect(harness.fake.requests.count == calls)
    let last = harness.events.bodies("auth.decisions").last
    #expect(last?["source"] == "cache")
    #expect(harness.cached(["r1"], requestor: "nbc") == nil)
    #expect(
        harness.entitlement.cachedResponse(
            for: PreauthorizeCommand(requestor: "espn", resources: ["r1"], disabledFeatures: [.localCache])
        ) == nil
    )
}

@Test func partlyCachedCommandsAskOnlyForTheRest() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    #expect(await harness.preauthorize(["r1", "r2"]) == permits(["r1", "r2"]))
    #expect(harness.fake.requests("preauthorize").last?.jsonBody == ["resources": ["r2"]])
}

@Test func cachedPermitsExpireAfterTheDecisionTTL() async {
    let harness = Harness()
    harness.login(for: .seconds(7200))
    _ = await harness.preauthorize(["r1"])
    harness.clock.advance(by: .seconds(599))
    #expect(harness.cached(["r1"]) != nil)
    harness.clock.advance(by: .seconds(1))
    #expect(harness.cached(["r1"]) == nil)
}

@Test func disabledLocalCacheAsksAdobeAndRefreshesTheCache() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.fake.decide("r1", authorized: false)
    let answer = await harness.preauthorize(["r1"], disabled: [.localCache])
    #expect(answer.decisions.first?.authorized == false)
    #expect(harness.fake.count("preauthorize") == 2)
    #expect(harness.cached(["r1"]) == nil, "the fresh denial replaced the cached permit")
    harness.fake.decide("r1", authorized: true)
    harness.clock.advance(by: .seconds(300))
    _ = await harness.preauthorize(["r1"], disabled: [.localCache])
    harness.clock.advance(by: .seconds(400))
    #expect(harness.cached(["r1"]) != nil, "the refreshed permit's age restarted")
}

@Test func denialsAreNotCached() async {
    let harness = Harness()
    harness.login()
    harness.fake.decide("r1", authorized: false)
    _ = await harness.preauthorize(["r1"])
    #expect(harness.cached(["r1"]) == nil)
    _ = await harness.preauthorize(["r1"])
    #expect(harness.fake.count("preauthorize") == 2)
}

@Test func disabledRemoteCacheSendsCacheControlNoCache() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"], disabled: [.remoteCache])
    _ = await harness.preauthorize(["r2"])
    let calls = harness.fake.requests("preauthorize")
    #expect(calls.count == 2)
    #expect(calls.first?.header("Cache-Control") == "no-cache")
    #expect(calls.last?.header("Cache-Control") == nil)
}

@Test func profileMissingAtAdobeForgetsTheHeldProfile() async {
    let harness = Harness()
    harness.login()
    _ = await harness.preauthorize(["r1"])
    harness.fake.script(
        "preauthorize",
        .respond(
            FakePass.json(403, FakePass.adobeError(403, "authenticated_profile_missing", action: "authentication"))
        )
    )
    let answer = await harness.preauthorize(["r2"])
    #expect(answer.outcome == "response")
    #expect(answer.statusCode == "authenticated_profile_missing")
    #expect(harness.cached(["r1"]) == nil)
    #expect(harness.events.bodies("auth.session").last?["state"] == "missing")
}
