import PreflightProtocol
import Testing
import ZeroMQ

@testable import PreflightClient

/// The replies of docs/PROTOCOL.md's entitlement flow, as the agent sent them to preflight-sim's sign-in.
enum RealReplies {
    static let notSignedIn =
        #"{"authenticated":false,"mvpd":null,"notBefore":null,"notAfter":null,"type":null,"status":{"status":0,"#
        + #""code":"authentication_session_missing","message":"The authentication session associated with this "#
        + #"request could not be retrieved. The user must re-authenticate with a supported MVPD in order to "#
        + #"continue.","action":"authentication"}}"#
    static let providers =
        #"{"selected":null,"mvpds":[{"id":"Cablevision","displayName":"Optimum","#
        + #""logoUrl":"https://example.com/mvpd/optimum.png"},{"id":"Comcast_SSO","displayName":"Xfinity","#
        + #""logoUrl":"https://example.com/mvpd/xfinity.png"}]}"#
    static let selected =
        #"{"selected":"Cablevision","mvpds":[{"id":"Cablevision","displayName":"Optimum","#
        + #""logoUrl":"https://example.com/mvpd/optimum.png"},{"id":"Comcast_SSO","displayName":"Xfinity","#
        + #""logoUrl":"https://example.com/mvpd/xfinity.png"}]}"#
    static let code =
        #"{"authenticated":false,"code":"UXD6NWP","#
        + #""url":"https://sp.auth.adobe.com/api/v2/authenticate/acme-requestor/UXD6NWP","#
        + #""notBefore":1795638661768,"notAfter":1795640461768,"mvpd":"Cablevision"}"#
    static let signedIn =
        #"{"authenticated":true,"mvpd":"Cablevision","notBefore":1795638661774,"notAfter":1795642261774,"#
        + #""type":"regular"}"#
    static let signedInAlready = #"{"authenticated":true,"mvpd":"Cablevision","notAfter":1795642261774}"#
    static let token =
        "PHNpZ25hdHVyZUluZm8+bW92aWUtMXxhY21lLXJlcXVlc3RvcnxDYWJsZXZpc2lvbnwxNzk1NjM4NjYyODMxPC9zaWduYXR1cmVJbmZvPg=="
    static let authorized =
        #"{"resource":"movie-1","authorized":true,"source":"mvpd","mvpd":"Cablevision","notAfter":1795639262831,"#
        + #""mediaToken":{"serializedToken":""# + token + #"","notBefore":1795638662831,"notAfter":1795639082831}}"#
    static let checked =
        #"{"resource":"movie-1","authorized":true,"source":"mvpd","mvpd":"Cablevision","notAfter":1795639262831,"#
        + #""fromCache":true}"#
    static let attributes =
        #"{"attributes":{"userID":"sim-0aedc8bad418da8b7d74","householdID":"hh-0aedc8bad4","zip":"10001"}}"#
    static let zip = #"{"key":"zip","value":"10001"}"#
    static let loggedOut =
        #"{"loggedOut":true,"mvpd":"Cablevision","actionName":"logout","actionType":"interactive","#
        + #""url":"https://sp.auth.adobe.com/adobe-services/logout?noflash=true&mso_id=Cablevision&"#
        + #"requestor_id=acme-requestor"}"#
    static let notCancelled = #"{"cancelled":false}"#
}

private func read(_ text: String) throws -> JSONValue {
    try JSONReader.read(text)
}

@Suite struct EntitlementWireTests {
    @Test func notSignedInCarriesTheStatusSayingSignInFirst() throws {
        let status = EntitlementWire.authenticationStatus(from: try read(RealReplies.notSignedIn))
        #expect(!status.authenticated)
        #expect(status.mvpd == nil && status.notBefore == nil && status.notAfter == nil && status.type == nil)
        #expect(status.pending == nil)
        let why = try #require(status.status)
        #expect(why.getStatus() == 0)
        #expect(why.getCode() == "authentication_session_missing")
        #expect(why.getAction() == "authentication")
        #expect(why.getMessage()?.hasPrefix("The authentication session associated") == true)
    }

