import PreflightProtocol

// The AccessEnabler's entitlement calls beyond `preauthorize` (docs/PROTOCOL.md, "Entitlement"): sign-in with a
// code on a second screen, playback authorization with a media token, logout, metadata and provider selection.
// Times are milliseconds since the Unix epoch, as on the wire (the library does not depend on Foundation).

/// A registration code for the second-screen sign-in: show `url` and `code` to the user, who opens the page on a
/// phone or computer and signs in with their TV provider there.
public struct SignInCode: Sendable, Hashable {
    /// The code to show, e.g. `UXD6NWP`. Every app of the requestor gets the same one while it lives.
    public let code: String
    /// The page the user opens (`.../api/v2/authenticate/{requestor}/{code}`).
    public let url: String
    /// When the code was issued (epoch milliseconds); nil in an `auth.code` event, which does not say.
    public let notBefore: Int64?
    /// When the code expires (epoch milliseconds).
    public let notAfter: Int64
    /// The TV provider the sign-in is for; nil when the user picks one on the second screen.
    public let mvpd: String?

    /// A code (tests and app-side fakes make them).
    public init(code: String, url: String, notBefore: Int64? = nil, notAfter: Int64, mvpd: String? = nil) {
        self.code = code
        self.url = url
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.mvpd = mvpd
    }
}

/// Whether the user is signed in with a TV provider, and until when: the AccessEnabler's authentication status
/// (`checkAuthentication`).
public struct AuthenticationStatus: Sendable, Hashable {
    /// Whether the box holds a valid sign-in for the requestor (of `mvpd`, when one was asked for).
    public let authenticated: Bool
    /// The provider signed in with; with an expired sign-in, the one it was.
    public let mvpd: String?
    /// The sign-in's validity (epoch milliseconds); nil when not signed in.
    public let notBefore: Int64?
    /// The sign-in's end (epoch milliseconds); nil when not signed in.
    public let notAfter: Int64?
    /// Adobe's profile type (`regular`, `temporary`, ...); nil when not signed in.
    public let type: String?
    /// Why not signed in: `authentication_session_missing` or `authentication_session_expired` (action
    /// `authentication`: the user must sign in), or what kept the agent from knowing (`network_error`,
    /// `requestor_not_configured`, ...). nil when signed in.
    public let status: Status?
    /// A sign-in under way (a code was issued and has not expired), when there is one.
    public let pending: SignInCode?

    /// A status (tests and app-side fakes make them).
    public init(
        authenticated: Bool,
        mvpd: String? = nil,
        notBefore: Int64? = nil,
        notAfter: Int64? = nil,
        type: String? = nil,
        status: Status? = nil,
        pending: SignInCode? = nil
    ) {
        self.authenticated = authenticated
        self.mvpd = mvpd
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.type = type
        self.status = status
        self.pending = pending
    }
}

/// What `getAuthentication` answers: signed in already, a code to show, or why neither.
public enum AuthenticationResult: Sendable, Hashable {
    /// The user is signed in already with `mvpd`, until `notAfter` (epoch milliseconds); no code was issued.
    case authenticated(mvpd: String, notAfter: Int64)
    /// A sign-in is under way: show the code and its url; `auth.authenticated` follows when the user has signed in
    /// (``PreflightClient/authenticationEvents(endpoint:)``).
    case code(SignInCode)
    /// No code could be had: Adobe's error, or the agent's (`network_error` when the agent cannot be reached).
    case failure(Status)
}

/// A media token for the player: the AccessEnabler's `setToken`. A secret of the app: hand it to the player and
/// to nothing else. Printing it (`description`, `debugDescription`, `dump`) shows only its last characters.
public struct MediaToken: Sendable, Hashable {
    /// Adobe's serialized token (base64), for the player's media verifier.
    public let serializedToken: String
    /// Validity of the token (epoch milliseconds).
    public let notBefore: Int64?
    /// End of the token's validity (epoch milliseconds).
    public let notAfter: Int64?

    /// A token (tests and app-side fakes make them).
    public init(serializedToken: String, notBefore: Int64? = nil, notAfter: Int64? = nil) {
        self.serializedToken = serializedToken
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// The token as a log may show it: an ellipsis and its last 4 characters (`…Pg==`), enough to tell two
    /// tokens apart and too little to use one; the ellipsis alone for a token shorter than 16 characters.
    public var masked: String {
        serializedToken.count < 16 ? "…" : "…" + serializedToken.suffix(4)
    }
}

extension MediaToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String {
        "MediaToken(\(masked), \(serializedToken.count) characters, notBefore: \(notBefore.map(String.init) ?? "nil"), "
            + "notAfter: \(notAfter.map(String.init) ?? "nil"))"
    }

