import PreflightProtocol
import Testing

@testable import PassEntitlement
@testable import PreflightAgent

/// Adobe Pass's typed answers become PROTOCOL.md's JSON here, at the protocol edge, byte for byte.
struct PassRepliesTests {
    @Test func decisionsAreResourcesInRequestOrderWithAdobesItemErrors() {
        let error = AdobeStatus(
            passingThrough: [
                "action": "none", "code": "preauthorization_denied_by_mvpd", "status": 403, "extra": 1,
                "message": "The MVPD said no.",
            ]
        )
        let answer = PreauthorizeAnswer.decisions([
            ResourceDecision(resource: "r1", authorized: true, error: nil),
            ResourceDecision(resource: "r2", authorized: false, error: error),
        ])
        #expect(
            String(decoding: answer.encoded, as: UTF8.self)
                == #"{"outcome":"response","resources":[{"id":"r1","authorized":true},{"id":"r2","authorized":false,"#
                + #""error":{"status":403,"code":"preauthorization_denied_by_mvpd","message":"The MVPD said no.","#
                + #""action":"none"}}]}"#
        )
    }

    @Test func aTopLevelAdobeErrorIsAResponseWithItsStatusAndNoResources() {
        let status = AdobeStatus(
            passingThrough: ["status": 500, "code": "bad_request", "trace": "t-1"],
            httpStatus: 400
        )
        #expect(
            String(decoding: PreauthorizeAnswer.adobeError(status).encoded, as: UTF8.self)
                == #"{"outcome":"response","resources":[],"status":{"status":400,"code":"bad_request","trace":"t-1"}}"#
        )
    }

    @Test func anAgentSideFailureHasStatusZeroAndItsAction() {
        let answer = PreauthorizeAnswer.failure(.requestorNotOnThisBox("hbo"))
        #expect(
            String(decoding: answer.encoded, as: UTF8.self)
                == #"{"outcome":"failure","resources":[],"status":{"status":0,"code":"requestor_not_configured","#
                + #""message":"The requestor \"hbo\" is not configured on this box (pass.requestors).","#
                + #""action":"retry"}}"#
        )
    }

    @Test func aClearedStateNamesTheRequestorOrNull() {
        let one = ClearedPassState(requestor: "espn", profiles: 1, decisions: 2, registration: false)
        #expect(
            JSONWriter.string(one.json) == #"{"requestor":"espn","profiles":1,"decisions":2,"registration":false}"#
        )
        let all = ClearedPassState(requestor: nil, profiles: 0, decisions: 0, registration: true)
        #expect(JSONWriter.string(all.json) == #"{"requestor":null,"profiles":0,"decisions":0,"registration":true}"#)
    }

    /// `auth.list` of a snapshot with every optional member set, and of an empty one: the bytes the agent
    /// wrote when the snapshot encoded itself in PassEntitlement.
    @Test func aSnapshotIsAuthListByteForByte() {
        var counters = AnswerCounters()
        counters.outcomes = ["response": 5, "failure": 2]
        counters.codes = ["user_not_authenticated": 1, "network_error": 2, "preauthorization_denied_by_mvpd": 1]
        counters.permitted = 3
        counters.denied = 1
        counters.fromCache = 2
        let espn = PassSnapshot.Requestor(
            name: "espn",
            configurationState: .configured,
            configuredAtMs: 1_700_000_000_123,
            mvpds: ["Comcast_SSO", "Cablevision"],
            sessionState: "authenticated",
            sessionMvpd: "Comcast_SSO",
            sessionNotAfterMs: 1_700_086_400_000,
            decisions: [
                .init(mvpd: "Comcast_SSO", resource: "espn-live", ageMs: 1234),
                .init(mvpd: "Comcast_SSO", resource: "<rss><channel><title>x \"y\"</title></channel></rss>", ageMs: 0),
            ],
            permits: 2,
            counters: counters
        )
        let nbc = PassSnapshot.Requestor(
            name: "nbc",
            configurationState: .failed,
            mvpds: [],
            configurationAttempts: 3,
            configurationError: "configuration answered HTTP 500",
            sessionState: "expired",
            sessionMvpd: "Cablevision",
            decisions: [],
            signInNotAfterMs: 1_700_001_800_000,
            selectedProvider: "Cablevision",
            counters: AnswerCounters()
        )
        let fox = PassSnapshot.Requestor(
            name: "fox",
            configurationState: .pending,
            mvpds: [],
            configurationAttempts: 0,
            sessionState: "unknown",
            decisions: [],
            counters: AnswerCounters()
        )
        let full = PassSnapshot(
            serverURL: "https://api.auth.adobe.com",
            upstream: UpstreamHealth(
                calls: 12,
                errors: 2,
                lastSuccessAtMs: 1_700_000_100_000,
                lastErrorAtMs: 1_700_000_050_000,
                lastErrorCode: "network_error",
                lastErrorStatus: 503,
                lastErrorOperation: "preauthorize"
            ),
            registration: .registered,
            registeredAtMs: 1_699_999_000_000,
            token: .valid,
            tokenExpiresAtMs: 1_700_003_600_000,
            tokenExpiresInMs: 3_500_000,
            burstRemaining: 4,
            blockedForMs: 750,
            requestors: [espn, nbc, fox],
            unknownRequestorAnswers: 7
        )
        #expect(
            JSONWriter.string(full.json)
                == #"{"serverURL":"https://api.auth.adobe.com","upstream":{"calls":12,"errors":2,"#
                + #""lastSuccessAtMs":1700000100000,"lastErrorAtMs":1700000050000,"lastErrorCode":"network_error","#
                + #""lastErrorStatus":503,"lastErrorOperation":"preauthorize"},"#
                + #""registration":{"state":"registered","registeredAt":1699999000000},"#
                + #""accessToken":{"state":"valid","expiresAt":1700003600000,"expiresInMs":3500000},"#
                + #""pacing":{"burstRemaining":4,"blockedForMs":750},"requestors":{"#
                + #""espn":{"configuration":{"state":"configured","configuredAt":1700000000123,"#
                + #""mvpds":["Comcast_SSO","Cablevision"]},"#
                + #""session":{"state":"authenticated","mvpd":"Comcast_SSO","notAfter":1700086400000},"#
                + #""signIn":{"state":"none"},"selectedProvider":null,"permits":2,"#
                + #""decisions":[{"mvpd":"Comcast_SSO","resource":"espn-live","ageMs":1234},"#
                + #"{"mvpd":"Comcast_SSO","resource":"<rss><channel><title>x \"y\"</title></channel></rss>","ageMs":0}],"#
                + #""counters":{"outcomes":{"failure":2,"response":5},"#
                + #""codes":{"network_error":2,"preauthorization_denied_by_mvpd":1,"user_not_authenticated":1},"#
                + #""permitted":3,"denied":1,"fromCache":2}},"#
                + #""nbc":{"configuration":{"state":"failed","attempts":3,"lastError":"configuration answered HTTP 500"},"#
                + #""session":{"state":"expired","mvpd":"Cablevision"},"#
                + #""signIn":{"state":"pending","mvpd":null,"notAfter":1700001800000},"selectedProvider":"Cablevision","#
                + #""permits":0,"decisions":[],"#
                + #""counters":{"outcomes":{},"codes":{},"permitted":0,"denied":0,"fromCache":0}},"#
                + #""fox":{"configuration":{"state":"pending","attempts":0},"session":{"state":"unknown"},"#
                + #""signIn":{"state":"none"},"selectedProvider":null,"permits":0,"decisions":[],"#
                + #""counters":{"outcomes":{},"codes":{},"permitted":0,"denied":0,"fromCache":0}}},"#
                + #""unknownRequestorAnswers":7}"#
        )
        let empty = PassSnapshot(
            serverURL: "https://pass.test",
            upstream: UpstreamHealth(),
            registration: .notLoaded,
            token: .none,
            burstRemaining: 10,
            requestors: [],
            unknownRequestorAnswers: 0
        )
        #expect(
            JSONWriter.string(empty.json)
                == #"{"serverURL":"https://pass.test","upstream":{"calls":0,"errors":0,"lastSuccessAtMs":null,"#
                + #""lastErrorAtMs":null,"lastErrorCode":null,"lastErrorStatus":null,"lastErrorOperation":null},"#
                + #""registration":{"state":"not-loaded"},"accessToken":{"state":"none"},"pacing":{"burstRemaining":10},"#
                + #""requestors":{},"unknownRequestorAnswers":0}"#
        )
    }
}