    @Test func signedInHasTheProviderAndTheTimes() throws {
        let status = EntitlementWire.authenticationStatus(from: try read(RealReplies.signedIn))
        #expect(
            status
                == AuthenticationStatus(
                    authenticated: true,
                    mvpd: "Cablevision",
                    notBefore: 1_795_638_661_774,
                    notAfter: 1_795_642_261_774,
                    type: "regular"
                )
        )
    }

    @Test func aPendingSignInIsReadWithItsCode() throws {
        let reply = try read(
            #"{"authenticated":false,"mvpd":null,"notBefore":null,"notAfter":null,"type":null,"#
                + #""status":{"status":0,"code":"authentication_session_missing","message":"m","action":"authentication"},"#
                + #""pending":{"code":"UXD6NWP","url":"https://u","notBefore":1,"notAfter":2,"mvpd":null}}"#
        )
        let status = EntitlementWire.authenticationStatus(from: reply)
        #expect(status.pending == SignInCode(code: "UXD6NWP", url: "https://u", notBefore: 1, notAfter: 2, mvpd: nil))
    }

    @Test func getAuthenticationGivesTheCodeOrTheSignInOrTheFailure() throws {
        #expect(
            EntitlementWire.authenticationResult(from: try read(RealReplies.code))
                == .code(
                    SignInCode(
                        code: "UXD6NWP",
                        url: "https://sp.auth.adobe.com/api/v2/authenticate/acme-requestor/UXD6NWP",
                        notBefore: 1_795_638_661_768,
                        notAfter: 1_795_640_461_768,
                        mvpd: "Cablevision"
                    )
                )
        )
        #expect(
            EntitlementWire.authenticationResult(from: try read(RealReplies.signedInAlready))
                == .authenticated(mvpd: "Cablevision", notAfter: 1_795_642_261_774)
        )
        let refused = try read(
            #"{"authenticated":false,"status":{"status":0,"code":"requestor_not_configured","message":"m","action":"retry"}}"#
        )
        guard case .failure(let status) = EntitlementWire.authenticationResult(from: refused) else {
            Issue.record("not a failure")
            return
        }
        #expect(status.getCode() == "requestor_not_configured" && status.getAction() == "retry")
    }

    @Test func aPermitCarriesTheMediaToken() throws {
        let response = EntitlementWire.authorization(from: try read(RealReplies.authorized), resource: "movie-1")
        #expect(
            response
                == AuthorizationResponse(
                    resource: "movie-1",
                    authorized: true,
                    source: "mvpd",
                    mvpd: "Cablevision",
                    notAfter: 1_795_639_262_831,
                    mediaToken: MediaToken(
                        serializedToken: RealReplies.token,
                        notBefore: 1_795_638_662_831,
                        notAfter: 1_795_639_082_831
                    )
                )
        )
    }

    @Test func checkAuthorizationSaysWhenTheHeldPermitAnswered() throws {
        let response = EntitlementWire.authorization(from: try read(RealReplies.checked), resource: "movie-1")
        #expect(response.authorized && response.fromCache && response.mediaToken == nil)
        #expect(response.source == "mvpd" && response.mvpd == "Cablevision" && response.notAfter == 1_795_639_262_831)
    }

    @Test func aDenialCarriesAdobesErrorAndAFailureItsStatus() throws {
        let denied = EntitlementWire.authorization(
            from: try read(
                #"{"resource":"movie-1","authorized":false,"source":"mvpd","mvpd":"Cablevision","notAfter":null,"#
                    + #""error":{"status":403,"code":"authorization_denied_by_mvpd","message":"m","action":"none"}}"#
            ),
            resource: "movie-1"
        )
        #expect(!denied.authorized && denied.status == nil && denied.mediaToken == nil)
        #expect(denied.error?.getStatus() == 403 && denied.error?.getCode() == "authorization_denied_by_mvpd")

        let notSignedIn = EntitlementWire.authorization(
            from: try read(
                #"{"resource":"movie-1","authorized":false,"status":{"status":0,"#
                    + #""code":"authentication_session_missing","message":"m","action":"authentication"}}"#
            ),
            resource: "movie-1"
        )
        #expect(!notSignedIn.authorized && notSignedIn.error == nil)
        #expect(notSignedIn.status?.getCode() == "authentication_session_missing")
        #expect(notSignedIn.failedOnTheBox)
        #expect(!denied.failedOnTheBox)
    }

    @Test func metadataIsEveryAttributeOrOneValue() throws {
        let all = EntitlementWire.metadata(from: try read(RealReplies.attributes))
        #expect(
            all.attributes == [
                "userID": .string("sim-0aedc8bad418da8b7d74"), "householdID": .string("hh-0aedc8bad4"),
                "zip": .string("10001"),
            ]
        )
        #expect(all.key == nil && all.value == nil && all.status == nil)

        let zip = EntitlementWire.metadata(from: try read(RealReplies.zip))
        #expect(zip == MetadataResponse(key: "zip", value: .string("10001")))
        #expect(zip.value?.stringValue == "10001" && zip.value?.description == "10001")

        let absent = EntitlementWire.metadata(from: try read(#"{"key":"nothing","value":null}"#))
        #expect(absent == MetadataResponse(key: "nothing"))

        let notSignedIn = EntitlementWire.metadata(
            from: try read(
                #"{"attributes":null,"status":{"status":0,"code":"authentication_session_missing","message":"m","#
                    + #""action":"authentication"}}"#
            )
        )
        #expect(notSignedIn.attributes == nil && notSignedIn.status?.getCode() == "authentication_session_missing")
    }

    @Test func metadataValuesThatAreNotStringsKeepTheirShape() throws {
        let reply = try read(
            #"{"attributes":{"maxRating":{"MPAA":"R","VCHIP":"TV-MA"},"channels":["a",1,2.5,true,null]}}"#
        )
        let attributes = try #require(EntitlementWire.metadata(from: reply).attributes)
        #expect(attributes["maxRating"] == .object(["MPAA": .string("R"), "VCHIP": .string("TV-MA")]))
        #expect(attributes["channels"] == .array([.string("a"), .integer(1), .number(2.5), .bool(true), .null]))
        #expect(attributes["maxRating"]?.description == #"{"MPAA":"R","VCHIP":"TV-MA"}"#)
        #expect(attributes["maxRating"]?.stringValue == nil)
    }

    @Test func providersAreListedWithTheChoice() throws {
        let listed = EntitlementWire.providerSelection(from: try read(RealReplies.providers))
        let mvpds = [
            MVPD(id: "Cablevision", displayName: "Optimum", logoUrl: "https://example.com/mvpd/optimum.png"),
            MVPD(id: "Comcast_SSO", displayName: "Xfinity", logoUrl: "https://example.com/mvpd/xfinity.png"),
        ]
        #expect(listed == ProviderSelection(selected: nil, mvpds: mvpds))
        #expect(
            EntitlementWire.providerSelection(from: try read(RealReplies.selected))
                == ProviderSelection(selected: "Cablevision", mvpds: mvpds)
        )
        let unconfigured = EntitlementWire.providerSelection(
            from: try read(
                #"{"selected":null,"mvpds":[],"status":{"status":0,"code":"requestor_not_configured","message":"m","#
                    + #""action":"retry"}}"#
            )
        )
        #expect(unconfigured.mvpds.isEmpty && unconfigured.status?.getCode() == "requestor_not_configured")
    }

    @Test func logoutNamesTheBrowserStep() throws {
        #expect(
            EntitlementWire.logoutResult(from: try read(RealReplies.loggedOut))
                == LogoutResult(
                    loggedOut: true,
                    mvpd: "Cablevision",
                    actionName: "logout",
                    actionType: "interactive",
                    url: "https://sp.auth.adobe.com/adobe-services/logout?noflash=true&mso_id=Cablevision&"
                        + "requestor_id=acme-requestor"
                )
        )
        #expect(
            EntitlementWire.logoutResult(from: try read(#"{"loggedOut":true,"mvpd":null}"#))
                == LogoutResult(loggedOut: true)
        )
        let complete = EntitlementWire.logoutResult(
            from: try read(#"{"loggedOut":true,"mvpd":"Cablevision","actionName":"complete","actionType":"none"}"#)
        )
        #expect(complete.url == nil && complete.actionName == "complete")
    }

    @Test func unreadableResultsAreAStatusNotACrash() throws {
        let empty = try read("{}")
        let unknown = "server_response_format_unknown"
        #expect(EntitlementWire.authenticationStatus(from: empty).status?.getCode() == unknown)
        #expect(EntitlementWire.authenticationResult(from: empty) == .failure(unknownFormat("getAuthentication")))
        #expect(EntitlementWire.authorization(from: empty, resource: "r").status?.getCode() == unknown)
        #expect(EntitlementWire.logoutResult(from: empty).status?.getCode() == unknown)
        #expect(EntitlementWire.metadata(from: empty).status?.getCode() == unknown)
        #expect(EntitlementWire.providerSelection(from: empty).status?.getCode() == unknown)
        // A number where epoch milliseconds belong is read as long as it is a whole one.
        #expect(EntitlementWire.milliseconds(.number(1_795_642_261_774)) == 1_795_642_261_774)
        #expect(EntitlementWire.milliseconds(.string("1")) == nil)
        #expect(EntitlementWire.milliseconds(.number(.infinity)) == nil)
    }

    private func unknownFormat(_ what: String) -> Status {
        Status(
            status: 0,
            code: "server_response_format_unknown",
            message: "preflightd sent a \(what) result in an unknown format.",
            action: "none"
        )
    }
}

