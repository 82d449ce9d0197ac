import PreflightProtocol
import Testing

@testable import PreflightClient

/// The JSON each typed call puts on the wire, byte for byte, and how each result is read.
@Suite struct TargetWireTests {
    private func text(_ object: JSONObject) -> String {
        JSONWriter.string(.object(object))
    }

    @Test func seedPrefetchEncodesEveryParameterInNameOrder() {
        var logo = TargetPrefetchObject(name: "logo", mboxParameters: ["status": "platinum"])
        logo.productParameters = ["id": "24D3412", "categoryId": "Books"]
        logo.orderParameters = ["id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"]
        var buttonColor = TargetPrefetchObject(name: "buttonColor", mboxParameters: ["userType": "Paid"])
        buttonColor.productParameters = ["id": "764334", "categoryId": "Online"]
        buttonColor.orderParameters = ["id": "4t4uxksa", "total": "54.90", "purchasedProductIds": "id1, id2"]

        let args = TargetWire.prefetchArguments([logo, buttonColor], profileParameters: ["age": "20-32"])

        #expect(
            text(args)
                == #"{"mboxes":[{"name":"logo","mboxParameters":{"status":"platinum"},"#
                + #""productParameters":{"categoryId":"Books","id":"24D3412"},"#
                + #""orderParameters":{"id":"ADCKKIM","purchasedProductIds":"34, 125, 99","total":"344.30"}},"#
                + #"{"name":"buttonColor","mboxParameters":{"userType":"Paid"},"#
                + #""productParameters":{"categoryId":"Online","id":"764334"},"#
                + #""orderParameters":{"id":"4t4uxksa","purchasedProductIds":"id1, id2","total":"54.90"}}],"#
                + #""profileParameters":{"age":"20-32"}}"#
        )
    }

    @Test func prefetchArgumentsTheAgentReadsBackUnchanged() throws {
        var logo = TargetPrefetchObject(name: "logo", mboxParameters: ["b": "2", "a": "1"])
        logo.orderParameters = ["total": "344.30", "purchasedProductIds": "34, 125"]
        let args = TargetWire.prefetchArguments([logo], profileParameters: nil)

        let command = try PrefetchCommand.decode(ArgumentReader(args), maxMboxes: 50)

        #expect(command.mboxes[0].targeting.mboxParameters == [Parameter("a", "1"), Parameter("b", "2")])
        #expect(
            command.mboxes[0].targeting.order == OrderParameters(total: 344.30, purchasedProductIds: ["34", "125"])
        )
        #expect(command.profileParameters.isEmpty)
    }

    @Test func emptyOrMissingParametersAreLeftOut() {
        let bare = TargetPrefetchObject(name: "hero")
        var empty = TargetPrefetchObject(name: "hero", mboxParameters: [:])
        empty.productParameters = [:]
        #expect(text(TargetWire.prefetchArguments([bare], profileParameters: [:])) == #"{"mboxes":[{"name":"hero"}]}"#)
        #expect(text(TargetWire.prefetchArguments([empty], profileParameters: nil)) == #"{"mboxes":[{"name":"hero"}]}"#)
    }

    @Test func seedLoadEncodesNameDefaultContentAndParameters() throws {
        let requests = [
            TargetRequestObject(name: "logo", defaultContent: "BlueWhale", mboxParameters: ["status": "platinum"]),
            TargetRequestObject(name: "buttonColor", defaultContent: "red"),
        ]
        let args = TargetWire.loadArguments(requests, profileParameters: ["age": "20-32"])

        #expect(
            text(args)
                == #"{"requests":[{"name":"logo","defaultContent":"BlueWhale","mboxParameters":{"status":"platinum"}},"#
                + #"{"name":"buttonColor","defaultContent":"red"}],"profileParameters":{"age":"20-32"}}"#
        )
        let command = try LoadRequestsCommand.decode(ArgumentReader(args), maxMboxes: 50)
        #expect(command.requests.map(\.defaultContent) == ["BlueWhale", "red"])
    }

    @Test func contentsAreReadInRequestOrder() throws {
        let requests = [
            TargetRequestObject(name: "logo", defaultContent: "BlueWhale"),
            TargetRequestObject(name: "buttonColor", defaultContent: "red"),
        ]
        let result = try JSONReader.read(
            #"{"contents":[{"name":"logo","content":"<img>","source":"cache"},"#
                + #"{"name":"buttonColor","content":"red","source":"default","future":1}]}"#
        )

        let contents = try TargetWire.contents(from: result, for: requests)

        #expect(
            contents == [
                TargetContent(name: "logo", content: "<img>", source: .cache),
                TargetContent(name: "buttonColor", content: "red", source: .default),
            ]
        )
    }

    @Test func aResultThatDoesNotMatchTheRequestsIsABadReply() throws {
        let requests = [TargetRequestObject(name: "logo", defaultContent: "d")]
        for body in [#"{"contents":[]}"#, #"{}"#, #"{"contents":[{"name":"logo","source":"cache"}]}"#] {
            #expect(throws: PreflightError.self) {
                try TargetWire.contents(from: try JSONReader.read(body), for: requests)
            }
        }
    }

    @Test func defaultsCarryTheFailure() {
        let failure = PreflightError(code: .agentUnreachable, message: "no socket file")
        let contents = TargetWire.defaults(
            for: [
                TargetRequestObject(name: "a", defaultContent: "x"), TargetRequestObject(name: "b", defaultContent: ""),
            ],
            failure: failure
        )
        #expect(contents.map(\.content) == ["x", ""])
        #expect(contents.allSatisfy { $0.source == .default && $0.failure == failure })
    }

    @Test func prefetchSuccessFalseIsAFailure() throws {
        #expect(TargetWire.prefetchFailure(try JSONReader.read(#"{"success":true,"mboxes":[]}"#)) == nil)
        #expect(
            TargetWire.prefetchFailure(try JSONReader.read(#"{"success":false,"mboxes":[]}"#))?.code == .prefetchFailed
        )
        #expect(TargetWire.prefetchFailure(try JSONReader.read(#"{}"#))?.code == .badReply)
    }
}

