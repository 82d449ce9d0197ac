import Foundation
import PreflightClient
import Synchronization
import Testing

/// Every name issue #9 promises and docs/APPS.md's table shows, with the exact shape a ported app calls it by.
///
/// This target imports PreflightClient without `@testable`, as an app does, so a name that is not public fails
/// here. Each reference is given its full function type: a changed label, parameter or result type is a compile
/// error, not a passing test.
@Suite struct PortingGuideTests {
    @Test func everySDKShapedNameHasTheSignatureTheGuideShows() throws {
        // PreflightClient(endpoint:) and PreflightClient(): the app endpoint of /etc/preflight/preflight.json.
        let make: (String, String?, PreflightClient.Configuration) throws -> PreflightClient =
            PreflightClient.init(endpoint:requestor:configuration:)
        let endpointOnly = try PreflightClient(endpoint: "ipc:///tmp/pf-guide-nowhere/app.sock")
        #expect(endpointOnly.endpoint == "ipc:///tmp/pf-guide-nowhere/app.sock")
        let byDefault = try PreflightClient()
        #expect(byDefault.endpoint == PreflightClient.configuredAppEndpoint())
        #expect(PreflightClient.defaultConfigurationFile == "/etc/preflight/preflight.json")
        let client = try make("ipc:///tmp/pf-guide-nowhere/app.sock", "acme-requestor", .init())
        let setRequestor: (String) -> Void = client.setRequestor(_:)
        setRequestor("acme-requestor")

        // Target: TargetPrefetchObject(name:mboxParameters:) with productParameters and orderParameters.
        let prefetchObject: (String, [String: String]?) -> TargetPrefetchObject =
            TargetPrefetchObject.init(name:mboxParameters:)
        var prefetch = prefetchObject("logo", ["status": "platinum"])
        prefetch.productParameters = ["id": "24D3412", "categoryId": "Books"]
        prefetch.orderParameters = ["id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"]
        #expect(prefetch.name == "logo" && prefetch.mboxParameters == ["status": "platinum"])

        // TargetRequestObject(name:defaultContent:mboxParameters:callback:), with productParameters and orderParameters.
        let requestObject: (String, String, [String: String]?, (@Sendable (String?) -> Void)?) -> TargetRequestObject =
            TargetRequestObject.init(name:defaultContent:mboxParameters:callback:)
        var request = requestObject("logo", "BlueWhale", ["status": "platinum"], nil)
        request.productParameters = ["id": "24D3412"]
        request.orderParameters = ["id": "ADCKKIM"]
        #expect(request.defaultContent == "BlueWhale")

        // targetPrefetchContent(_:profileParameters:callback:) and its async form returning Bool.
        let prefetchWithCallback: ([TargetPrefetchObject], [String: String]?, (@Sendable (Bool) -> Void)?) -> Void =
            client.targetPrefetchContent(_:profileParameters:callback:)
        let prefetchAsync: ([TargetPrefetchObject], [String: String]?) async -> Bool =
            client.targetPrefetchContent(_:profileParameters:)
        // targetLoadRequests(_:profileParameters:) calling each callback, and its async form returning the contents.
        let loadWithCallbacks: ([TargetRequestObject], [String: String]?) -> Void =
            client.targetLoadRequests(_:profileParameters:)
        let loadAsync: ([TargetRequestObject], [String: String]?) async -> [TargetContent] =
            client.targetLoadRequests(_:profileParameters:)
        // targetPrefetchClearCache(), and its async form returning how many entries went.
        let clear: () -> Void = client.targetPrefetchClearCache
        let clearAsync: () async throws -> Int = client.targetPrefetchClearCache

        // AEP Target's visitor ids: each getter's callback form (the id, or nil and the error) and async form (the
        // id or nil), each setter's fire-and-forget form and async form (the id now in effect), resetExperience.
        typealias IdCallback = @Sendable (String?, (any Error)?) -> Void
        let getThirdPartyId: (@escaping IdCallback) -> Void = client.getThirdPartyId(_:)
        let getThirdPartyIdAsync: () async -> String? = client.getThirdPartyId
        let setThirdPartyId: (String?) -> Void = client.setThirdPartyId(_:)
        let setThirdPartyIdAsync: (String?) async throws -> String? = client.setThirdPartyId(_:)
        let getTntId: (@escaping IdCallback) -> Void = client.getTntId(_:)
        let getTntIdAsync: () async -> String? = client.getTntId
        let setTntId: (String?) -> Void = client.setTntId(_:)
        let setTntIdAsync: (String?) async throws -> String? = client.setTntId(_:)
        let getSessionId: (@escaping IdCallback) -> Void = client.getSessionId(_:)
        let getSessionIdAsync: () async -> String? = client.getSessionId
        let setSessionId: (String) -> Void = client.setSessionId(_:)
        let setSessionIdAsync: (String) async throws -> String = client.setSessionId(_:)
        let resetExperience: () -> Void = client.resetExperience
        let resetExperienceAsync: () async throws -> Int = client.resetExperience

        // AEP Target's newer calls: clickedLocation(_:targetParameters:), displayedLocations(_:targetParameters:),
        // each fire-and-forget and async; TargetParameters(parameters:profileParameters:productParameters:orderParameters:).
        let targetParameters:
            ([String: String]?, [String: String]?, [String: String]?, [String: String]?) ->
                TargetParameters = TargetParameters.init(
                    parameters:
                    profileParameters:
                    productParameters:
                    orderParameters:
                )
        #expect(targetParameters(["placement": "home"], nil, nil, nil).parameters == ["placement": "home"])
        let clickedLocation: (String, TargetParameters?) -> Void = client.clickedLocation(_:targetParameters:)
        let clickedLocationAsync: (String, TargetParameters?) async throws -> Void =
            client.clickedLocation(_:targetParameters:)
        let displayedLocations: ([String], TargetParameters?) -> Void = client.displayedLocations(_:targetParameters:)
        let displayedLocationsAsync: ([String], TargetParameters?) async throws -> [String] =
            client.displayedLocations(_:targetParameters:)
        // TargetRequestObject(name:defaultContent:mboxParameters:contentWithDataCallback:) and TargetContentData.
        let requestWithData:
            (String, String, [String: String]?, @escaping @Sendable (String?, TargetContentData?) -> Void) ->
                TargetRequestObject = TargetRequestObject.init(
                    name:
                    defaultContent:
                    mboxParameters:
                    contentWithDataCallback:
                )
        let withData = requestWithData("promo", "d", nil) { _, data in _ = data?.responseTokens }
        #expect(withData.contentWithDataCallback != nil)
        let data = TargetContentData(responseTokens: ["activity.id": "1"])
        #expect(data.analyticsPayload == nil && data.clickMetricAnalyticsPayload == nil)
        // TargetLoadOptions(notifyDisplay:withData:timeout:) for targetLoadRequests(_:profileParameters:options:),
        // and a prefetch timeout: targetPrefetchContent(_:profileParameters:timeout:callback:) and its async form.
        let options = TargetLoadOptions(notifyDisplay: false, withData: true, timeout: .milliseconds(500))
        #expect(!options.notifyDisplay)
        let loadWithOptions: ([TargetRequestObject], [String: String]?, TargetLoadOptions) -> Void =
            client.targetLoadRequests(_:profileParameters:options:)
        let loadWithOptionsAsync:
            ([TargetRequestObject], [String: String]?, TargetLoadOptions) async -> [TargetContent] =
                client.targetLoadRequests(_:profileParameters:options:)
        let prefetchWithTimeout:
            ([TargetPrefetchObject], [String: String]?, Duration, (@Sendable (Bool) -> Void)?) -> Void =
                client.targetPrefetchContent(_:profileParameters:timeout:callback:)
        let prefetchWithTimeoutAsync: ([TargetPrefetchObject], [String: String]?, Duration) async -> Bool =
            client.targetPrefetchContent(_:profileParameters:timeout:)
        // getVisitorIds, setMarketingCloudVisitorId(_:), setCustomerIds(_:) with TargetCustomerId.
        let getVisitorIds: (@escaping @Sendable (TargetVisitorIds?, (any Error)?) -> Void) -> Void =
            client.getVisitorIds(_:)
        let getVisitorIdsAsync: () async throws -> TargetVisitorIds = client.getVisitorIds
        let setMarketingCloudVisitorId: (String?) -> Void = client.setMarketingCloudVisitorId(_:)
        let setMarketingCloudVisitorIdAsync: (String?) async throws -> String? = client.setMarketingCloudVisitorId(_:)
        let customerId: (String, String, MobileVisitorAuthenticationState) -> TargetCustomerId =
            TargetCustomerId.init(id:integrationCode:authenticatedState:)
        #expect(customerId("c-1", "crm", .loggedOut).authenticatedState.rawValue == "logged_out")
        let setCustomerIds: ([TargetCustomerId]) -> Void = client.setCustomerIds(_:)
        let setCustomerIdsAsync: ([TargetCustomerId]) async throws -> [TargetCustomerId] = client.setCustomerIds(_:)

        // Adobe Pass: PreauthorizeRequest.Builder().setResources(_:).disableFeatures(_:).build().
        let preauthorizeRequest = PreauthorizeRequest.Builder()
            .setResources(["resource1", "resource2", "resource3"])
            .disableFeatures([.localCache])
            .build()
        #expect(preauthorizeRequest.resources == ["resource1", "resource2", "resource3"])
        #expect(preauthorizeRequest.disabledFeatures == [PreauthorizeRequest.Feature.localCache])
        #expect(PreauthorizeRequest.Feature.localCache.rawValue == "LOCAL_CACHE")
        #expect(PreauthorizeRequest.Feature.remoteCache.rawValue == "REMOTE_CACHE")
        // AccessEnablerCallback<PreauthorizeResponse>(onResponse:onFailure:).
        let callback:
            (
                @escaping @Sendable (PreauthorizeResponse) -> Void, @escaping @Sendable (PreauthorizeResponse) -> Void
            ) -> AccessEnablerCallback<PreauthorizeResponse> = AccessEnablerCallback.init(onResponse:onFailure:)
        // preauthorize(_:didCompleteWith:) and the async form (onResponse returns, onFailure throws).
        let preauthorizeWithCallback: (PreauthorizeRequest, AccessEnablerCallback<PreauthorizeResponse>) -> Void =
            client.preauthorize(_:didCompleteWith:)
        let preauthorizeAsync: (PreauthorizeRequest) async throws -> PreauthorizeResponse = client.preauthorize(_:)

        // PreauthorizeResponse.getStatus(), getDecisions(); Decision.getId(), isAuthorized(), getError().
        let error = Status(status: 403, code: "preauthorization_denied_by_mvpd", message: "m")
        let response = PreauthorizeResponse(decisions: [Decision(id: "r1", authorized: false, error: error)])
        let getStatus: () -> Status? = response.getStatus
        let getDecisions: () -> [Decision] = response.getDecisions
        #expect(getStatus() == nil)
        let decision = getDecisions()[0]
        let getId: () -> String = decision.getId
        let isAuthorized: () -> Bool = decision.isAuthorized
        let getError: () -> Status? = decision.getError
        #expect(getId() == "r1" && !isAuthorized() && getError() == error)

        // Status and its seven getters.
        let status = Status(
            status: 403,
            code: "c",
            message: "m",
            details: "d",
            helpUrl: "h",
            trace: "t",
            action: "none"
        )
        let getters: [() -> String?] = [
            status.getCode, status.getMessage, status.getDetails, status.getHelpUrl, status.getTrace, status.getAction,
        ]
        let statusCode: () -> Int = status.getStatus
        #expect(statusCode() == 403)
        #expect(getters.map { $0() } == ["c", "m", "d", "h", "t", "none"])

        // Referenced, not all called here: the offline test below calls them.
        _ = (prefetchWithCallback, prefetchAsync, loadWithCallbacks, loadAsync, clear, clearAsync)
        _ = (getThirdPartyId, getThirdPartyIdAsync, setThirdPartyId, setThirdPartyIdAsync)
        _ = (getTntId, getTntIdAsync, setTntId, setTntIdAsync, getSessionId, getSessionIdAsync)
        _ = (setSessionId, setSessionIdAsync, resetExperience, resetExperienceAsync)
        _ = (clickedLocation, clickedLocationAsync, displayedLocations, displayedLocationsAsync)
        _ = (loadWithOptions, loadWithOptionsAsync, prefetchWithTimeout, prefetchWithTimeoutAsync)
        _ = (getVisitorIds, getVisitorIdsAsync, setMarketingCloudVisitorId, setMarketingCloudVisitorIdAsync)
        _ = (setCustomerIds, setCustomerIdsAsync)
        _ = (callback, preauthorizeWithCallback, preauthorizeAsync)
    }

