import PreflightProtocol

/// A preauthorization request: the AccessEnabler's `PreauthorizeRequest`, made with its ``Builder``:
///
/// ```swift
/// let request = PreauthorizeRequest.Builder()
///     .setResources(["resource1", "resource2", "resource3"])
///     .disableFeatures([.localCache])
///     .build()
/// ```
public struct PreauthorizeRequest: Sendable, Hashable {
    /// A feature an app can disable for one request (the AccessEnabler's `PreauthorizeRequest.Feature`).
    public struct Feature: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// `LOCAL_CACHE`: bypass (and refresh) the agent's cache of permit decisions.
        public static let localCache = Feature(rawValue: "LOCAL_CACHE")
        /// `REMOTE_CACHE`: ask Adobe Pass not to answer from its server-side cache.
        public static let remoteCache = Feature(rawValue: "REMOTE_CACHE")
    }

    /// Builds a ``PreauthorizeRequest`` step by step, as the AccessEnabler's builder does. Each call returns
    /// the builder with that change, so calls chain.
    public struct Builder: Sendable, Hashable {
        private var resources: [String] = []
        private var disabledFeatures: Set<Feature> = []

        /// An empty builder.
        public init() {}

        /// The resource ids to preauthorize (channel names or MRSS fragments, 1 to 1024 characters each), in
        /// the order the decisions come back. Duplicates are kept and answered each.
        public func setResources(_ resources: [String]) -> Builder {
            var builder = self
            builder.resources = resources
            return builder
        }

        /// Features to disable for this request (adds to those disabled before).
        public func disableFeatures(_ features: Set<Feature>) -> Builder {
            var builder = self
            builder.disabledFeatures.formUnion(features)
            return builder
        }

        /// Features to disable for this request (adds to those disabled before).
        public func disableFeatures(_ features: Feature...) -> Builder {
            disableFeatures(Set(features))
        }

        /// The request.
        public func build() -> PreauthorizeRequest {
            PreauthorizeRequest(resources: resources, disabledFeatures: disabledFeatures)
        }
    }

    /// The resource ids, in request order.
    public let resources: [String]
    /// The features disabled for this request.
    public let disabledFeatures: Set<Feature>
}

/// The two callbacks of an AccessEnabler call: `onResponse` when Adobe Pass decided (decisions, or a status
/// from Adobe Pass services), `onFailure` when the request could not be serviced (status only). Exactly one
/// is called, once, on a task of the global concurrent executor.
public struct AccessEnablerCallback<Response: Sendable>: Sendable {
    /// Called with the response when Adobe Pass answered.
    public let onResponse: @Sendable (Response) -> Void
    /// Called with the response (its status says why) when the request could not be serviced.
    public let onFailure: @Sendable (Response) -> Void

    /// A pair of callbacks.
    public init(onResponse: @escaping @Sendable (Response) -> Void, onFailure: @escaping @Sendable (Response) -> Void) {
        self.onResponse = onResponse
        self.onFailure = onFailure
    }
}

/// Adobe Pass's answer to a preauthorization: the AccessEnabler's `PreauthorizeResponse`.
public struct PreauthorizeResponse: Sendable, Hashable {
    /// Decisions, one per requested resource in request order (empty with a failure or a top-level error).
    public let decisions: [Decision]
    /// A status from Adobe Pass services, or (with a failure) why the request could not be serviced.
    public let status: Status?

    /// A response (tests and app-side fakes make them).
    public init(decisions: [Decision], status: Status? = nil) {
        self.decisions = decisions
        self.status = status
    }

    /// The status, if any (the AccessEnabler's `getStatus()`).
    public func getStatus() -> Status? { status }
    /// The decisions (the AccessEnabler's `getDecisions()`).
    public func getDecisions() -> [Decision] { decisions }
}

/// Adobe Pass's decision on one resource: the AccessEnabler's `Decision`.
public struct Decision: Sendable, Hashable {
    /// The resource id.
    public let id: String
    /// Whether the user may watch it.
    public let authorized: Bool
    /// Adobe's enhanced error for a denial (or a permit with a warning), if it sent one.
    public let error: Status?
    /// Where Adobe's decision came from: `mvpd`, `degradation`, `temppass` or `dummy` (nil when Adobe sent
    /// none).
    public let source: String?