@Suite struct PassWireTests {
    @Test func builderChainsLikeTheAccessEnablers() {
        let request = PreauthorizeRequest.Builder()
            .setResources(["resource1", "resource2", "resource3"])
            .disableFeatures([.localCache])
            .disableFeatures(.remoteCache)
            .build()
        #expect(request.resources == ["resource1", "resource2", "resource3"])
        #expect(request.disabledFeatures == [.localCache, .remoteCache])
        #expect(PreauthorizeRequest.Builder().build().disabledFeatures.isEmpty)
    }

    @Test func seedSampleEncodesRequestorResourcesAndFeatures() {
        let request = PreauthorizeRequest.Builder()
            .setResources(["resource1", "resource2", "resource3"])
            .disableFeatures(.localCache)
            .build()
        let args = PassWire.preauthorizeArguments(request, requestor: "acme-requestor")
        #expect(
            JSONWriter.string(.object(args))
                == #"{"requestor":"acme-requestor","resources":["resource1","resource2","resource3"],"#
                + #""disabledFeatures":["LOCAL_CACHE"]}"#
        )
        let bare = PassWire.preauthorizeArguments(
            PreauthorizeRequest.Builder().setResources(["r"]).build(),
            requestor: "x"
        )
        #expect(JSONWriter.string(.object(bare)) == #"{"requestor":"x","resources":["r"]}"#)
    }

    @Test func decisionsWithTheEnhancedErrorAreRead() throws {
        let result = try JSONReader.read(
            #"{"outcome":"response","resources":[{"id":"r1","authorized":true},"#
                + #"{"id":"r2","authorized":false,"error":{"status":403,"code":"preauthorization_denied_by_mvpd","#
                + #""message":"m","details":"d","helpUrl":"h","trace":"t","action":"none","extra":true}}]}"#
        )

        let response = try PassWire.response(from: result)

        #expect(response.getStatus() == nil)
        #expect(response.getDecisions().map { $0.getId() } == ["r1", "r2"])
        #expect(response.getDecisions().map { $0.isAuthorized() } == [true, false])
        #expect(response.getDecisions()[0].getError() == nil)
        let error = try #require(response.getDecisions()[1].getError())
        #expect(error.getStatus() == 403)
        #expect(error.getCode() == "preauthorization_denied_by_mvpd")
        #expect(error.getMessage() == "m")
        #expect(error.getDetails() == "d")
        #expect(error.getHelpUrl() == "h")
        #expect(error.getTrace() == "t")
        #expect(error.getAction() == "none")
    }

    @Test func aTopLevelAdobeErrorIsAResponseWithAStatus() throws {
        let result = try JSONReader.read(
            #"{"outcome":"response","resources":[],"status":{"status":400,"code":"bad_request","message":"m","action":"none"}}"#
        )
        let response = try PassWire.response(from: result)
        #expect(response.getDecisions().isEmpty)
        #expect(response.getStatus()?.getStatus() == 400)
        #expect(response.getStatus()?.getCode() == "bad_request")
    }

    @Test func outcomeFailureIsThrownWithItsStatus() throws {
        let result = try JSONReader.read(
            #"{"outcome":"failure","resources":[],"status":{"status":0,"code":"authentication_session_missing","#
                + #""message":"log in","action":"authentication"}}"#
        )
        let failure = #expect(throws: PreauthorizeFailure.self) { try PassWire.response(from: result) }
        #expect(failure?.status.getCode() == "authentication_session_missing")
        #expect(failure?.status.getAction() == "authentication")
        #expect(failure?.response.getDecisions().isEmpty == true)
    }

    @Test func anUnreadableResultIsAFailureNotACrash() throws {
        for body in [
            #"{}"#, #"{"outcome":"response","resources":[{"id":"r"}]}"#, #"{"outcome":"failure","resources":[]}"#,
        ] {
            let failure = #expect(throws: PreauthorizeFailure.self) {
                try PassWire.response(from: try JSONReader.read(body))
            }
            #expect(failure?.status.getCode() == "server_response_format_unknown")
        }
    }

    @Test func anUnreachableAgentIsANetworkError() {
        for code in [PreflightError.Code.agentUnreachable, .timedOut, .shuttingDown, .overloaded, .closed] {
            let status = PassWire.status(for: PreflightError(code: code, message: "why"))
            #expect(status.getStatus() == 0)
            #expect(status.getCode() == "network_error")
            #expect(status.getMessage() == "why")
        }
        let refused = PassWire.status(
            for: PreflightError(code: .invalidArgument, message: "bad", field: "resources[0]", action: "none")
        )
        #expect(refused.getCode() == "invalid_argument")
    }
}
