import PreflightProtocol
import Testing

@testable import PassAuthorization
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
            JSONWriter.string(answer.json)
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
            JSONWriter.string(PreauthorizeAnswer.adobeError(status).json)
                == #"{"outcome":"response","resources":[],"status":{"status":400,"code":"bad_request","trace":"t-1"}}"#
        )
    }

    @Test func anAgentSideFailureHasStatusZeroAndItsAction() {
        let answer = PreauthorizeAnswer.failure(.requestorNotOnThisBox("hbo"))
        #expect(
            JSONWriter.string(answer.json)
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
}