    /// The AccessEnabler's entitlement calls of the guide's "Porting from the AccessEnabler" table, each with its
    /// full type: the async forms and the callback forms.
    @Test func everyEntitlementNameHasTheSignatureTheGuideShows() throws {
        let client = try PreflightClient(endpoint: "ipc:///tmp/pf-guide-nowhere/app.sock", requestor: "acme-requestor")

        let checkAuthentication: (String?, Bool) async -> AuthenticationStatus = client.checkAuthentication(mvpd:fresh:)
        let getAuthentication: (String?, String?, String?) async -> AuthenticationResult =
            client.getAuthentication(mvpd:redirectUrl:domainName:)
        let authenticationEvents: (String) throws -> AsyncStream<AuthenticationEvent> =
            client.authenticationEvents(endpoint:)
        let cancelAuthentication: () async throws -> Bool = client.cancelAuthentication
        let getAuthorization: (String) async -> AuthorizationResponse = client.getAuthorization(resource:)
        let checkAuthorization: (String) async -> AuthorizationResponse = client.checkAuthorization(resource:)
        let logout: (String?) async -> LogoutResult = client.logout(mvpd:)
        let getMetadata: (String?) async -> MetadataResponse = client.getMetadata(key:)
        let getSelectedProvider: () async -> ProviderSelection = client.getSelectedProvider
        let setSelectedProvider: (String?) async throws -> ProviderSelection = client.setSelectedProvider(_:)
        _ = (checkAuthentication, getAuthentication, authenticationEvents, cancelAuthentication, getAuthorization)
        _ = (checkAuthorization, logout, getMetadata, getSelectedProvider, setSelectedProvider)

        // The same calls with the AccessEnabler's two callbacks (didCompleteWith:).
        let checkWithCallback: (String?, Bool, AccessEnablerCallback<AuthenticationStatus>) -> Void =
            client.checkAuthentication(mvpd:fresh:didCompleteWith:)
        let getWithCallback: (String?, String?, String?, AccessEnablerCallback<AuthenticationResult>) -> Void =
            client.getAuthentication(mvpd:redirectUrl:domainName:didCompleteWith:)
        let cancelWithCallback: (AccessEnablerCallback<Bool>) -> Void = client.cancelAuthentication(didCompleteWith:)
        let authorizeWithCallback: (String, AccessEnablerCallback<AuthorizationResponse>) -> Void =
            client.getAuthorization(resource:didCompleteWith:)
        let checkAuthorizationWithCallback: (String, AccessEnablerCallback<AuthorizationResponse>) -> Void =
            client.checkAuthorization(resource:didCompleteWith:)
        let logoutWithCallback: (String?, AccessEnablerCallback<LogoutResult>) -> Void =
            client.logout(mvpd:didCompleteWith:)
        let metadataWithCallback: (String?, AccessEnablerCallback<MetadataResponse>) -> Void =
            client.getMetadata(key:didCompleteWith:)
        let providersWithCallback: (AccessEnablerCallback<ProviderSelection>) -> Void =
            client.getSelectedProvider(didCompleteWith:)
        let selectWithCallback: (String?, AccessEnablerCallback<ProviderSelection>) -> Void =
            client.setSelectedProvider(_:didCompleteWith:)
        _ = (checkWithCallback, getWithCallback, cancelWithCallback, authorizeWithCallback)
        _ = (checkAuthorizationWithCallback, logoutWithCallback, metadataWithCallback, providersWithCallback)
        _ = selectWithCallback

        // The fields the table names, with their types.
        let code = SignInCode(code: "UXD6NWP", url: "https://u", notBefore: 1, notAfter: 2, mvpd: "Cablevision")
        let codeFields: (String, String, Int64?, Int64, String?) = (
            code.code, code.url, code.notBefore, code.notAfter, code.mvpd
        )
        #expect(codeFields.0 == "UXD6NWP")
        let status = AuthenticationStatus(authenticated: false, status: nil, pending: code)
        let statusFields: (Bool, String?, Int64?, Int64?, String?, Status?, SignInCode?) = (
            status.authenticated, status.mvpd, status.notBefore, status.notAfter, status.type, status.status,
            status.pending
        )
        #expect(statusFields.6 == code)
        for result in [AuthenticationResult.code(code), .authenticated(mvpd: "Cablevision", notAfter: 2)] {
            switch result {
            case .authenticated(let mvpd, let notAfter): #expect(mvpd == "Cablevision" && notAfter == 2)
            case .code(let signIn): #expect(signIn == code)
            case .failure(let status): Issue.record("\(status)")
            }
        }
        let token = MediaToken(serializedToken: "a-serialized-token-of-some-length", notBefore: 1, notAfter: 2)
        let authorization = AuthorizationResponse(resource: "movie-1", authorized: true, mediaToken: token)
        let authorizationFields: (String, Bool, String?, String?, Int64?, MediaToken?, Status?, Status?, Bool) = (
            authorization.resource, authorization.authorized, authorization.source, authorization.mvpd,
            authorization.notAfter, authorization.mediaToken, authorization.error, authorization.status,
            authorization.fromCache
        )
        let tokenFields: (String, Int64?, Int64?) = (token.serializedToken, token.notBefore, token.notAfter)
        #expect(authorizationFields.5?.serializedToken == tokenFields.0)
        let logoutResult = LogoutResult(loggedOut: true, url: "https://u")
        let logoutFields: (Bool, String?, String?, String?, String?, Status?) = (
            logoutResult.loggedOut, logoutResult.mvpd, logoutResult.actionName, logoutResult.actionType,
            logoutResult.url, logoutResult.status
        )
        #expect(logoutFields.4 == "https://u")
        let metadata = MetadataResponse(key: "zip", value: .string("10001"))
        let metadataFields: ([String: MetadataValue]?, String?, MetadataValue?, Status?) = (
            metadata.attributes, metadata.key, metadata.value, metadata.status
        )
        #expect(metadataFields.2?.stringValue == "10001")
        let selection = ProviderSelection(selected: "Cablevision", mvpds: [MVPD(id: "Cablevision")])
        let selectionFields: (String?, [MVPD], Status?) = (selection.selected, selection.mvpds, selection.status)
        let mvpdFields: (String, String?, String?) = (
            selection.mvpds[0].id, selection.mvpds[0].displayName, selection.mvpds[0].logoUrl
        )
        #expect(selectionFields.0 == mvpdFields.0)
        let events: [AuthenticationEvent] = [
            .authenticated(mvpd: "Cablevision", notAfter: 2), .failed(reason: .expired, code: nil, message: nil),
            .code(code), .logout(mvpd: nil), .session(state: .missing, mvpd: nil, notAfter: nil),
        ]
        #expect(Set(events).count == 5)
    }

