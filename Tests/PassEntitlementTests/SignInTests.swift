import Foundation
import PreflightProtocol
import TestSupport
import Testing

@testable import PassEntitlement

/// `pass-signin.json`: what a restart resumes, and what it must not.
struct SignInStoreTests {
    private let pending = PendingSignIn(
        code: "ABC1234",
        url: "https://sp.auth.adobe.com/api/v2/authenticate/espn/ABC1234",
        mvpd: nil,
        notBefore: 1_700_000_000_000,
        notAfter: 1_700_001_800_000
    )

    @Test func keepsPendingCodesAndChoicesPerRequestorForTheirServerOnly() throws {
        let directory = makeTemporaryDirectory()
        let store = SignInStore(directory: directory, logger: LogRecorder().logger)
        store.save(
            [
                "espn": .init(signIn: pending, selectedProvider: "Cablevision"),
                "nbc": .init(signIn: nil, selectedProvider: "Comcast_SSO"),
                "fox": .init(signIn: nil, selectedProvider: nil),
            ],
            serverURL: "https://sp.auth.adobe.com"
        )
        let loaded = store.load(serverURL: "https://sp.auth.adobe.com")
        #expect(loaded["espn"] == .init(signIn: pending, selectedProvider: "Cablevision"))
        #expect(loaded["nbc"] == .init(signIn: nil, selectedProvider: "Comcast_SSO"))
        #expect(loaded["fox"] == nil, "a requestor with nothing to keep is not written")
        // A code belongs to the server that issued it.
        #expect(store.load(serverURL: "https://pass.test").isEmpty)
        let mode = try FileManager.default.attributesOfItem(atPath: "\(directory)/pass-signin.json")[.posixPermissions]
        #expect(mode as? Int == 0o600)
    }

    @Test func aCorruptFileIsMovedAsideAndNothingIsResumed() throws {
        let directory = makeTemporaryDirectory()
        try "{not json".write(toFile: "\(directory)/pass-signin.json", atomically: true, encoding: .utf8)
        let store = SignInStore(directory: directory, logger: LogRecorder().logger)
        #expect(store.load(serverURL: "https://sp.auth.adobe.com").isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/pass-signin.json"))
    }

    @Test func aCodeLivesUntilItsNotAfter() {
        #expect(pending.isLive(atEpochMilliseconds: 1_700_001_799_999))
        #expect(!pending.isLive(atEpochMilliseconds: 1_700_001_800_000))
        #expect(PendingSignIn(json: pending.json) == pending)
    }
}

/// Adobe's answers to the sign-in and authorization calls, as the agent reads them.
struct EntitlementParsingTests {
    @Test func sessionTimesAreEpochMillisecondsAsStringsOrNumbers() {
        #expect(PassUpstream.epochMilliseconds(.string("1733735289035")) == 1_733_735_289_035)
        #expect(PassUpstream.epochMilliseconds(.integer(1_733_735_289_035)) == 1_733_735_289_035)
        #expect(PassUpstream.epochMilliseconds(.string("soon")) == nil)
        #expect(PassUpstream.epochMilliseconds(nil) == nil)
    }

    @Test func anAuthorizeDecisionKeepsSourceTokenAndError() throws {
        let body = try JSONReader.read(
            Array(
                #"""
                {"decisions":[{"resource":"movie","serviceProvider":"espn","mvpd":"Cablevision","source":"degradation",
                "authorized":true,"notBefore":1,"notAfter":2,"token":{"notBefore":1,"notAfter":3,"serializedToken":"c2VjcmV0"}},
                {"resource":"other","serviceProvider":"espn","mvpd":"Cablevision","source":"mvpd","authorized":false,
                "error":{"status":403,"code":"authorization_denied_by_mvpd","message":"no","action":"none"}}]}
                """#.utf8
            )
        )
        let decisions = try #require(AuthorizationDecision.list(from: body))
        #expect(decisions.count == 2)
        #expect(decisions[0].source == "degradation" && decisions[0].isPermit && decisions[0].notAfter == 2)
        #expect(decisions[0].token == MediaToken(serializedToken: "c2VjcmV0", notBefore: 1, notAfter: 3))
        #expect(!decisions[1].isPermit && decisions[1].error?.code == "authorization_denied_by_mvpd")
        #expect(AuthorizationDecision.list(from: ["decisions": [["resource": "x"]]]) == nil)
    }

    @Test func profilesCarryTypeAndAttributes() throws {
        let body = try JSONReader.read(
            Array(
                #"""
                {"profiles":{"Cablevision":{"notBefore":1,"notAfter":2,"issuer":"Cablevision","type":"temporary",
                "attributes":{"zip":{"value":"10001","state":"plain"}}}}}
                """#.utf8
            )
        )
        let profile = try #require(AuthenticatedProfile.list(from: body)?.first)
        #expect(profile.type == "temporary" && profile.attributes["zip"]?["value"] == "10001")
    }
}

@Test func logLinesNeverShowTheRegistrationCode() {
    let url = "https://sp.auth.adobe.com/api/v2/espn/profiles/code/ABC1234"
    #expect(PassOperation.profileForCode.loggable(url) == "https://sp.auth.adobe.com/api/v2/espn/profiles/code/(code)")
    #expect(
        PassOperation.sessionStatus.loggable("https://x/api/v2/espn/sessions/ABC1234").hasSuffix("/sessions/(code)")
    )
    #expect(PassOperation.profiles.loggable("https://x/api/v2/espn/profiles") == "https://x/api/v2/espn/profiles")
}