    public var debugDescription: String { description }

    /// What `dump` and the default description of a value holding a token show: the masked token.
    public var customMirror: Mirror {
        Mirror(self, children: ["serializedToken": masked, "notBefore": notBefore as Any, "notAfter": notAfter as Any])
    }
}

/// A playback decision for one resource: the AccessEnabler's `getAuthorization` / `checkAuthorization` answer.
public struct AuthorizationResponse: Sendable, Hashable {
    /// The resource id asked about.
    public let resource: String
    /// Whether the user may watch it now.
    public let authorized: Bool
    /// Adobe's source of the decision: `mvpd`, `degradation`, `temppass`, `dummy`.
    public let source: String?
    /// The provider that decided.
    public let mvpd: String?
    /// When the decision ends (epoch milliseconds).
    public let notAfter: Int64?
    /// The token for the player, with a permit from `getAuthorization` (never from `checkAuthorization`).
    public let mediaToken: MediaToken?
    /// Adobe's error on a denial (or on a permit that carries a warning), as Adobe sent it.
    public let error: Status?
    /// No decision could be had: not signed in (`authentication_session_missing`, action `authentication`),
    /// Adobe's error for the whole request, or the agent's (`network_error` when it cannot be reached).
    public let status: Status?
    /// Whether `checkAuthorization` answered from a permit the agent held.
    public let fromCache: Bool

    /// A response (tests and app-side fakes make them).
    public init(
        resource: String,
        authorized: Bool,
        source: String? = nil,
        mvpd: String? = nil,
        notAfter: Int64? = nil,
        mediaToken: MediaToken? = nil,
        error: Status? = nil,
        status: Status? = nil,
        fromCache: Bool = false
    ) {
        self.resource = resource
        self.authorized = authorized
        self.source = source
        self.mvpd = mvpd
        self.notAfter = notAfter
        self.mediaToken = mediaToken
        self.error = error
        self.status = status
        self.fromCache = fromCache
    }
}

/// What `logout` answers. The agent forgets the sign-in at once whatever Adobe says.
public struct LogoutResult: Sendable, Hashable {
    /// Whether the box is signed out (false only for a requestor the agent does not serve).
    public let loggedOut: Bool
    /// The provider signed out of; nil when the box was not signed in with any.
    public let mvpd: String?
    /// Adobe's `actionName`: `logout` with a browser step, `complete` without one.
    public let actionName: String?
    /// Adobe's `actionType`: `interactive` with a browser step.
    public let actionType: String?
    /// A page the app may show the user to finish signing out at the provider (the AccessEnabler's
    /// `navigateToUrl`); nil when no browser step is needed.
    public let url: String?
    /// Adobe could not be told (the box is signed out all the same), or the agent could not be reached.
    public let status: Status?

    /// A result (tests and app-side fakes make them).
    public init(
        loggedOut: Bool,
        mvpd: String? = nil,
        actionName: String? = nil,
        actionType: String? = nil,
        url: String? = nil,
        status: Status? = nil
    ) {
        self.loggedOut = loggedOut
        self.mvpd = mvpd
        self.actionName = actionName
        self.actionType = actionType
        self.url = url
        self.status = status
    }
}

/// One metadata value of the signed-in user, as Adobe sent it: most are strings (`zip`, `userID`), some are
/// numbers, lists or objects.
public enum MetadataValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([MetadataValue])
    case object([String: MetadataValue])

    /// The value when it is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// A string as it is; any other value as JSON text.
    public var description: String {
        if case .string(let value) = self { return value }
        return JSONWriter.string(json)
    }

    init(_ json: JSONValue) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .integer(let value): self = .integer(value)
        case .number(let value): self = .number(value)
        case .string(let value): self = .string(value)
        case .array(let values): self = .array(values.map(MetadataValue.init))
        case .object(let members):
            self = .object(Dictionary(members.map { ($0.key, MetadataValue($0.value)) }, uniquingKeysWith: { $1 }))
        }
    }

    private var json: JSONValue {
        switch self {
        case .null: .null
        case .bool(let value): .bool(value)
        case .integer(let value): .integer(value)
        case .number(let value): .number(value)
        case .string(let value): .string(value)
        case .array(let values): .array(values.map(\.json))
        case .object(let members):
            .object(JSONObject(members.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value.json) }))
        }
    }
}

