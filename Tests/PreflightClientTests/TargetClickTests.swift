import PreflightProtocol
import Synchronization
import Testing

@testable import PreflightClient

/// AEP Target's newer calls against a fake agent: clicks, displays, loads with data, a deferred display or a
/// timeout of their own, and the Experience Cloud and customer ids. The exact bytes each puts on the wire, and
/// what it makes of the answer.
@Suite struct TargetClickTests {
    /// Makes one async call, checks the whole body the agent received (its id is "1"), answers `reply`, returns
    /// what the call returned.
    private func exchange<Answer: Sendable>(
        _ expectedBody: String,
        reply: Result<JSONValue, ProtocolError>,
        configuration: PreflightClient.Configuration = .patient,
        _ call: @escaping @Sendable (PreflightClient) async -> Answer
    ) async throws -> Answer {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, configuration: configuration)
        let task = Task { await call(client) }
        let received = try await agent.receive()
        #expect(String(decoding: received.body, as: UTF8.self) == expectedBody)
        switch reply {
        case .success(let result): try agent.reply(to: received, result: result)
        case .failure(let error): try agent.reply(to: received, error: error)
        }
        return await task.value
    }

    @Test func aClickSendsTheNameAndItsParametersAndReturnsOnceQueued() async throws {
        let parameters = TargetParameters(
            parameters: ["placement": "home"],
            profileParameters: ["age": "20-32"],
            orderParameters: ["id": "o1"]
        )
        let error = try await exchange(
            #"{"v":1,"id":"1","cmd":"clickedLocation","args":{"name":"promo","mboxParameters":{"placement":"home"},"#
                + #""profileParameters":{"age":"20-32"},"orderParameters":{"id":"o1"}}}"#,
            reply: .success(["queued": true, "name": "promo"])
        ) { client -> PreflightError? in
            do throws(PreflightError) {
                try await client.clickedLocation("promo", targetParameters: parameters)
                return nil
            } catch { return error }
        }
        #expect(error == nil)
    }

    @Test func aClientsPropertyTokenGoesWithEveryTargetCommandAndALoadMayNameAnother() async throws {
        var configuration = PreflightClient.Configuration.patient
        configuration.propertyToken = "ws-a"
        _ = try await exchange(
            #"{"v":1,"id":"1","cmd":"prefetch","args":{"mboxes":[{"name":"logo"}],"propertyToken":"ws-a"}}"#,
            reply: .success(["success": true, "mboxes": [["name": "logo", "cached": true]]]),
            configuration: configuration
        ) { await $0.targetPrefetchContent([TargetPrefetchObject(name: "logo")]) }
        _ = try await exchange(
            #"{"v":1,"id":"1","cmd":"displayedLocations","args":{"names":["logo"],"propertyToken":"ws-a"}}"#,
            reply: .success(["notified": ["logo"], "skipped": []]),
            configuration: configuration
        ) { try? await $0.displayedLocations(["logo"]) }
        let contents = try await exchange(
            #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"logo","defaultContent":"d"}],"#
                + #""propertyToken":"ws-b"}}"#,
            reply: .success(["contents": [["name": "logo", "content": "B", "source": "cache"]]]),
            configuration: configuration
        ) {
            await $0.targetLoadRequests(
                [TargetRequestObject(name: "logo", defaultContent: "d")],
                profileParameters: nil,
                options: TargetLoadOptions(propertyToken: "ws-b")
            )
        }
        #expect(contents.map(\.content) == ["B"])
    }

    @Test func aClickWithoutAClickMetricThrowsTheAgentsInvalidArgumentOnName() async throws {
        let refused = try await exchange(
            #"{"v":1,"id":"1","cmd":"clickedLocation","args":{"name":"logo"}}"#,
            reply: .failure(.invalidArgument("name", "logo has no click metric"))
        ) { client -> PreflightError? in
            do throws(PreflightError) {
                try await client.clickedLocation("logo")
                return nil
            } catch { return error }
        }
        #expect(refused?.code == .invalidArgument && refused?.field == "name")
    }

    @Test func displayedLocationsSendsTheNamesAndReturnsThoseNotified() async throws {
        let notified = try await exchange(
            #"{"v":1,"id":"1","cmd":"displayedLocations","args":{"names":["logo","hero"],"#
                + #""mboxParameters":{"placement":"home"}}}"#,
            reply: .success(["notified": ["logo"], "skipped": ["hero"]])
        ) {
            try? await $0.displayedLocations(
                ["logo", "hero"],
                targetParameters: .init(parameters: ["placement": "home"])
            )
        }
        #expect(notified == ["logo"])
    }

    @Test func aLoadWithOptionsSendsThemAndHandsTheDataToContentWithDataCallback() async throws {
        let got = Mutex<[String: TargetContentData?]>([:])
        let requests = [
            TargetRequestObject(name: "promo", defaultContent: "d") { content, data in
                got.withLock { $0[content ?? "nil"] = data }
            },
            TargetRequestObject(name: "nothing", defaultContent: "fallback") { content, data in
                got.withLock { $0[content ?? "nil"] = data }
            },
        ]
        // A contentWithDataCallback asks for the data even though the options do not.
        let contents = try await exchange(
            #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"promo","defaultContent":"d"},"#
                + #"{"name":"nothing","defaultContent":"fallback"}],"notifyDisplay":false,"withData":true,"#
                + #""timeout":0.5}}"#,
            reply: .success([
                "contents": [
                    [
                        "name": "promo", "content": "<p>50% off</p>", "source": "cache",
                        "data": [
                            "responseTokens": ["activity.id": "432190", "profile.ids": ["a", "b"]],
                            "clickMetricAnalyticsPayload": ["pe": "tnt", "tnta": "432190:0:0|32767"],
                        ],
                    ],
                    ["name": "nothing", "content": "fallback", "source": "default", "data": [:]],
                ]
            ])
        ) {
            await $0.targetLoadRequests(
                requests,
                profileParameters: nil,
                options: TargetLoadOptions(notifyDisplay: false, timeout: .milliseconds(500))
            )
        }
        let promo = TargetContentData(
            responseTokens: ["activity.id": "432190", "profile.ids": #"["a","b"]"#],
            clickMetricAnalyticsPayload: ["pe": "tnt", "tnta": "432190:0:0|32767"]
        )
        #expect(contents.map(\.data) == [promo, TargetContentData()])
        #expect(got.withLock { $0 } == ["<p>50% off</p>": promo, "fallback": TargetContentData()])
    }

    @Test func aPlainLoadSendsNoOptionsAndHasNoData() async throws {
        let contents = try await exchange(
            #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"logo","defaultContent":"d"}]}}"#,
            reply: .success(["contents": [["name": "logo", "content": "c", "source": "cache"]]])
        ) { await $0.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")]) }
        #expect(contents.map(\.data) == [nil])
    }

    @Test func aPrefetchWithATimeoutSendsItInSeconds() async throws {
        let success = try await exchange(
            #"{"v":1,"id":"1","cmd":"prefetch","args":{"mboxes":[{"name":"logo"}],"timeout":30}}"#,
            reply: .success(["success": true, "mboxes": [["name": "logo", "cached": true]]])
        ) {
            await $0.targetPrefetchContent(
                [TargetPrefetchObject(name: "logo")],
                profileParameters: nil,
                timeout: .seconds(30)
            )
        }
        #expect(success)
    }

    @Test func anUnreachableAgentGivesEveryRequestItsDefaultAndEmptyData() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(
            endpoint: "ipc://\(folder.file("app.sock"))",
            configuration: .init(requestTimeout: .milliseconds(200), retries: 0)
        )
        let got = Mutex<TargetContentData?>(nil)
        let contents = await client.targetLoadRequests(
            [TargetRequestObject(name: "promo", defaultContent: "d") { _, data in got.withLock { $0 = data } }],
            profileParameters: nil,
            options: TargetLoadOptions()
        )
        #expect(contents.map(\.source) == [.default] && contents.map(\.data) == [TargetContentData()])
        #expect(got.withLock { $0 } == TargetContentData())
        #expect(contents.first?.failure?.isUnreachable == true)
    }

    @Test func theExperienceCloudAndCustomerIdsGoAsDocumented() async throws {
        let mcid = try await exchange(
            #"{"v":1,"id":"1","cmd":"setMarketingCloudVisitorId","args":{"marketingCloudVisitorId":"mcid-1"}}"#,
            reply: .success(["marketingCloudVisitorId": "mcid-1", "customerIds": []])
        ) { try? await $0.setMarketingCloudVisitorId("mcid-1") }
        #expect(mcid == "mcid-1")

        _ = try await exchange(
            #"{"v":1,"id":"1","cmd":"setMarketingCloudVisitorId","args":{"marketingCloudVisitorId":null}}"#,
            reply: .success(["marketingCloudVisitorId": .null, "customerIds": []])
        ) { try? await $0.setMarketingCloudVisitorId("") }

        let crm = TargetCustomerId(id: "c-1", integrationCode: "crm", authenticatedState: .loggedOut)
        let set = try await exchange(
            #"{"v":1,"id":"1","cmd":"setCustomerIds","args":{"customerIds":[{"id":"c-1","integrationCode":"crm","#
                + #""authenticatedState":"logged_out"}]}}"#,
            reply: .success([
                "customerIds": [["id": "c-1", "integrationCode": "crm", "authenticatedState": "logged_out"]]
            ])
        ) { try? await $0.setCustomerIds([crm]) }
        #expect(set == [crm])

        let ids = try await exchange(
            #"{"v":1,"id":"1","cmd":"getVisitorIds"}"#,
            reply: .success([
                "tntId": "t.35_0", "thirdPartyId": .null, "sessionId": "s", "marketingCloudVisitorId": "mcid-1",
                "customerIds": [["id": "c-1", "integrationCode": "crm", "authenticatedState": "logged_out"]],
            ])
        ) { try? await $0.getVisitorIds() }
        #expect(
            ids
                == TargetVisitorIds(
                    tntId: "t.35_0",
                    sessionId: "s",
                    marketingCloudVisitorId: "mcid-1",
                    customerIds: [crm]
                )
        )
    }

    @Test func customerIdsWithoutAnExperienceCloudIdAreRefused() async throws {
        let refused = try await exchange(
            #"{"v":1,"id":"1","cmd":"setCustomerIds","args":{"customerIds":[]}}"#,
            reply: .failure(.invalidArgument("customerIds", "customer ids need a marketingCloudVisitorId"))
        ) { client -> PreflightError? in
            do throws(PreflightError) {
                _ = try await client.setCustomerIds([])
                return nil
            } catch { return error }
        }
        #expect(refused?.field == "customerIds")
    }
}
