import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import UpstreamHTTP

/// An upstream call, by name: in log lines, `upstream.error` events and counters.
enum PassOperation: String, Sendable {
    case register
    case token
    case configuration
    case profiles
    case preauthorize
}

/// What an upstream call can come back with: the value, a top-level Adobe Pass error (passed through to
/// apps as outcome response), or a reason the agent could not get an answer.
enum UpstreamResult<Value: Sendable>: Sendable {
    case success(Value)
    case adobeError(AdobeStatus)
    case failure(PassFailure)
}

/// What upstream calls read of the configuration, swapped whole when it is reloaded.
struct UpstreamSettings: Sendable, Equatable {
    var configuration: PassConfiguration
    var device: DeviceIdentity
}

/// A requestor's configuration as far as the agent uses it.
struct RequestorConfiguration: Sendable, Hashable {
    /// The MVPDs with an active integration.
    var mvpds: [String]

    init?(json: JSONValue) {
        guard case .object(let object) = json else { return nil }
        let mvpds = object["requestor"]?["mvpds"]?.arrayValue ?? []
        self.mvpds = mvpds.compactMap { $0["id"]?.stringValue }
    }
}

/// An authenticated profile (`MvpdProfileResponse`), as far as the agent uses it.
struct AuthenticatedProfile: Sendable, Hashable {
    var mvpd: String
    /// Wall-clock milliseconds since the epoch.
    var notBefore: Int64
    var notAfter: Int64

    /// Only `notAfter` decides: a box whose clock runs a little behind must not refuse a fresh login.
    func isValid(atEpochMilliseconds now: Int64) -> Bool { now < notAfter }

    /// The `profiles` map of a `ProfilesResponse`; nil when the body is not one.
    static func list(from json: JSONValue) -> [AuthenticatedProfile]? {
        guard case .object(let object) = json else { return nil }
        guard let profiles = object["profiles"] else { return [] }
        guard case .object(let byMvpd) = profiles else { return nil }
        var list: [AuthenticatedProfile] = []
        for (mvpd, profile) in byMvpd {
            guard let notAfter = profile["notAfter"]?.doubleValue else { return nil }
            let notBefore = profile["notBefore"]?.doubleValue ?? 0
            list.append(AuthenticatedProfile(mvpd: mvpd, notBefore: Int64(notBefore), notAfter: Int64(notAfter)))
        }
        return list
    }
}

/// A DCR access token. Kept in memory only.
struct AccessToken: Sendable, Hashable {
    /// A secret: never logged, never shown.
    var value: String
    /// When to get the next one: 60 s or a fifth of the lifetime (the smaller) before expiry.
    var refreshAt: ContinuousClock.Instant
    var expiresAt: ContinuousClock.Instant
    /// Wall-clock expiry, for the admin view.
    var expiresAtEpochMilliseconds: Int64

    init(value: String, lifetime: Duration, now: ContinuousClock.Instant, epochMilliseconds: Int64) {
        self.value = value
        let margin = min(Duration.seconds(60), lifetime / 5)
        refreshAt = now + lifetime - margin
        expiresAt = now + lifetime
        expiresAtEpochMilliseconds = epochMilliseconds + lifetime.wholeMilliseconds
    }
}

/// Talks to Adobe Pass: builds each request from the current settings, paces every call, re-sends after
/// a 429 (honouring `Retry-After`) while the caller's deadline allows, gets a new access token once when
/// one is refused, and turns responses into values. Logs and events carry operation, status and code,
/// never a header or body (those hold the token, the client secret and the software statement).
/// How Adobe Pass has been answering, for `status`: the technician's first question.
public struct UpstreamHealth: Sendable, Equatable {
    public var calls = 0
    public var errors = 0
    public var lastSuccessAtMs: Int64?
    public var lastErrorAtMs: Int64?
    public var lastErrorCode: String?
    public var lastErrorStatus: Int?
    public var lastErrorOperation: String?

