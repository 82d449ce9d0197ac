import PreflightCore
import PreflightProtocol
import UpstreamHTTP

/// What `POST sessions` answered.
enum SessionAnswer: Sendable, Hashable {
    /// The device already has a profile: Adobe says to go on to authorization.
    case authenticated(mvpd: String?)
    /// A registration code; `missingParameters` says what the second screen must still supply.
    case code(code: String, mvpd: String?, notBefore: Int64, notAfter: Int64)
}

/// What `GET sessions/{code}` answered, as far as the agent uses it.
struct SessionStatus: Sendable, Hashable {
    var notAfter: Int64?
    var mvpd: String?
}

/// What `GET logout/{mvpd}` answered for that provider.
struct LogoutAction: Sendable, Hashable {
    var actionName: String?
    var actionType: String?
    var url: String?
}

extension PassUpstream {
    // MARK: Sign-in, authorization, logout (REST API v2)

    /// `POST /api/v2/{serviceProvider}/sessions` with a form body (`mvpd`, `domainName`, `redirectUrl`,
    /// each only when known).
    func createSession(
        _ requestor: String,
        mvpd: String?,
        redirectUrl: String?,
        domainName: String?,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<SessionAnswer> {
        var fields: [(name: String, value: String)] = []
        if let mvpd { fields.append((name: "mvpd", value: mvpd)) }
        if let domainName { fields.append((name: "domainName", value: domainName)) }
        if let redirectUrl { fields.append((name: "redirectUrl", value: redirectUrl)) }
        let body = Encoding.formBody(fields)
        let exchanged = await restCall(.createSession, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "POST",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))/sessions",
                headers: Self.restHeaders(settings, token: token, contentType: "application/x-www-form-urlencoded"),
                body: body,
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .createSession) { json -> SessionAnswer? in
            let mvpd = json["mvpd"]?.stringValue
            if let code = json["code"]?.stringValue, !code.isEmpty,
                let notAfter = Self.epochMilliseconds(json["notAfter"])
            {
                return .code(
                    code: code,
                    mvpd: mvpd,
                    notBefore: Self.epochMilliseconds(json["notBefore"]) ?? 0,
                    notAfter: notAfter
                )
            }
            // No code: only an `authorize` action (already authenticated) makes sense.
            guard json["actionName"]?.stringValue == "authorize" else { return nil }
            return .authenticated(mvpd: mvpd)
        }
    }

    /// `GET /api/v2/{serviceProvider}/sessions/{code}`.
    func sessionStatus(
        _ requestor: String,
        code: String,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<SessionStatus> {
        let exchanged = await restCall(.sessionStatus, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))"
                    + "/sessions/\(Encoding.percentEncoded(code))",
                headers: Self.restHeaders(settings, token: token),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .sessionStatus) { json -> SessionStatus? in
            guard case .object = json else { return nil }
            return SessionStatus(
                notAfter: Self.epochMilliseconds(json["notAfter"]),
                mvpd: json["existingParameters"]?["mvpd"]?.stringValue
            )
        }
    }

    /// `GET /api/v2/{serviceProvider}/profiles/code/{code}`: empty until the user has signed in.
    func profilesForCode(
        _ requestor: String,
        code: String,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<[AuthenticatedProfile]> {
        let exchanged = await restCall(.profileForCode, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))"
                    + "/profiles/code/\(Encoding.percentEncoded(code))",
                headers: Self.restHeaders(settings, token: token),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .profileForCode) { AuthenticatedProfile.list(from: $0) }
    }

    /// `POST /api/v2/{serviceProvider}/decisions/authorize/{mvpd}` for one resource.
    func authorize(
        _ requestor: String,
        mvpd: String,
        resource: String,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<AuthorizationDecision> {
        let body = JSONWriter.encode(["resources": [.string(resource)]])
        let exchanged = await restCall(.authorize, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "POST",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))"
                    + "/decisions/authorize/\(Encoding.percentEncoded(mvpd))",
                headers: Self.restHeaders(settings, token: token, contentType: "application/json"),
                body: body,
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .authorize) { json in
            AuthorizationDecision.list(from: json)?.first { $0.resource == resource }
        }
    }

    /// `GET /api/v2/{serviceProvider}/logout/{mvpd}`: the action Adobe asks for that provider.
    func logout(
        _ requestor: String,
        mvpd: String,
        redirectUrl: String?,
        deadline: MonotonicInstant
    ) async -> UpstreamResult<LogoutAction> {
        let query =
            redirectUrl.map {
                "?" + String(decoding: Encoding.formBody([(name: "redirectUrl", value: $0)]), as: UTF8.self)
            } ?? ""
        let exchanged = await restCall(.logout, deadline: deadline) { settings, token in
            HTTPRequest(
                method: "GET",
                url: "\(settings.configuration.baseURL)/api/v2/\(Encoding.percentEncoded(requestor))"
                    + "/logout/\(Encoding.percentEncoded(mvpd))\(query)",
                headers: Self.restHeaders(settings, token: token),
                timeout: settings.configuration.timeout
            )
        }
        return interpret(exchanged, .logout) { json -> LogoutAction? in
            guard let logouts = json["logouts"]?.objectValue else { return nil }
            let entry = logouts[mvpd] ?? logouts.members.first?.value
            return LogoutAction(
                actionName: entry?["actionName"]?.stringValue,
                actionType: entry?["actionType"]?.stringValue,
                url: entry?["url"]?.stringValue
            )
        }
    }

    /// A time Adobe sends as epoch milliseconds, a number or (SessionResponse) a decimal string.
    static func epochMilliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .string(let text)?: Int64(text)
        case let other?: other.doubleValue.map { Int64($0) }
        case nil: nil
        }
    }
}