/// What `getMetadata` answers: every attribute of the signed-in user, or the one asked for.
public struct MetadataResponse: Sendable, Hashable {
    /// The key asked for; nil when every attribute was.
    public let key: String?
    /// Every attribute, name to value (`userID`, `upstreamUserID`, `zip`, `householdID`, ...), when every
    /// attribute was asked for and the user is signed in.
    public let attributes: [String: MetadataValue]?
    /// The value of `key`; nil when the profile does not have it (or every attribute was asked for).
    public let value: MetadataValue?
    /// Why there are no attributes: not signed in (`authentication_session_missing`), or the agent's error.
    public let status: Status?

    /// A response (tests and app-side fakes make them).
    public init(
        key: String? = nil,
        attributes: [String: MetadataValue]? = nil,
        value: MetadataValue? = nil,
        status: Status? = nil
    ) {
        self.key = key
        self.attributes = attributes
        self.value = value
        self.status = status
    }
}

/// A TV provider the requestor integrates with, for a picker: the AccessEnabler's `MVPD`.
public struct MVPD: Sendable, Hashable {
    /// The provider's id, e.g. `Cablevision` (the AccessEnabler's `ID`).
    public let id: String
    /// The name to show, e.g. `Optimum`.
    public let displayName: String?
    /// The provider's logo.
    public let logoUrl: String?

    /// A provider (tests and app-side fakes make them).
    public init(id: String, displayName: String? = nil, logoUrl: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.logoUrl = logoUrl
    }
}

/// The requestor's TV providers and the one chosen for the next sign-in (`getSelectedProvider`,
/// `setSelectedProvider`).
public struct ProviderSelection: Sendable, Hashable {
    /// The chosen provider's id; nil when none is chosen (the user picks on the second screen).
    public let selected: String?
    /// Every provider of the requestor's configuration, in Adobe's order.
    public let mvpds: [MVPD]
    /// Why the list is empty: the agent could not have the requestor's configuration, or could not be reached.
    public let status: Status?

    /// A selection (tests and app-side fakes make them).
    public init(selected: String?, mvpds: [MVPD], status: Status? = nil) {
        self.selected = selected
        self.mvpds = mvpds
        self.status = status
    }
}

// MARK: - The calls

extension PreflightClient {
    /// Whether the user is signed in with a TV provider, and until when: the AccessEnabler's
    /// `checkAuthentication()`. Answered from the sign-in the agent holds while it is valid; `fresh` asks Adobe
    /// Pass every time.
    ///
    /// Never throws: a user who is not signed in has `authenticated` false and a `status` with action
    /// `authentication`; an agent that cannot be reached gives `network_error`.
    ///
    /// - Parameters:
    ///   - mvpd: Count only a sign-in with this provider.
    ///   - fresh: Ask Adobe Pass rather than trust the sign-in the agent holds.
    public func checkAuthentication(mvpd: String? = nil, fresh: Bool = false) async -> AuthenticationStatus {
        var args: JSONObject = [:]
        if let mvpd { args["mvpd"] = .string(mvpd) }
        if fresh { args["fresh"] = true }
        switch await entitlement(.checkAuthentication, args) {
        case .success(let result): return EntitlementWire.authenticationStatus(from: result)
        case .failure(let status): return AuthenticationStatus(authenticated: false, status: status)
        }
    }

    /// Starts the second-screen sign-in, or joins the one under way: the AccessEnabler's `getAuthentication()`.
    ///
    /// Show the code and url of `.code` to the user. Subscribe to ``authenticationEvents(endpoint:)`` before
    /// calling this: `.authenticated` arrives when the user has signed in, `.failed` when the code expired or an
    /// app cancelled it. Never throws: `.failure` says why there is no code (`network_error` when the agent
    /// cannot be reached).
    ///
    /// - Parameters:
    ///   - mvpd: The provider to sign in with; nil: the selected one (``setSelectedProvider(_:)``), else the user
    ///     picks on the second screen.
    ///   - redirectUrl: Where the second screen goes after the sign-in.
    ///   - domainName: The app's domain, for providers that ask for it.
    public func getAuthentication(
        mvpd: String? = nil,
        redirectUrl: String? = nil,
        domainName: String? = nil
    ) async -> AuthenticationResult {
        var args: JSONObject = [:]
        if let mvpd { args["mvpd"] = .string(mvpd) }
        if let redirectUrl { args["redirectUrl"] = .string(redirectUrl) }
        if let domainName { args["domainName"] = .string(domainName) }
        switch await entitlement(.getAuthentication, args) {
        case .success(let result): return EntitlementWire.authenticationResult(from: result)
        case .failure(let status): return .failure(status)
        }
    }