    public var json: JSONValue {
        [
            "calls": .integer(Int64(calls)),
            "errors": .integer(Int64(errors)),
            "lastSuccessAtMs": lastSuccessAtMs.map { .integer($0) } ?? .null,
            "lastErrorAtMs": lastErrorAtMs.map { .integer($0) } ?? .null,
            "lastErrorCode": lastErrorCode.map { .string($0) } ?? .null,
            "lastErrorStatus": lastErrorStatus.map { .integer(Int64($0)) } ?? .null,
            "lastErrorOperation": lastErrorOperation.map { .string($0) } ?? .null,
        ]
    }
}

final class PassUpstream: Sendable {
    let health = Mutex(UpstreamHealth())
    let transport: any HTTPTransport
    let clock: any AgentClock
    let logger: Logger
    let settings: Mutex<UpstreamSettings>
    let pacer: Mutex<RequestPacer>
    let credentials: Credentials
    private let reportError: @Sendable (_ operation: PassOperation, _ status: Int, _ code: String) -> Void

    /// Longest wait a `Retry-After` may impose; anything longer is taken as this.
    static let longestRetryAfter = Duration.seconds(120)

    init(
        transport: any HTTPTransport,
        settings: UpstreamSettings,
        credentials: Credentials,
        clock: any AgentClock,
        logger: Logger,
        reportError: @escaping @Sendable (_ operation: PassOperation, _ status: Int, _ code: String) -> Void
    ) {
        self.transport = transport
        self.clock = clock
        self.logger = logger
        self.settings = Mutex(settings)
        self.pacer = Mutex(RequestPacer(pacing: settings.configuration.pacing))
        self.credentials = credentials
        self.reportError = reportError
    }

    // MARK: DCR

    /// `POST /o/client/register`.
    func register(deadline: ContinuousClock.Instant) async -> Result<Registration, PassFailure> {
        let exchanged = await exchange(.register, deadline: deadline) { settings in
            let body: JSONValue = [
                "software_statement": .string(settings.configuration.softwareStatement),
                "redirect_uri": .string(settings.configuration.redirectURI),
            ]
            return HTTPRequest(
                method: "POST",
                url: "\(settings.configuration.baseURL)/o/client/register",
                headers: [
                    (name: "Content-Type", value: "application/json"),
                    (name: "Accept", value: "application/json"),
                    (name: "X-Device-Info", value: settings.device.infoHeader),
                ],
                body: JSONWriter.encode(body),
                timeout: settings.configuration.timeout
            )
        }
        let response: HTTPResponse
        let settings: UpstreamSettings
        switch exchanged {
        case .failure(let failure): return .failure(failure)
        case .success(let success): (response, settings) = success
        }
        let json = try? JSONReader.read(response.body)
        if (200..<300).contains(response.status), let json, let clientID = json["client_id"]?.stringValue,
            let clientSecret = json["client_secret"]?.stringValue, !clientID.isEmpty, !clientSecret.isEmpty
        {
            return .success(
                Registration(
                    clientID: clientID,
                    clientSecret: clientSecret,
                    serverURL: settings.configuration.baseURL,
                    softwareStatementDigest: Registration.digest(of: settings.configuration.softwareStatement),
                    registeredAt: clock.epochMilliseconds()
                )
            )
        }
        let code = json?["error"]?.stringValue ?? "server_response_format_unknown"
        report(.register, status: response.status, code: code)
        return .failure(.accessTokenUnavailable("registration answered HTTP \(response.status) (\(code))"))
    }

    enum TokenFailure: Error, Sendable {
        /// The token endpoint does not know the client (any more): register again.
        case invalidClient
        case failure(PassFailure)
    }

