import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import UpstreamHTTP

/// Talks to Adobe Pass: builds each request from the current settings, paces every call, re-sends after
/// a 429 (honouring `Retry-After`) while the caller's deadline allows, gets a new access token once when
/// one is refused, and turns responses into values. Logs and events carry operation, status and code,
/// never a header or body (those hold the token, the client secret and the software statement).
final class PassUpstream: Sendable {
    let health = Mutex(UpstreamHealth())
    let transport: any HTTPTransport
    /// Whether Adobe Pass answers at all: the breaker of the transport, when it has one (the agent's does).
    let circuit: CircuitBreaker?
    let clock: any AgentClock
    let logger: Logger
    let settings: Mutex<UpstreamSettings>
    let pacer: Mutex<RequestPacer>
    let credentials: Credentials
    let reportError: @Sendable (_ operation: PassOperation, _ status: Int, _ code: String) -> Void

    init(
        transport: any HTTPTransport,
        settings: UpstreamSettings,
        credentials: Credentials,
        clock: any AgentClock,
        logger: Logger,
        reportError: @escaping @Sendable (_ operation: PassOperation, _ status: Int, _ code: String) -> Void
    ) {
        self.transport = transport
        self.circuit = (transport as? CircuitBreakingTransport)?.breaker
        self.clock = clock
        self.logger = logger
        self.settings = Mutex(settings)
        self.pacer = Mutex(RequestPacer(pacing: settings.configuration.pacing))
        self.credentials = credentials
        self.reportError = reportError
    }

    // MARK: DCR

    /// `POST /o/client/register`.
    func register(deadline: MonotonicInstant) async -> Result<Registration, PassFailure> {
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
        deadline: MonotonicInstant
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
        deadline: MonotonicInstant
    ) async -> UpstreamResult<RequestorConfiguration> {
        let exchanged = await restCall(.configuration, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))/configuration",
                headers: Self.restHeaders(settings, token: token),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .configuration) { RequestorConfiguration(json: $0) }
    }

    /// `GET /api/v2/{serviceProvider}/profiles`.
    func fetchProfiles(
        _ requestor: String,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<[AuthenticatedProfile]> {
        let exchanged = await restCall(.profiles, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))/profiles",
                headers: Self.restHeaders(settings, token: token),
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
        deadline: MonotonicInstant,
        resources: @escaping @Sendable () async -> [String]
    ) async -> UpstreamResult<[String: ResourceDecision]> {
        let exchanged = await restCall(.preauthorize, deadline: deadline) { settings, token in
            var headers = Self.restHeaders(settings, token: token, contentType: "application/json")
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
            guard let list = AuthorizationDecision.list(from: json) else { return nil }
            var byResource: [String: ResourceDecision] = [:]
            for item in list where byResource[item.resource] == nil {
                byResource[item.resource] = ResourceDecision(
                    resource: item.resource,
                    authorized: item.authorized,
                    error: item.error,
                    source: item.source
                )
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
    /// body, its Content-Type.
    static func restHeaders(
        _ settings: UpstreamSettings,
        token: AccessToken,
        contentType: String? = nil
    ) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            (name: "Authorization", value: "Bearer \(token.value)"),
            (name: "AP-Device-Identifier", value: settings.device.identifierHeader),
            (name: "X-Device-Info", value: settings.device.infoHeader),
            (name: "Accept", value: "application/json"),
        ]
        if let contentType { headers.append((name: "Content-Type", value: contentType)) }
        return headers
    }
}