@Suite struct MediaTokenMaskingTests {
    let token = MediaToken(serializedToken: RealReplies.token, notBefore: 1, notAfter: 2)

    @Test func printingATokenShowsOnlyItsLastCharacters() {
        #expect(token.masked == "…Pg==")
        #expect(token.description == "MediaToken(…Pg==, 108 characters, notBefore: 1, notAfter: 2)")
        for shown in [
            token.description, token.debugDescription, String(describing: token), String(reflecting: token), "\(token)",
        ] {
            #expect(!shown.contains(RealReplies.token))
            #expect(!shown.contains(String(RealReplies.token.prefix(12))))
        }
    }

    @Test func valuesHoldingATokenDoNotPrintItEither() {
        let response = AuthorizationResponse(resource: "movie-1", authorized: true, mediaToken: token)
        var dumped = ""
        dump(response, to: &dumped)
        var dumpedToken = ""
        dump(token, to: &dumpedToken)
        for shown in [
            String(describing: response), String(reflecting: response), String(describing: Optional(token)), dumped,
            dumpedToken,
        ] {
            #expect(!shown.contains(RealReplies.token), "\(shown)")
            #expect(shown.contains("…Pg=="), "\(shown)")
        }
    }

    @Test func aShortTokenShowsNothingOfItself() {
        let short = MediaToken(serializedToken: "abcdefgh")
        #expect(short.masked == "…")
        #expect(!short.description.contains("efgh"))
    }
}