    /// With no agent, the entitlement calls answer network_error as the guide's "When the agent is not there"
    /// table says; the events subscription throws.
    @Test func theEntitlementCallsAnswerNetworkErrorOffline() async throws {
        let folder = try TestFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.path("app.sock"))", requestor: "acme-requestor")
        #expect(await client.checkAuthentication().status?.getCode() == "network_error")
        guard case .failure(let status) = await client.getAuthentication() else {
            Issue.record("getAuthentication did not fail")
            return
        }
        #expect(status.getCode() == "network_error")
        #expect(await client.getAuthorization(resource: "movie-1").status?.getCode() == "network_error")
        await #expect(throws: PreflightError.self) { try await client.cancelAuthentication() }
        // The visitor ids: the getters answer nil, the setters and the reset throw.
        #expect(await client.getThirdPartyId() == nil)
        #expect(await client.getTntId() == nil)
        #expect(await client.getSessionId() == nil)
        for error in [
            await #expect(throws: PreflightError.self) { try await client.setThirdPartyId("household-42") },
            await #expect(throws: PreflightError.self) { try await client.setTntId(nil) },
            await #expect(throws: PreflightError.self) { try await client.setSessionId("web-session-1") },
            await #expect(throws: PreflightError.self) { try await client.resetExperience() },
        ] {
            #expect(error?.isUnreachable == true)
        }
        #expect(throws: AgentConnectionError.self) {
            _ = try client.authenticationEvents(endpoint: "ipc://\(folder.path("events.sock"))")
        }
    }

    /// The callback forms, as an app's synchronous code calls them, with no agent there: every callback still
    /// comes, with what the SDKs give when Adobe cannot be reached.
    @Test func theCallbackFormsAnswerAsTheSDKsDoOffline() async throws {
        let folder = try TestFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.path("app.sock"))", requestor: "acme-requestor")
        let (events, sink) = AsyncStream.makeStream(of: String.self)
        callEveryCallbackForm(client, sink)

        var seen: Set<String> = []
        for await event in events {
            seen.insert(event)
            if seen.count == 7 { break }
        }
        #expect(
            seen == [
                "prefetch false", "logo: BlueWhale", "buttonColor: red", "onFailure network_error 0",
                "getThirdPartyId nil agent_unreachable", "getTntId nil agent_unreachable",
                "getSessionId nil agent_unreachable",
            ]
        )
    }
}