    /// Gives up the sign-in under way and its code (`auth.failed` with reason `cancelled` follows). Returns
    /// whether a code was pending.
    ///
    /// - Throws: ``PreflightError`` when the agent could not be reached or refused the request (no requestor:
    ///   `requestor_missing`).
    public func cancelAuthentication() async throws(PreflightError) -> Bool {
        let result = try await entitlementRequest(.cancelAuthentication, [:])
        guard case .bool(let cancelled)? = result["cancelled"] else {
            throw .badReply("a cancelAuthentication result without cancelled")
        }
        return cancelled
    }

    /// A playback decision with the media token for the player: the AccessEnabler's `getAuthorization(_:)`.
    ///
    /// A permit carries `mediaToken`; a denial has `authorized` false and Adobe's `error`; `status` says why
    /// there is no decision (not signed in, `network_error`, ...). Never throws.
    public func getAuthorization(resource: String) async -> AuthorizationResponse {
        await authorization(.getAuthorization, resource: resource)
    }

    /// A playback decision without a token, from a permit the agent holds when there is one (`fromCache`): the
    /// AccessEnabler's `checkAuthorization(_:)`. Never throws.
    public func checkAuthorization(resource: String) async -> AuthorizationResponse {
        await authorization(.checkAuthorization, resource: resource)
    }

    /// Signs the user out of the TV provider, for every app of the requestor: the AccessEnabler's `logout()`.
    /// `auth.logout` follows. When `url` is there, Adobe asks for a browser step to finish at the provider (the
    /// AccessEnabler's `navigateToUrl`). Never throws.
    public func logout(mvpd: String? = nil) async -> LogoutResult {
        var args: JSONObject = [:]
        if let mvpd { args["mvpd"] = .string(mvpd) }
        switch await entitlement(.logout, args) {
        case .success(let result): return EntitlementWire.logoutResult(from: result)
        case .failure(let status): return LogoutResult(loggedOut: false, status: status)
        }
    }

    /// The signed-in user's metadata: every attribute, or the one named `key` (the AccessEnabler's
    /// `getMetadata`). Never throws: not signed in gives a `status`.
    public func getMetadata(key: String? = nil) async -> MetadataResponse {
        var args: JSONObject = [:]
        if let key { args["key"] = .string(key) }
        switch await entitlement(.getMetadata, args) {
        case .success(let result): return EntitlementWire.metadata(from: result)
        case .failure(let status): return MetadataResponse(key: key, status: status)
        }
    }

    /// The requestor's TV providers for a picker, and the one chosen: the AccessEnabler's
    /// `getSelectedProvider()`. Never throws: `status` says why the list is empty.
    public func getSelectedProvider() async -> ProviderSelection {
        switch await entitlement(.getSelectedProvider, [:]) {
        case .success(let result): return EntitlementWire.providerSelection(from: result)
        case .failure(let status): return ProviderSelection(selected: nil, mvpds: [], status: status)
        }
    }

    /// Chooses the TV provider the next sign-in uses (nil clears the choice), kept by the agent across restarts:
    /// the AccessEnabler's `setSelectedProvider(_:)`. Returns the providers and the choice.
    ///
    /// An agent that cannot be reached does not throw: as with the other calls, the answer has no providers and
    /// status `network_error`.
    ///
    /// - Throws: ``PreflightError`` when the agent refused the request: code `invalid_argument` (field `mvpd`)
    ///   for a provider the requestor does not integrate with (nothing changed); `requestor_missing` without a
    ///   requestor.
    public func setSelectedProvider(_ mvpd: String?) async throws(PreflightError) -> ProviderSelection {
        let args: JSONObject = ["mvpd": mvpd.map { JSONValue.string($0) } ?? .null]
        do throws(PreflightError) {
            return EntitlementWire.providerSelection(from: try await entitlementRequest(.setSelectedProvider, args))
        } catch {
            let status = PassWire.status(for: error)
            guard status.code == "network_error" || status.code == "server_response_format_unknown" else {
                throw error
            }
            return ProviderSelection(selected: nil, mvpds: [], status: status)
        }
    }