@Suite struct AuthenticationEventTests {
    private func event(_ topic: String, _ body: String) -> AgentEvent {
        AgentEvent(topic: topic, body: Array(body.utf8))
    }

    @Test func eachAuthTopicBecomesItsTypedEvent() {
        let requestor = "acme-requestor"
        let cases: [(AgentEvent, AuthenticationEvent)] = [
            (
                event(
                    "auth.code",
                    #"{"topic":"auth.code","uptimeMs":5,"requestor":"acme-requestor","code":"UXD6NWP","url":"https://u","#
                        + #""notAfter":1795640461768,"mvpd":null}"#
                ),
                .code(SignInCode(code: "UXD6NWP", url: "https://u", notAfter: 1_795_640_461_768))
            ),
            (
                event(
                    "auth.authenticated",
                    #"{"topic":"auth.authenticated","requestor":"acme-requestor","mvpd":"Cablevision","notAfter":7}"#
                ),
                .authenticated(mvpd: "Cablevision", notAfter: 7)
            ),
            (
                event("auth.failed", #"{"requestor":"acme-requestor","reason":"cancelled","mvpd":null}"#),
                .failed(reason: .cancelled, code: nil, message: nil)
            ),
            (
                event(
                    "auth.failed",
                    #"{"requestor":"acme-requestor","reason":"error","code":"invalid_code","message":"m"}"#
                ),
                .failed(reason: .error, code: "invalid_code", message: "m")
            ),
            (
                event("auth.logout", #"{"requestor":"acme-requestor","mvpd":"Cablevision"}"#),
                .logout(mvpd: "Cablevision")
            ),
            (
                event("auth.session", #"{"requestor":"acme-requestor","state":"expired","mvpd":"Cablevision"}"#),
                .session(state: .expired, mvpd: "Cablevision", notAfter: nil)
            ),
        ]
        for (agentEvent, expected) in cases {
            #expect(AuthenticationEvent(agentEvent, requestor: requestor) == expected)
            #expect(AuthenticationEvent(agentEvent, requestor: nil) == expected)
        }
    }

    @Test func otherRequestorsOtherTopicsAndBrokenBodiesAreNotEvents() {
        let logout = event("auth.logout", #"{"requestor":"someone-else","mvpd":null}"#)
        #expect(AuthenticationEvent(logout, requestor: "acme-requestor") == nil)
        #expect(AuthenticationEvent(logout, requestor: nil) == .logout(mvpd: nil))
        let decisions = event("auth.decisions", #"{"requestor":"acme-requestor","permitted":1,"denied":0}"#)
        #expect(AuthenticationEvent(decisions, requestor: "acme-requestor") == nil)
        #expect(AuthenticationEvent(event("auth.code", "not json"), requestor: nil) == nil)
        #expect(
            AuthenticationEvent(event("auth.authenticated", #"{"requestor":"acme-requestor"}"#), requestor: nil) == nil
        )
    }

    @Test func theStreamYieldsTheRequestorsSignInEventsFromTheEventsSocket() async throws {
        let folder = try ScratchFolder()
        let endpoint = "ipc://\(folder.file("events.sock"))"
        let context = try ZeroMQContext(ioThreads: 1)
        let publisher = try context.makeSocket(.pub)
        defer { publisher.close() }
        try publisher.setOption(.linger(milliseconds: 0))
        try publisher.bind(endpoint)
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", requestor: "acme-requestor")

        let events = try client.authenticationEvents(endpoint: endpoint)
        let received = LockedBox<[AuthenticationEvent]>([])
        let reader = Task {
            for await event in events {
                received.withLock { $0.append(event) }
                if case .authenticated = event { return }
            }
        }
        // PUB drops what it publishes before the subscription arrives: announce the code until it is seen.
        let deadline = ContinuousClock.now + .seconds(30)
        while received.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
            try publisher.send([
                Array("auth.code".utf8),
                Array(#"{"requestor":"acme-requestor","code":"C","url":"https://u","notAfter":9,"mvpd":null}"#.utf8),
            ])
            try await Task.sleep(for: .milliseconds(20))
        }
        for (topic, body) in [
            ("auth.decisions", #"{"requestor":"acme-requestor","permitted":1}"#),
            ("auth.authenticated", #"{"requestor":"someone-else","mvpd":"Comcast_SSO","notAfter":1}"#),
            ("auth.authenticated", #"{"requestor":"acme-requestor","mvpd":"Cablevision","notAfter":2}"#),
        ] {
            try publisher.send([Array(topic.utf8), Array(body.utf8)])
        }
        await reader.value

        let seen = received.withLock { $0 }
        #expect(
            !seen.isEmpty
                && seen.dropLast().allSatisfy { $0 == .code(SignInCode(code: "C", url: "https://u", notAfter: 9)) }
        )
        #expect(seen.last == .authenticated(mvpd: "Cablevision", notAfter: 2))
    }

    @Test func withoutAnAgentTheSubscriptionThrows() throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", requestor: "acme-requestor")
        #expect(throws: AgentConnectionError.self) {
            _ = try client.authenticationEvents(endpoint: "ipc://\(folder.file("events.sock"))")
        }
    }
}

/// The calls against a fake agent: the JSON each puts on the wire, and what it makes of the reply.
@Suite struct EntitlementCallTests {
    /// Sends one call, checks the body the agent received (without its id), answers `result`, returns the answer.
    private func exchange<Answer: Sendable>(
        _ expectedArgs: String,
        command: String,
        reply: JSONValue,
        _ call: @escaping @Sendable (PreflightClient) async -> Answer
    ) async throws -> Answer {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, requestor: "acme-requestor", configuration: .patient)
        let task = Task { await call(client) }
        let received = try await agent.receive()
        #expect(
            String(decoding: received.body, as: UTF8.self)
                == #"{"v":1,"id":"1","cmd":""# + command + #"","args":"# + expectedArgs + "}"
        )
        try agent.reply(to: received, result: reply)
        return await task.value
    }

    @Test func everyCallSendsTheDocumentedArguments() async throws {
        let status = try await exchange(
            #"{"mvpd":"Cablevision","fresh":true,"requestor":"acme-requestor"}"#,
            command: "checkAuthentication",
            reply: try read(RealReplies.signedIn)
        ) { await $0.checkAuthentication(mvpd: "Cablevision", fresh: true) }
        #expect(status.authenticated)

        let plain = try await exchange(
            #"{"requestor":"acme-requestor"}"#,
            command: "checkAuthentication",
            reply: try read(RealReplies.notSignedIn)
        ) { await $0.checkAuthentication() }
        #expect(!plain.authenticated)

        let code = try await exchange(
            #"{"mvpd":"Cablevision","redirectUrl":"https://r","domainName":"acme.com","requestor":"acme-requestor"}"#,
            command: "getAuthentication",
            reply: try read(RealReplies.code)
        ) { await $0.getAuthentication(mvpd: "Cablevision", redirectUrl: "https://r", domainName: "acme.com") }
        guard case .code(let signIn) = code else {
            Issue.record("no code: \(code)")
            return
        }
        #expect(signIn.code == "UXD6NWP")

        let cancelled = try await exchange(
            #"{"requestor":"acme-requestor"}"#,
            command: "cancelAuthentication",
            reply: try read(RealReplies.notCancelled)
        ) { try? await $0.cancelAuthentication() }
        #expect(cancelled == false)

        let authorized = try await exchange(
            #"{"resource":"movie-1","requestor":"acme-requestor"}"#,
            command: "getAuthorization",
            reply: try read(RealReplies.authorized)
        ) { await $0.getAuthorization(resource: "movie-1") }
        #expect(authorized.mediaToken?.serializedToken == RealReplies.token)

        let checked = try await exchange(
            #"{"resource":"movie-1","requestor":"acme-requestor"}"#,
            command: "checkAuthorization",
            reply: try read(RealReplies.checked)
        ) { await $0.checkAuthorization(resource: "movie-1") }
        #expect(checked.fromCache)

        let logout = try await exchange(
            #"{"mvpd":"Cablevision","requestor":"acme-requestor"}"#,
            command: "logout",
            reply: try read(RealReplies.loggedOut)
        ) { await $0.logout(mvpd: "Cablevision") }
        #expect(logout.loggedOut && logout.url != nil)

        let zip = try await exchange(
            #"{"key":"zip","requestor":"acme-requestor"}"#,
            command: "getMetadata",
            reply: try read(RealReplies.zip)
        ) { await $0.getMetadata(key: "zip") }
        #expect(zip.value == .string("10001"))

        let providers = try await exchange(
            #"{"requestor":"acme-requestor"}"#,
            command: "getSelectedProvider",
            reply: try read(RealReplies.providers)
        ) { await $0.getSelectedProvider() }
        #expect(providers.mvpds.map(\.id) == ["Cablevision", "Comcast_SSO"])

        let selected = try await exchange(
            #"{"mvpd":"Cablevision","requestor":"acme-requestor"}"#,
            command: "setSelectedProvider",
            reply: try read(RealReplies.selected)
        ) { try? await $0.setSelectedProvider("Cablevision") }
        #expect(selected?.selected == "Cablevision")

        let cleared = try await exchange(
            #"{"mvpd":null,"requestor":"acme-requestor"}"#,
            command: "setSelectedProvider",
            reply: try read(RealReplies.providers)
        ) { try? await $0.setSelectedProvider(nil) }
        #expect(cleared?.selected == nil)
    }

    @Test func anUnknownProviderThrowsTheAgentsInvalidArgument() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, requestor: "acme-requestor", configuration: .patient)
        let task = Task { try await client.setSelectedProvider("NoSuchTV") }
        let received = try await agent.receive()
        try agent.reply(
            to: received,
            error: ProtocolError(
                code: .invalidArgument,
                message: #""NoSuchTV" is not one of this requestor's TV providers (Cablevision, Comcast_SSO)"#,
                field: "mvpd"
            )
        )
        let error = await #expect(throws: PreflightError.self) { try await task.value }
        #expect(error?.code == .invalidArgument)
        #expect(error?.field == "mvpd")
    }

    @Test func theCallbackFormsSplitFailuresOfTheBoxFromAnswers() async throws {
        let agent = try FakeAgent()
        let client = try PreflightClient(endpoint: agent.endpoint, requestor: "acme-requestor", configuration: .patient)
        let (outcomes, sink) = AsyncStream.makeStream(of: String.self)
        client.checkAuthentication(
            didCompleteWith: AccessEnablerCallback(
                onResponse: { _ in sink.yield("check onResponse") },
                onFailure: { sink.yield("check onFailure \($0.status?.getCode() ?? "")") }
            )
        )
        let check = try await agent.receive()
        try agent.reply(to: check, result: try read(RealReplies.notSignedIn))
        var iterator = outcomes.makeAsyncIterator()
        #expect(await iterator.next() == "check onFailure authentication_session_missing")

        client.getAuthorization(
            resource: "movie-1",
            didCompleteWith: AccessEnablerCallback(
                onResponse: { sink.yield("authorize onResponse \($0.error?.getCode() ?? "")") },
                onFailure: { _ in sink.yield("authorize onFailure") }
            )
        )
        let authorize = try await agent.receive()
        try agent.reply(
            to: authorize,
            result: try read(
                #"{"resource":"movie-1","authorized":false,"error":{"status":403,"code":"authorization_denied_by_mvpd"}}"#
            )
        )
        #expect(await iterator.next() == "authorize onResponse authorization_denied_by_mvpd")
    }
}

/// No agent at all: every call answers at once, as the AccessEnabler does when Adobe cannot be reached.
@Suite struct OfflineEntitlementTests {
    let quick = PreflightClient.Configuration(requestTimeout: .seconds(10), retries: 2, retryDelay: .milliseconds(10))

    @Test func everyCallAnswersNetworkError() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(
            endpoint: "ipc://\(folder.file("app.sock"))",
            requestor: "acme-requestor",
            configuration: quick
        )
        let statuses: [Status?] = [
            await client.checkAuthentication().status,
            await client.getAuthorization(resource: "movie-1").status,
            await client.checkAuthorization(resource: "movie-1").status,
            await client.logout().status,
            await client.getMetadata().status,
            await client.getMetadata(key: "zip").status,
            await client.getSelectedProvider().status,
        ]
        for status in statuses {
            #expect(status?.getStatus() == 0)
            #expect(status?.getCode() == "network_error")
            #expect(status?.getAction() == "none")
        }
        guard case .failure(let status) = await client.getAuthentication() else {
            Issue.record("getAuthentication did not fail")
            return
        }
        #expect(status.getCode() == "network_error")
        #expect(await client.checkAuthentication().authenticated == false)
        #expect(await client.logout().loggedOut == false)
        let cancel = await #expect(throws: PreflightError.self) { try await client.cancelAuthentication() }
        #expect(cancel?.isUnreachable == true)
        let select = try await client.setSelectedProvider("Cablevision")
        #expect(select.mvpds.isEmpty && select.status?.getCode() == "network_error")

        let (outcomes, sink) = AsyncStream.makeStream(of: String.self)
        client.getAuthentication(
            didCompleteWith: AccessEnablerCallback(
                onResponse: { _ in sink.yield("onResponse") },
                onFailure: { sink.yield("onFailure \($0)") }
            )
        )
        client.cancelAuthentication(
            didCompleteWith: AccessEnablerCallback(
                onResponse: { _ in sink.yield("cancel onResponse") },
                onFailure: { sink.yield("cancel onFailure \($0)") }
            )
        )
        client.setSelectedProvider(
            "Cablevision",
            didCompleteWith: AccessEnablerCallback(
                onResponse: { _ in sink.yield("select onResponse") },
                onFailure: { sink.yield("select onFailure \($0.status?.getCode() ?? "")") }
            )
        )
        var seen: Set<String> = []
        for await outcome in outcomes {
            seen.insert(
                outcome.hasPrefix("onFailure failure(") && outcome.contains("network_error") ? "onFailure" : outcome
            )
            if seen.count == 3 { break }
        }
        #expect(seen == ["onFailure", "cancel onFailure false", "select onFailure network_error"])
    }

    @Test func withoutARequestorTheCallsSaySo() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        #expect(await client.checkAuthentication().status?.getCode() == "requestor_not_configured")
        #expect(await client.getAuthorization(resource: "r").status?.getAction() == "configuration")
        let error = await #expect(throws: PreflightError.self) { try await client.cancelAuthentication() }
        #expect(error?.code == .requestorMissing)
    }
}
