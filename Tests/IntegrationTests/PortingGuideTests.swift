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
        _ = (callback, preauthorizeWithCallback, preauthorizeAsync)
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
            if seen.count == 4 { break }
        }
        #expect(
            seen == [
                "prefetch false", "logo: BlueWhale", "buttonColor: red", "onFailure network_error 0",
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