    /// A decision (tests and app-side fakes make them).
    public init(id: String, authorized: Bool, error: Status? = nil, source: String? = nil) {
        self.id = id
        self.authorized = authorized
        self.error = error
        self.source = source
    }

    /// The resource id (`getId()`).
    public func getId() -> String { id }
    /// Whether the user may watch the resource (`isAuthorized()`).
    public func isAuthorized() -> Bool { authorized }
    /// The enhanced error, if any (`getError()`).
    public func getError() -> Status? { error }
}

/// An Adobe Pass status (enhanced error code): the AccessEnabler's `Status`, with its seven fields.
///
/// Agent-side failures have status 0 and one of the codes of docs/PROTOCOL.md (`network_error`,
/// `authentication_session_missing`, ...); statuses from Adobe Pass carry the HTTP status and Adobe's code.
public struct Status: Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status, or 0 for a failure on the box.
    public let status: Int
    /// The error code, e.g. `preauthorization_denied_by_mvpd` or `network_error`.
    public let code: String?
    /// A message for a person.
    public let message: String?
    /// More detail (Adobe's or the MVPD's), when given.
    public let details: String?
    /// Where Adobe documents the code.
    public let helpUrl: String?
    /// Adobe's trace id for support.
    public let trace: String?
    /// What to do: none, configuration, application-registration, authentication, authorization,
    /// degradation, retry, retry-after.
    public let action: String?

    /// A status (tests and app-side fakes make them).
    public init(
        status: Int,
        code: String?,
        message: String?,
        details: String? = nil,
        helpUrl: String? = nil,
        trace: String? = nil,
        action: String? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.helpUrl = helpUrl
        self.trace = trace
        self.action = action
    }

    /// `getStatus()`: the HTTP status, or 0.
    public func getStatus() -> Int { status }
    /// `getCode()`.
    public func getCode() -> String? { code }
    /// `getMessage()`.
    public func getMessage() -> String? { message }
    /// `getDetails()`.
    public func getDetails() -> String? { details }
    /// `getHelpUrl()`.
    public func getHelpUrl() -> String? { helpUrl }
    /// `getTrace()`.
    public func getTrace() -> String? { trace }
    /// `getAction()`.
    public func getAction() -> String? { action }

    public var description: String {
        "\(status) \(code ?? "(no code)"): \(message ?? "")"
    }
}

/// A preauthorization that could not be serviced (the AccessEnabler's `onFailure`), as the async form of
/// ``PreflightClient/preauthorize(_:)`` throws it.
public struct PreauthorizeFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The response `onFailure` would get: no decisions, a status saying why.
    public let response: PreauthorizeResponse

    /// Wraps a failure response.
    public init(response: PreauthorizeResponse) {
        self.response = response
    }

    /// Why (`response.getStatus()`); always present.
    public var status: Status {
        response.status ?? Status(status: 0, code: "network_error", message: "no status")
    }

    public var description: String { "preauthorize failed: \(status)" }
}

extension PreflightClient {
    /// Asks whether the user may watch each resource, without the side effects of authorizing: the
    /// AccessEnabler's `preauthorize(request, callback)`. Returns at once; exactly one callback follows.
    ///
    /// `onResponse` gets Adobe Pass's decisions (or its top-level status); `onFailure` gets a status when the
    /// request could not be serviced: the agent's codes of docs/PROTOCOL.md, or `network_error` when the
    /// agent itself cannot be reached. Safe to repeat (it only reads), so retried as in ``Configuration``.
    public func preauthorize(
        _ request: PreauthorizeRequest,
        didCompleteWith callback: AccessEnablerCallback<PreauthorizeResponse>
    ) {
        Task {
            do throws(PreauthorizeFailure) {
                callback.onResponse(try await preauthorize(request))
            } catch {
                callback.onFailure(error.response)
            }
        }
    }