    // MARK: Callback forms

    /// ``checkAuthentication(mvpd:fresh:)`` with the AccessEnabler's two callbacks: `onFailure` when the status is
    /// one of the box (status 0: not signed in, `network_error`, ...), else `onResponse`. See
    /// ``AccessEnablerCallback`` for where they run.
    public func checkAuthentication(
        mvpd: String? = nil,
        fresh: Bool = false,
        didCompleteWith callback: AccessEnablerCallback<AuthenticationStatus>
    ) {
        Task { callback.complete(with: await checkAuthentication(mvpd: mvpd, fresh: fresh), failed: \.failedOnTheBox) }
    }

    /// ``getAuthentication(mvpd:redirectUrl:domainName:)`` with the AccessEnabler's two callbacks: `onFailure` with
    /// a `.failure` of the box (status 0), else `onResponse`.
    public func getAuthentication(
        mvpd: String? = nil,
        redirectUrl: String? = nil,
        domainName: String? = nil,
        didCompleteWith callback: AccessEnablerCallback<AuthenticationResult>
    ) {
        Task {
            let result = await getAuthentication(mvpd: mvpd, redirectUrl: redirectUrl, domainName: domainName)
            callback.complete(with: result, failed: \.failedOnTheBox)
        }
    }

    /// ``cancelAuthentication()`` with the AccessEnabler's two callbacks: `onResponse` with whether a code was
    /// pending, `onFailure` with false when the agent could not be reached.
    public func cancelAuthentication(didCompleteWith callback: AccessEnablerCallback<Bool>) {
        Task {
            do throws(PreflightError) {
                callback.onResponse(try await cancelAuthentication())
            } catch {
                callback.onFailure(false)
            }
        }
    }

    /// ``getAuthorization(resource:)`` with the AccessEnabler's two callbacks: `onFailure` when `status` is one of
    /// the box (status 0: not signed in, `network_error`, ...), else `onResponse` (a permit, or a denial).
    public func getAuthorization(
        resource: String,
        didCompleteWith callback: AccessEnablerCallback<AuthorizationResponse>
    ) {
        Task { callback.complete(with: await getAuthorization(resource: resource), failed: \.failedOnTheBox) }
    }

    /// ``checkAuthorization(resource:)`` with the AccessEnabler's two callbacks, split as for `getAuthorization`.
    public func checkAuthorization(
        resource: String,
        didCompleteWith callback: AccessEnablerCallback<AuthorizationResponse>
    ) {
        Task { callback.complete(with: await checkAuthorization(resource: resource), failed: \.failedOnTheBox) }
    }

    /// ``logout(mvpd:)`` with the AccessEnabler's two callbacks: `onFailure` when `status` is one of the box
    /// (status 0: Adobe could not be told, the agent could not be reached), else `onResponse`.
    public func logout(mvpd: String? = nil, didCompleteWith callback: AccessEnablerCallback<LogoutResult>) {
        Task { callback.complete(with: await logout(mvpd: mvpd), failed: \.failedOnTheBox) }
    }

    /// ``getMetadata(key:)`` with the AccessEnabler's two callbacks: `onFailure` when `status` is one of the box.
    public func getMetadata(key: String? = nil, didCompleteWith callback: AccessEnablerCallback<MetadataResponse>) {
        Task { callback.complete(with: await getMetadata(key: key), failed: \.failedOnTheBox) }
    }

    /// ``getSelectedProvider()`` with the AccessEnabler's two callbacks: `onFailure` when `status` is one of the
    /// box.
    public func getSelectedProvider(didCompleteWith callback: AccessEnablerCallback<ProviderSelection>) {
        Task { callback.complete(with: await getSelectedProvider(), failed: \.failedOnTheBox) }
    }

    /// ``setSelectedProvider(_:)`` with the AccessEnabler's two callbacks: `onFailure` with no providers and a
    /// status: `network_error` when the agent could not be reached, and where the async form throws, the agent's
    /// code (`invalid_argument` for an unknown provider).
    public func setSelectedProvider(_ mvpd: String?, didCompleteWith callback: AccessEnablerCallback<ProviderSelection>)
    {
        Task {
            do throws(PreflightError) {
                callback.complete(with: try await setSelectedProvider(mvpd), failed: \.failedOnTheBox)
            } catch {
                callback.onFailure(ProviderSelection(selected: nil, mvpds: [], status: PassWire.status(for: error)))
            }
        }
    }

