import Testing

@testable import PreflightProtocol

private func decode(
    _ command: String,
    _ args: String,
    limits: CommandLimits = CommandLimits()
) throws(ProtocolError)
    -> AppCommand?
{
    let body = #"{"v":1,"id":"t","cmd":"\#(command)","args":\#(args)}"#
    let request: Request
    switch Request.decode(Array(body.utf8)) {
    case .success(let decoded): request = decoded
    case .failure(let failure): throw failure.error
    }
    return try AppCommand.decode(request, limits: limits)
}

/// The field an `invalid_argument` names, or nil when the command was accepted.
private func rejectedField(_ command: String, _ args: String, limits: CommandLimits = CommandLimits()) -> String? {
    do {
        _ = try decode(command, args, limits: limits)
        return nil
    } catch {
        #expect(error.code == .invalidArgument)
        return error.field ?? "<no field>"
    }
}

@Suite struct PrefetchValidationTests {
    @Test func acceptsTheSeedExampleAndNormalisesOrder() throws {
        let args = #"""
            {"mboxes": [{"name": "logo", "mboxParameters": {"status": "platinum"},
                         "productParameters": {"id": "24D3412", "categoryId": "Books"},
                         "orderParameters": {"id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"}},
                        {"name": "buttonColor", "mboxParameters": {"userType": "Paid"},
                         "productParameters": {"id": "764334", "categoryId": "Online"},
                         "orderParameters": {"id": "4t4uxksa", "total": 54.90, "purchasedProductIds": ["id1", "id2"]}}],
             "profileParameters": {"age": "20-32"}}
            """#
        guard case .prefetch(let prefetch)? = try decode("prefetch", args) else {
            Issue.record("not a prefetch")
            return
        }
        #expect(prefetch.mboxes.map(\.name) == ["logo", "buttonColor"])
        #expect(prefetch.profileParameters == [Parameter("age", "20-32")])
        let logo = prefetch.mboxes[0].targeting
        #expect(logo.mboxParameters == [Parameter("status", "platinum")])
        #expect(logo.product == ProductParameters(id: "24D3412", categoryId: "Books"))
        #expect(logo.order == OrderParameters(id: "ADCKKIM", total: 344.30, purchasedProductIds: ["34", "125", "99"]))
        #expect(prefetch.mboxes[1].targeting.order?.purchasedProductIds == ["id1", "id2"])
        #expect(prefetch.mboxes[1].targeting.order?.total == 54.90)
    }

    @Test func mboxesAreRequiredNonEmptyAndBounded() {
        #expect(rejectedField("prefetch", "{}") == "mboxes")
        #expect(rejectedField("prefetch", #"{"mboxes": []}"#) == "mboxes")
        #expect(rejectedField("prefetch", #"{"mboxes": {}}"#) == "mboxes")
        #expect(rejectedField("prefetch", #"{"mboxes": ["logo"]}"#) == "mboxes[0]")
        let three = #"{"mboxes": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}"#
        #expect(rejectedField("prefetch", three, limits: CommandLimits(maxMboxes: 2)) == "mboxes")
        #expect(rejectedField("prefetch", three, limits: CommandLimits(maxMboxes: 3)) == nil)
        let fiftyOne = (0...50).map { #"{"name": "m\#($0)"}"# }.joined(separator: ",")
        #expect(rejectedField("prefetch", #"{"mboxes": [\#(fiftyOne)]}"#) == "mboxes")
    }

    @Test func nameIsOneTo250Characters() {
        #expect(rejectedField("prefetch", #"{"mboxes": [{"name": ""}]}"#) == "mboxes[0].name")
        #expect(rejectedField("prefetch", #"{"mboxes": [{}]}"#) == "mboxes[0].name")
        #expect(rejectedField("prefetch", #"{"mboxes": [{"name": 5}]}"#) == "mboxes[0].name")
        let name250 = String(repeating: "n", count: 250)
        #expect(rejectedField("prefetch", #"{"mboxes": [{"name": "\#(name250)"}]}"#) == nil)
        #expect(rejectedField("prefetch", #"{"mboxes": [{"name": "\#(name250)x"}]}"#) == "mboxes[0].name")
    }

    @Test func parametersAreStringToStringAndBounded() {
        func field(_ parameters: String, _ key: String = "mboxParameters") -> String? {
            rejectedField("prefetch", #"{"mboxes": [{"name": "a", "\#(key)": \#(parameters)}]}"#)
        }
        #expect(field(#"{"a": "b"}"#) == nil)
        #expect(field(#"{"a": 1}"#) == "mboxes[0].mboxParameters.a")
        #expect(field(#"{"a": null}"#) == "mboxes[0].mboxParameters.a")
        #expect(field(#"["a"]"#) == "mboxes[0].mboxParameters")
        #expect(field(#"{"": "b"}"#) == "mboxes[0].mboxParameters.")
        #expect(field(#"{"profile.age": "b"}"#) == "mboxes[0].mboxParameters.profile.age")
        let name128 = String(repeating: "k", count: 128)
        #expect(field(#"{"\#(name128)": "v"}"#) == nil)
        #expect(field(#"{"\#(name128)k": "v"}"#) == "mboxes[0].mboxParameters.\(name128)k")
        let value5000 = String(repeating: "v", count: 5000)
        #expect(field(#"{"a": "\#(value5000)"}"#) == nil)
        #expect(field(#"{"a": "\#(value5000)v"}"#) == "mboxes[0].mboxParameters.a")
        let fifty = (0..<50).map { #""k\#($0)": "v""# }.joined(separator: ",")
        #expect(field("{\(fifty)}") == nil)
        #expect(field(#"{\#(fifty), "k50": "v"}"#) == "mboxes[0].mboxParameters")
    }

    @Test func profileParametersFollowTheSameRules() {
        #expect(
            rejectedField("prefetch", #"{"mboxes": [{"name": "a"}], "profileParameters": {"age": 3}}"#)
                == "profileParameters.age"
        )
        #expect(
            rejectedField("prefetch", #"{"mboxes": [{"name": "a"}], "profileParameters": {"profile.x": "3"}}"#)
                == "profileParameters.profile.x"
        )
    }

    @Test(arguments: ["orderId", "orderTotal", "productPurchasedIds"])
    func reservedMboxParameterNamesAreRefused(_ name: String) {
        #expect(
            rejectedField("prefetch", #"{"mboxes": [{"name": "a", "mboxParameters": {"\#(name)": "1"}}]}"#)
                == "mboxes[0].mboxParameters.\(name)"
        )
    }

    @Test func productParametersAllowOnlyIdAndCategoryId() {
        func field(_ product: String) -> String? {
            rejectedField(
                "loadRequests",
                #"{"requests": [{"name": "a", "defaultContent": "d"}, {"name": "b", "defaultContent": "d", "productParameters": \#(product)}]}"#
            )
        }
        #expect(field(#"{"id": "1", "categoryId": "c"}"#) == nil)
        #expect(field(#"{"id": "1", "color": "red"}"#) == "requests[1].productParameters.color")
        #expect(field(#"{"id": 1}"#) == "requests[1].productParameters.id")
        #expect(
            field(#"{"categoryId": "\#(String(repeating: "c", count: 129))"}"#)
                == "requests[1].productParameters.categoryId"
        )
        #expect(field(#""id""#) == "requests[1].productParameters")
    }

    @Test func theDocumentedExampleErrorMessage() throws {
        do {
            _ = try decode(
                "loadRequests",
                #"{"requests": [{"name": "a", "defaultContent": "d"}, {"name": "b", "defaultContent": "d", "productParameters": {"id": "1", "color": "red"}}]}"#
            )
            Issue.record("expected an error")
        } catch {
            #expect(error.message == "productParameters allows only id and categoryId; got color")
        }
    }

    @Test func orderParametersAreChecked() {
        func field(_ order: String) -> String? {
            rejectedField("prefetch", #"{"mboxes": [{"name": "a", "orderParameters": \#(order)}]}"#)
        }
        #expect(field(#"{"id": "x", "total": 0, "purchasedProductIds": []}"#) == nil)
        #expect(field(#"{"total": "12"}"#) == nil)
        #expect(field(#"{"total": -1}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"total": "-0.5"}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"total": "abc"}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"total": "1e3"}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"total": "nan"}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"total": true}"#) == "mboxes[0].orderParameters.total")
        #expect(field(#"{"id": "\#(String(repeating: "o", count: 250))"}"#) == nil)
        #expect(field(#"{"id": "\#(String(repeating: "o", count: 251))"}"#) == "mboxes[0].orderParameters.id")
        #expect(field(#"{"coupon": "x"}"#) == "mboxes[0].orderParameters.coupon")
        #expect(field(#"{"purchasedProductIds": [1]}"#) == "mboxes[0].orderParameters.purchasedProductIds[0]")
        #expect(field(#"{"purchasedProductIds": 1}"#) == "mboxes[0].orderParameters.purchasedProductIds")
        let id50 = String(repeating: "p", count: 50)
        #expect(field(#"{"purchasedProductIds": ["\#(id50)"]}"#) == nil)
        #expect(
            field(#"{"purchasedProductIds": ["a", "\#(id50)p"]}"#)
                == "mboxes[0].orderParameters.purchasedProductIds[1]"
        )
        // Five ids of 50 joined by four commas is 254 characters: over the 250 bound.
        let five = Array(repeating: "\"\(id50)\"", count: 5).joined(separator: ",")
        #expect(field(#"{"purchasedProductIds": [\#(five)]}"#) == "mboxes[0].orderParameters.purchasedProductIds")
        let commaString = Array(repeating: id50, count: 5).joined(separator: ",")
        #expect(
            field(#"{"purchasedProductIds": "\#(commaString)"}"#) == "mboxes[0].orderParameters.purchasedProductIds"
        )
    }
}

@Suite struct LoadRequestsValidationTests {
    @Test func eachRequestNeedsNameAndDefaultContent() {
        #expect(rejectedField("loadRequests", #"{"requests": [{"name": "a"}]}"#) == "requests[0].defaultContent")
        #expect(rejectedField("loadRequests", #"{"requests": [{"defaultContent": ""}]}"#) == "requests[0].name")
        #expect(
            rejectedField("loadRequests", #"{"requests": [{"name": "a", "defaultContent": null}]}"#)
                == "requests[0].defaultContent"
        )
        #expect(rejectedField("loadRequests", #"{"requests": [{"name": "a", "defaultContent": ""}]}"#) == nil)
    }

    @Test func requestsAreBoundedLikeMboxes() {
        let three = (0..<3).map { #"{"name": "m\#($0)", "defaultContent": ""}"# }.joined(separator: ",")
        #expect(
            rejectedField("loadRequests", #"{"requests": [\#(three)]}"#, limits: CommandLimits(maxMboxes: 2))
                == "requests"
        )
        #expect(rejectedField("loadRequests", #"{"requests": []}"#) == "requests")
    }

    @Test func decodesTheSeedLoad() throws {
        let args =
            #"{"requests": [{"name": "logo", "defaultContent": "BlueWhale", "mboxParameters": {"status": "platinum"}}, {"name": "buttonColor", "defaultContent": "red"}], "profileParameters": {"age": "20-32"}}"#
        guard case .loadRequests(let load)? = try decode("loadRequests", args) else {
            Issue.record("not a loadRequests")
            return
        }
        #expect(load.requests.map(\.defaultContent) == ["BlueWhale", "red"])
        #expect(load.requests[0].targeting.mboxParameters == [Parameter("status", "platinum")])
    }
}

@Suite struct PreauthorizeValidationTests {
    @Test func decodesTheSeedRequest() throws {
        let args = #"{"requestor": "espn", "resources": ["r1", "r2", "r1"], "disabledFeatures": ["LOCAL_CACHE"]}"#
        #expect(
            try decode("preauthorize", args)
                == .preauthorize(
                    PreauthorizeCommand(
                        requestor: "espn",
                        resources: ["r1", "r2", "r1"],
                        disabledFeatures: [.localCache]
                    )
                )
        )
    }

    @Test func resourcesAreRequiredAndBounded() {
        #expect(rejectedField("preauthorize", #"{"requestor": "espn"}"#) == "resources")
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": []}"#) == "resources")
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": [""]}"#) == "resources[0]")
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": ["a", 1]}"#) == "resources[1]")
        let long = String(repeating: "r", count: 1024)
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": ["\#(long)"]}"#) == nil)
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": ["\#(long)r"]}"#) == "resources[0]")
    }

    @Test func requestorAndFeaturesAreChecked() {
        #expect(rejectedField("preauthorize", #"{"resources": ["a"]}"#) == "requestor")
        #expect(rejectedField("preauthorize", #"{"requestor": "", "resources": ["a"]}"#) == "requestor")
        #expect(
            rejectedField("preauthorize", #"{"requestor": "e", "resources": ["a"], "disabledFeatures": ["X"]}"#)
                == "disabledFeatures[0]"
        )
    }

    @Test func anMRSSFragmentIsAValidResource() throws {
        let mrss =
            #"<rss version=\"2.0\" xmlns:media=\"http://search.yahoo.com/mrss/\"><channel><title>espn</title></channel></rss>"#
        #expect(rejectedField("preauthorize", #"{"requestor": "espn", "resources": ["\#(mrss)"]}"#) == nil)
    }
}

@Suite struct AppCommandTests {
    @Test func commandsWithoutArgsNeedNone() throws {
        let request = try Request.decode(Array(#"{"v":1,"id":"1","cmd":"clearPrefetchCache"}"#.utf8)).get()
        #expect(try AppCommand.decode(request, limits: CommandLimits()) == .clearPrefetchCache)
    }

    @Test func nonAppCommandsAreNotDecoded() throws {
        let request = try Request.decode(Array(#"{"v":1,"id":"1","cmd":"status"}"#.utf8)).get()
        #expect(try AppCommand.decode(request, limits: CommandLimits()) == nil)
    }
}