    /// Asks whether the user may watch each resource and returns Adobe Pass's response (`onResponse`).
    ///
    /// - Throws: ``PreauthorizeFailure`` (`onFailure`) with the status saying why the request could not be
    ///   serviced; `network_error` when the agent cannot be reached, `requestor_not_configured` when no
    ///   requestor was set (``setRequestor(_:)``).
    public func preauthorize(_ request: PreauthorizeRequest) async throws(PreauthorizeFailure) -> PreauthorizeResponse {
        guard let requestor else {
            throw PassWire.failure(
                Status(
                    status: 0,
                    code: "requestor_not_configured",
                    message: "No requestor: pass one to PreflightClient(requestor:) or call setRequestor(_:).",
                    action: "configuration"
                )
            )
        }
        let args = PassWire.preauthorizeArguments(request, requestor: requestor)
        switch await send(Command.preauthorize.wireName, args: args, timeout: configuration.preauthorizeTimeout) {
        case .success(let result):
            return try PassWire.response(from: result)
        case .failure(let error):
            throw PassWire.failure(PassWire.status(for: error))
        }
    }
}

/// The JSON of `preauthorize` (docs/PROTOCOL.md), kept apart from the calls so that it is tested alone.
enum PassWire {
    /// `{"requestor","resources",["disabledFeatures"]}`; features in name order, left out when none.
    static func preauthorizeArguments(_ request: PreauthorizeRequest, requestor: String) -> JSONObject {
        var args: JSONObject = [
            "requestor": .string(requestor),
            "resources": .array(request.resources.map { .string($0) }),
        ]
        if !request.disabledFeatures.isEmpty {
            args["disabledFeatures"] = .array(request.disabledFeatures.map(\.rawValue).sorted().map { .string($0) })
        }
        return args
    }

    /// A `preauthorize` result: the response for `outcome: "response"`, thrown for `outcome: "failure"`.
    static func response(from result: JSONValue) throws(PreauthorizeFailure) -> PreauthorizeResponse {
        guard let outcome = result["outcome"]?.stringValue, let resources = result["resources"]?.arrayValue else {
            throw failure(unreadable("a preauthorize result without outcome and resources"))
        }
        let status = result["status"].flatMap(Self.status(from:))
        if outcome == "failure" {
            throw failure(status ?? unreadable("a failure without a status"))
        }
        var decisions: [Decision] = []
        decisions.reserveCapacity(resources.count)
        for resource in resources {
            guard let id = resource["id"]?.stringValue, case .bool(let authorized)? = resource["authorized"] else {
                throw failure(unreadable("a decision without id and authorized"))
            }
            decisions.append(
                Decision(
                    id: id,
                    authorized: authorized,
                    error: resource["error"].flatMap(status(from:)),
                    source: resource["source"]?.stringValue
                )
            )
        }
        return PreauthorizeResponse(decisions: decisions, status: status)
    }

    /// A `status` or decision `error` object; unknown fields are ignored, missing ones nil.
    static func status(from value: JSONValue) -> Status? {
        guard case .object = value else { return nil }
        return Status(
            status: value["status"]?.doubleValue.map { Int($0) } ?? 0,
            code: value["code"]?.stringValue,
            message: value["message"]?.stringValue,
            details: value["details"]?.stringValue,
            helpUrl: value["helpUrl"]?.stringValue,
            trace: value["trace"]?.stringValue,
            action: value["action"]?.stringValue
        )
    }

    /// The `onFailure` status for a request that got no usable reply: `network_error` when the agent could not
    /// be reached (as the AccessEnabler says when Adobe cannot be), else the agent's error code.
    static func status(for error: PreflightError) -> Status {
        switch error.code {
        case .agentUnreachable, .timedOut, .shuttingDown, .overloaded, .closed, .cancelled, .systemError:
            return Status(status: 0, code: "network_error", message: error.message, action: "none")
        case .badReply:
            return unreadable(error.message)
        default:
            return Status(status: 0, code: error.code.rawValue, message: error.message, action: error.action ?? "none")
        }
    }

    static func failure(_ status: Status) -> PreauthorizeFailure {
        PreauthorizeFailure(response: PreauthorizeResponse(decisions: [], status: status))
    }

    private static func unreadable(_ detail: String) -> Status {
        Status(
            status: 0,
            code: "server_response_format_unknown",
            message: "preflightd sent a response in an unknown format: \(detail).",
            action: "none"
        )
    }
}