    // MARK: Plumbing

    /// One entitlement command with the requestor added; every failure (no requestor, no reply, the agent's error
    /// reply) as the status an AccessEnabler call reports.
    private func entitlement(_ command: Command, _ args: JSONObject) async -> EntitlementReply {
        guard let requestor else { return .failure(EntitlementWire.noRequestor) }
        var args = args
        args["requestor"] = JSONValue.string(requestor)
        switch await send(command.wireName, args: args, timeout: configuration.preauthorizeTimeout) {
        case .success(let result): return .success(result)
        case .failure(let error): return .failure(PassWire.status(for: error))
        }
    }

    /// One entitlement command with the requestor added, for the calls that throw.
    private func entitlementRequest(_ command: Command, _ args: JSONObject) async throws(PreflightError) -> JSONValue {
        guard let requestor else {
            throw PreflightError(
                code: .requestorMissing,
                message: "No requestor: pass one to PreflightClient(requestor:) or call setRequestor(_:).",
                action: "configuration"
            )
        }
        var args = args
        args["requestor"] = JSONValue.string(requestor)
        return try await send(command.wireName, args: args, timeout: configuration.preauthorizeTimeout).get()
    }

    private func authorization(_ command: Command, resource: String) async -> AuthorizationResponse {
        switch await entitlement(command, ["resource": .string(resource)]) {
        case .success(let result): return EntitlementWire.authorization(from: result, resource: resource)
        case .failure(let status): return AuthorizationResponse(resource: resource, authorized: false, status: status)
        }
    }
}

/// A command's result, or the status an AccessEnabler call reports instead.
enum EntitlementReply {
    case success(JSONValue)
    case failure(Status)
}

extension AccessEnablerCallback {
    /// `onFailure` when the answer is a failure of the box, else `onResponse`.
    func complete(with response: Response, failed: (Response) -> Bool) {
        if failed(response) { onFailure(response) } else { onResponse(response) }
    }
}

// MARK: - The JSON

/// The results of the entitlement commands (docs/PROTOCOL.md, "Entitlement"), read apart from the calls so that
/// each reply shape is tested alone. Unknown fields are ignored; a result missing what the protocol promises
/// becomes a `server_response_format_unknown` status, never a crash.
enum EntitlementWire {
    static let noRequestor = Status(
        status: 0,
        code: "requestor_not_configured",
        message: "No requestor: pass one to PreflightClient(requestor:) or call setRequestor(_:).",
        action: "configuration"
    )

    static func authenticationStatus(from result: JSONValue) -> AuthenticationStatus {
        guard case .bool(let authenticated)? = result["authenticated"] else {
            return AuthenticationStatus(authenticated: false, status: unreadable("checkAuthentication"))
        }
        return AuthenticationStatus(
            authenticated: authenticated,
            mvpd: result["mvpd"]?.stringValue,
            notBefore: milliseconds(result["notBefore"]),
            notAfter: milliseconds(result["notAfter"]),
            type: result["type"]?.stringValue,
            status: result["status"].flatMap(PassWire.status(from:)),
            pending: result["pending"].flatMap(signInCode(from:))
        )
    }

    static func authenticationResult(from result: JSONValue) -> AuthenticationResult {
        if let status = result["status"].flatMap(PassWire.status(from:)) { return .failure(status) }
        if case .bool(true)? = result["authenticated"], let mvpd = result["mvpd"]?.stringValue,
            let notAfter = milliseconds(result["notAfter"])
        {
            return .authenticated(mvpd: mvpd, notAfter: notAfter)
        }
        if let code = signInCode(from: result) { return .code(code) }
        return .failure(unreadable("getAuthentication"))
    }

    /// `{"code", "url", "notBefore"?, "notAfter", "mvpd"}`: a `pending` object, a `getAuthentication` result or an
    /// `auth.code` event.
    static func signInCode(from value: JSONValue) -> SignInCode? {
        guard let code = value["code"]?.stringValue, let url = value["url"]?.stringValue,
            let notAfter = milliseconds(value["notAfter"])
        else { return nil }
        return SignInCode(
            code: code,
            url: url,
            notBefore: milliseconds(value["notBefore"]),
            notAfter: notAfter,
            mvpd: value["mvpd"]?.stringValue
        )
    }