    /// `POST /o/client/token` with a form body (the spec models the fields as query parameters, the prose
    /// documentation as a form body; a body keeps the client secret out of URLs and logs).
    func requestToken(
        _ registration: Registration,
        deadline: ContinuousClock.Instant
    ) async -> Result<AccessToken, TokenFailure> {
        let exchanged = await exchange(.token, deadline: deadline) { settings in
            HTTPRequest(
                method: "POST",
                url: "\(settings.configuration.baseURL)/o/client/token",
                headers: [
                    (name: "Content-Type", value: "application/x-www-form-urlencoded"),
                    (name: "Accept", value: "application/json"),
                    (name: "X-Device-Info", value: settings.device.infoHeader),
                ],
                body: Encoding.formBody([
                    (name: "grant_type", value: "client_credentials"),
                    (name: "client_id", value: registration.clientID),
                    (name: "client_secret", value: registration.clientSecret),
                ]),
                timeout: settings.configuration.timeout
            )
        }
        let response: HTTPResponse
        switch exchanged {
        case .failure(let failure): return .failure(.failure(failure))
        case .success(let success): response = success.response
        }
        let json = try? JSONReader.read(response.body)
        if (200..<300).contains(response.status), let json, let value = json["access_token"]?.stringValue,
            !value.isEmpty
        {
            // expires_in is documented as required; a missing one is taken as a short, safe lifetime.
            let seconds = json["expires_in"]?.doubleValue.map { max(1, Int64($0)) } ?? 600
            return .success(
                AccessToken(
                    value: value,
                    lifetime: .seconds(seconds),
                    now: clock.now(),
                    epochMilliseconds: clock.epochMilliseconds()
                )
            )
        }
        let code = json?["error"]?.stringValue ?? "server_response_format_unknown"
        report(.token, status: response.status, code: code)
        if code == "invalid_client" && (response.status == 400 || response.status == 401) {
            return .failure(.invalidClient)
        }
        return .failure(
            .failure(.accessTokenUnavailable("the token endpoint answered HTTP \(response.status) (\(code))"))
        )
    }

    // MARK: REST API v2