/// Synchronous code, as in an app's UI handler: here the callback overloads are the ones chosen.
private func callEveryCallbackForm(_ client: PreflightClient, _ sink: AsyncStream<String>.Continuation) {
    client.targetPrefetchContent([TargetPrefetchObject(name: "logo")], profileParameters: ["age": "20-32"]) {
        sink.yield("prefetch \($0)")
    }
    client.targetLoadRequests([
        TargetRequestObject(name: "logo", defaultContent: "BlueWhale") { sink.yield("logo: \($0 ?? "nil")") },
        TargetRequestObject(name: "buttonColor", defaultContent: "red") { sink.yield("buttonColor: \($0 ?? "nil")") },
    ])
    client.targetPrefetchClearCache()
    // AEP Target's visitor calls: the setters and the reset are fire-and-forget, the getters call back.
    client.setThirdPartyId("household-42")
    client.setTntId(nil)
    client.setSessionId("web-session-1")
    client.resetExperience()
    for (name, getter) in [
        ("getThirdPartyId", client.getThirdPartyId(_:)), ("getTntId", client.getTntId(_:)),
        ("getSessionId", client.getSessionId(_:)),
    ] as [(String, (@escaping @Sendable (String?, (any Error)?) -> Void) -> Void)] {
        getter { id, error in sink.yield("\(name) \(id ?? "nil") \((error as? PreflightError)?.code.rawValue ?? "nil")")
        }
    }
    client.preauthorize(
        PreauthorizeRequest.Builder().setResources(["resource1"]).build(),
        didCompleteWith: AccessEnablerCallback<PreauthorizeResponse>(
            onResponse: { _ in sink.yield("onResponse") },
            onFailure: {
                sink.yield("onFailure \($0.getStatus()?.getCode() ?? "nil") \($0.getStatus()?.getStatus() ?? -1)")
            }
        )
    )
}