    static func authorization(from result: JSONValue, resource: String) -> AuthorizationResponse {
        guard case .bool(let authorized)? = result["authorized"] else {
            return AuthorizationResponse(resource: resource, authorized: false, status: unreadable("authorization"))
        }
        var token: MediaToken?
        if let object = result["mediaToken"], let serialized = object["serializedToken"]?.stringValue {
            token = MediaToken(
                serializedToken: serialized,
                notBefore: milliseconds(object["notBefore"]),
                notAfter: milliseconds(object["notAfter"])
            )
        }
        var fromCache = false
        if case .bool(true)? = result["fromCache"] { fromCache = true }
        return AuthorizationResponse(
            resource: result["resource"]?.stringValue ?? resource,
            authorized: authorized,
            source: result["source"]?.stringValue,
            mvpd: result["mvpd"]?.stringValue,
            notAfter: milliseconds(result["notAfter"]),
            mediaToken: token,
            error: result["error"].flatMap(PassWire.status(from:)),
            status: result["status"].flatMap(PassWire.status(from:)),
            fromCache: fromCache
        )
    }

    static func logoutResult(from result: JSONValue) -> LogoutResult {
        guard case .bool(let loggedOut)? = result["loggedOut"] else {
            return LogoutResult(loggedOut: false, status: unreadable("logout"))
        }
        return LogoutResult(
            loggedOut: loggedOut,
            mvpd: result["mvpd"]?.stringValue,
            actionName: result["actionName"]?.stringValue,
            actionType: result["actionType"]?.stringValue,
            url: result["url"]?.stringValue,
            status: result["status"].flatMap(PassWire.status(from:))
        )
    }

    static func metadata(from result: JSONValue) -> MetadataResponse {
        let status = result["status"].flatMap(PassWire.status(from:))
        if let key = result["key"]?.stringValue {
            let value = result["value"].flatMap { $0 == .null ? nil : MetadataValue($0) }
            return MetadataResponse(key: key, value: value, status: status)
        }
        if let attributes = result["attributes"]?.objectValue {
            let values = Dictionary(attributes.map { ($0.key, MetadataValue($0.value)) }, uniquingKeysWith: { $1 })
            return MetadataResponse(attributes: values, status: status)
        }
        return MetadataResponse(status: status ?? unreadable("getMetadata"))
    }

    static func providerSelection(from result: JSONValue) -> ProviderSelection {
        let status = result["status"].flatMap(PassWire.status(from:))
        guard let list = result["mvpds"]?.arrayValue else {
            return ProviderSelection(selected: nil, mvpds: [], status: status ?? unreadable("provider"))
        }
        let mvpds = list.compactMap { item -> MVPD? in
            guard let id = item["id"]?.stringValue else { return nil }
            return MVPD(id: id, displayName: item["displayName"]?.stringValue, logoUrl: item["logoUrl"]?.stringValue)
        }
        return ProviderSelection(selected: result["selected"]?.stringValue, mvpds: mvpds, status: status)
    }

    /// An epoch-milliseconds field; nil when absent, null or not a number.
    static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .number(let number)? where number.isFinite: Int64(exactly: number.rounded())
        default: nil
        }
    }

    private static func unreadable(_ what: String) -> Status {
        Status(
            status: 0,
            code: "server_response_format_unknown",
            message: "preflightd sent a \(what) result in an unknown format.",
            action: "none"
        )
    }
}

/// Whether an answer's status is a failure of the box (status 0: the agent's codes, or the client's
/// `network_error`), which the callback forms report with `onFailure`, as `preauthorize` does.
extension Optional where Wrapped == Status {
    var isOfTheBox: Bool { self?.status == 0 }
}

extension AuthenticationStatus {
    var failedOnTheBox: Bool { status.isOfTheBox }
}

extension AuthenticationResult {
    var failedOnTheBox: Bool {
        if case .failure(let status) = self { return status.status == 0 }
        return false
    }
}

extension AuthorizationResponse {
    var failedOnTheBox: Bool { status.isOfTheBox }
}

extension LogoutResult {
    var failedOnTheBox: Bool { status.isOfTheBox }
}

extension MetadataResponse {
    var failedOnTheBox: Bool { status.isOfTheBox }
}

extension ProviderSelection {
    var failedOnTheBox: Bool { status.isOfTheBox }
}