    /// `GET /api/v2/{serviceProvider}/configuration`.
    func fetchConfiguration(
        _ requestor: String,
        deadline: ContinuousClock.Instant
    ) async -> UpstreamResult<RequestorConfiguration> {
        let exchanged = await restCall(.configuration, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))/configuration",
                headers: Self.restHeaders(settings, token: token, jsonBody: false),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .configuration) { RequestorConfiguration(json: $0) }
    }

    /// `GET /api/v2/{serviceProvider}/profiles`.
    func fetchProfiles(
        _ requestor: String,
        deadline: ContinuousClock.Instant
    ) async -> UpstreamResult<[AuthenticatedProfile]> {
        let exchanged = await restCall(.profiles, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))/profiles",
                headers: Self.restHeaders(settings, token: token, jsonBody: false),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .profiles) { AuthenticatedProfile.list(from: $0) }
    }

    /// `POST /api/v2/{serviceProvider}/decisions/preauthorize/{mvpd}` with `{"resources": [...]}`.
    ///
    /// `resources` is asked for once a pacing slot is held, so that a batch can take in more resources
    /// while it waits; it must return the same list every time it is asked after that.
    ///
    /// REMOTE_CACHE: Adobe documents no wire form for bypassing its server-side decision cache. When an
    /// app disables REMOTE_CACHE the agent sends the standard HTTP request directive
    /// `Cache-Control: no-cache` ("do not answer from a cache without revalidating"), the conservative
    /// choice: it means exactly that to any HTTP cache on the way and is harmless where ignored. Without
    /// it no cache header is sent.
    func preauthorize(
        requestor: String,
        mvpd: String,
        bypassRemoteCache: Bool,
        deadline: ContinuousClock.Instant,
        resources: @escaping @Sendable () async -> [String]
    ) async -> UpstreamResult<[String: ResourceDecision]> {
        let exchanged = await restCall(.preauthorize, deadline: deadline) { settings, token in
            var headers = Self.restHeaders(settings, token: token, jsonBody: true)
            if bypassRemoteCache { headers.append((name: "Cache-Control", value: "no-cache")) }
            let body: JSONValue = ["resources": .array(await resources().map { .string($0) })]
            return HTTPRequest(
                method: "POST",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))"
                    + "/decisions/preauthorize/\(Encoding.percentEncoded(mvpd))",
                headers: headers,
                body: JSONWriter.encode(body),
                timeout: settings.configuration.timeout
            )
        }
        let asked = await resources()
        let decisions = interpret(exchanged, .preauthorize) { json -> [String: ResourceDecision]? in
            guard let list = json["decisions"]?.arrayValue else { return nil }
            var byResource: [String: ResourceDecision] = [:]
            for item in list {
                guard let resource = item["resource"]?.stringValue, case .bool(let authorized)? = item["authorized"]
                else { return nil }
                var error: AdobeStatus?
                if let object = item["error"]?.objectValue { error = AdobeStatus(passingThrough: object) }
                if byResource[resource] == nil {
                    byResource[resource] = ResourceDecision(resource: resource, authorized: authorized, error: error)
                }
            }
            return byResource
        }
        if case .success(let byResource) = decisions, let missing = asked.first(where: { byResource[$0] == nil }) {
            report(.preauthorize, status: 200, code: "server_response_format_unknown")
            return .failure(.serverResponseFormatUnknown("the decisions lack resource \"\(missing)\""))
        }
        return decisions
    }

    /// The headers every REST API v2 call carries (restApiV2.json marks Authorization,
    /// AP-Device-Identifier and X-Device-Info required on profiles and decisions; the configuration
    /// documentation requires X-Device-Info too, so every call sends all three), plus Accept and, with a
    /// body, Content-Type.
    static func restHeaders(
        _ settings: UpstreamSettings,
        token: AccessToken,
        jsonBody: Bool
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            (name: "Authorization", value: "Bearer \(token.value)"),
            (name: "AP-Device-Identifier", value: settings.device.identifierHeader),
            (name: "X-Device-Info", value: settings.device.infoHeader),
            (name: "Accept", value: "application/json"),
        ]
        if jsonBody { headers.append((name: "Content-Type", value: "application/json")) }
        return headers
    }

    // MARK: Sending

    /// A REST API v2 call: with the current access token, and once more with a new one when Adobe
    /// refuses the token (401 `invalid_access_token_*`).
    private func restCall(
        _ operation: PassOperation,
        deadline: ContinuousClock.Instant,
        build: @escaping @Sendable (UpstreamSettings, AccessToken) async -> HTTPRequest
    ) async -> Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure> {
        var refreshed = false
        while true {
            let token: AccessToken
            switch await credentials.accessToken(using: self, deadline: deadline) {
            case .success(let current): token = current
            case .failure(let failure): return .failure(failure)
            }
            let result = await exchange(operation, deadline: deadline) { await build($0, token) }
            if !refreshed, case .success(let exchanged) = result, exchanged.response.status == 401,
                let code = (try? JSONReader.read(exchanged.response.body))?["code"]?.stringValue,
                code.hasPrefix("invalid_access_token")
            {
                refreshed = true
                credentials.invalidate(token)
                report(operation, status: 401, code: code)
                logger.notice(
                    "Adobe Pass refused the access token; getting a new one",
                    metadata: ["operation": "\(operation.rawValue)", "code": "\(code)"]
                )
                continue
            }
            return result
        }
    }

    /// Sends one request: waits for a pacing slot, builds the request from the settings of that moment,
    /// sends it within the deadline, and after a 429 waits (Retry-After, else a growing back-off) and
    /// sends again while the deadline allows.
    func exchange(
        _ operation: PassOperation,
        deadline: ContinuousClock.Instant,
        build: @Sendable (UpstreamSettings) async -> HTTPRequest
    ) async -> Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure> {
        var throttled = 0
        while true {
            if let failure = await waitForSlot(deadline: deadline) { return .failure(failure) }
            let settings = self.settings.withLock { $0 }
            var request = await build(settings)
            let remaining = deadline - clock.now()
            guard remaining > .zero else {
                return .failure(.networkError("no time left before the answer deadline"))
            }
            request.timeout = min(request.timeout, remaining)
            logger.debug(
                "Adobe Pass request",
                metadata: ["operation": "\(operation.rawValue)", "url": "\(request.url)"]
            )
            let response: HTTPResponse
            health.withLock { $0.calls += 1 }
            do {
                response = try await transport.send(request)
                if (200..<300).contains(response.status) {
                    let epoch = clock.epochMilliseconds()
                    health.withLock { $0.lastSuccessAtMs = epoch }
                }
            } catch {
                if error.kind == .cancelled {
                    // The agent is stopping: neither an upstream fault nor worth a warning.
                    logger.debug("Adobe Pass request cancelled", metadata: ["operation": "\(operation.rawValue)"])
                    return .failure(.networkError("\(operation.rawValue) cancelled: the agent is stopping"))
                }
                report(operation, status: 0, code: "network_error")
                logger.warning(
                    "Adobe Pass request failed",
                    metadata: ["operation": "\(operation.rawValue)", "error": "\(error)"]
                )
                let what = error.kind == .timeout ? "no answer within \(request.timeout)" : "\(error.kind.rawValue)"
                return .failure(.networkError("\(operation.rawValue) failed (\(what))"))
            }
            guard response.status == 429 else { return .success((response: response, settings: settings)) }
            throttled += 1
            let wait = min(
                Self.retryAfter(response) ?? Self.throttleBackoff.delay(attempt: throttled),
                Self.longestRetryAfter
            )
            let now = clock.now()
            pacer.withLock { $0.block(until: now + wait) }
            report(operation, status: 429, code: "too_many_requests")
            logger.warning(
                "Adobe Pass is throttling this device; waiting before the next request",
                metadata: ["operation": "\(operation.rawValue)", "waitMs": "\(wait.wholeMilliseconds)"]
            )
            if now + wait > deadline {
                return .failure(
                    .networkError("Adobe Pass throttled \(operation.rawValue) (HTTP 429) past the answer deadline")
                )
            }
        }
    }

    /// Waits for this request's pacing slot; a failure when none comes before the deadline.
    private func waitForSlot(deadline: ContinuousClock.Instant) async -> PassFailure? {
        while true {
            let now = clock.now()
            guard let slot = pacer.withLock({ $0.reserve(now: now, deadline: deadline) }) else {
                return .networkError("the request budget towards Adobe Pass allows no request before the deadline")
            }
            if slot > now {
                do {
                    try await clock.sleep(for: slot - now)
                } catch {
                    return .networkError("cancelled")
                }
            }
            // A 429 that arrived while this request slept moves everyone back.
            if !pacer.withLock({ $0.isBlocked(at: clock.now()) }) { return nil }
        }
    }

    /// A response's meaning: the parsed value on 2xx, Adobe's error on 4xx/5xx with an error body,
    /// `server_response_format_unknown` for anything else.
    private func interpret<Value: Sendable>(
        _ exchanged: Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure>,
        _ operation: PassOperation,
        parse: (JSONValue) -> Value?
    ) -> UpstreamResult<Value> {
        let response: HTTPResponse
        switch exchanged {
        case .failure(let failure): return .failure(failure)
        case .success(let success): response = success.response
        }
        let json = try? JSONReader.read(response.body)
        if (200..<300).contains(response.status) {
            if let json, let value = parse(json) { return .success(value) }
            report(operation, status: response.status, code: "server_response_format_unknown")
            return .failure(
                .serverResponseFormatUnknown(
                    "\(operation.rawValue) answered HTTP \(response.status) with a body that is not the documented JSON"
                )
            )
        }
        if case .object(let object)? = json, object["code"]?.stringValue != nil {
            let status = AdobeStatus(passingThrough: object, httpStatus: response.status)
            report(operation, status: response.status, code: status.code ?? "unknown")
            return .adobeError(status)
        }
        report(operation, status: response.status, code: "server_response_format_unknown")
        return .failure(
            .serverResponseFormatUnknown(
                "\(operation.rawValue) answered HTTP \(response.status) without an Adobe Pass error body"
            )
        )
    }

    private func report(_ operation: PassOperation, status: Int, code: String) {
        let epoch = clock.epochMilliseconds()
        health.withLock { health in
            health.errors += 1
            health.lastErrorAtMs = epoch
            health.lastErrorCode = code
            health.lastErrorStatus = status
            health.lastErrorOperation = operation.rawValue
        }
        if status != 0 && status != 429 {
            logger.warning(
                "Adobe Pass answered with an error",
                metadata: ["operation": "\(operation.rawValue)", "status": "\(status)", "code": "\(code)"]
            )
        }
        reportError(operation, status, code)
    }

    /// `Retry-After` in seconds (the form Adobe's edge sends); an HTTP-date is not honoured but backs off.
    static func retryAfter(_ response: HTTPResponse) -> Duration? {
        guard let text = response.header("retry-after"), let seconds = Int(text.filter { !$0.isWhitespace }),
            seconds >= 0
        else { return nil }
        return .seconds(max(1, seconds))
    }

    /// 1 s, 2 s, 4 s … 64 s for 429s without a usable Retry-After.
    static let throttleBackoff = Backoff(base: .seconds(1), doublings: 6)
}
