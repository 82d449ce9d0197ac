import PreflightProtocol

/// The Target visitor's ids and `resetExperience`, with the names of AEP's Target extension
/// (`Target.getThirdPartyId`, `Target.setTntId`, ...).
///
/// The agent is one Target visitor per box (docs/PROTOCOL.md, "Visitor identity"): every app reads and sets
/// the same third-party id, tntId and session, as apps on one phone share the AEP SDK's, and a
/// `resetExperience` by one app starts a new visitor for all of them.
///
/// Each call has AEP's form and an async form:
/// - the getters' AEP form calls back with the id, or with nil and the ``PreflightError`` when the agent could
///   not be reached or refused; the async form returns nil then (it cannot tell "none set" from "unknown": use
///   the callback form to know which);
/// - the setters' and `resetExperience`'s AEP form is fire-and-forget, as in AEP: it returns at once and
///   nothing says whether the agent took it (an unreachable agent, or a value the agent refuses, changes
///   nothing); the async form returns what the agent answered and throws ``PreflightError`` when it could not
///   be reached (``PreflightError/isUnreachable``) or refused the value (code `invalid_argument`, `field`
///   naming the argument).
///
/// The AEP forms hand their request to the client's I/O thread before they return, so requests go out in
/// the order the app made the calls: a `setThirdPartyId` made before a prefetch is carried by it. Every
/// call is safe to repeat (a set sets the same value again; a second reset starts another new visitor,
/// forgetting only what calls made since the first had learned), so all are retried as in ``Configuration``.
extension PreflightClient {
    // MARK: Third-party id

    /// The box's third-party id, sent to Target as `id.thirdPartyId` on every call: AEP's `getThirdPartyId`.
    ///
    /// - Returns: The id; nil when none is set (never set, cleared, or forgotten by ``resetExperience()``),
    ///   and also when the agent could not be reached or refused the request.
    public func getThirdPartyId() async -> String? {
        try? await visitorId(.getThirdPartyId, "thirdPartyId")
    }

    /// AEP's `Target.getThirdPartyId(_:)`: `completion` gets the id (nil when none is set) and nil, or nil
    /// and the ``PreflightError`` when the agent could not be reached or refused the request. It runs on a
    /// task of the global concurrent executor.
    public func getThirdPartyId(_ completion: @escaping @Sendable (String?, (any Error)?) -> Void) {
        postVisitorId(.getThirdPartyId, "thirdPartyId", args: nil, completion)
    }

    /// Sets the box's third-party id for every app (nil, or an empty string as AEP takes it, clears it): AEP's
    /// `Target.setThirdPartyId(_:)`. Fire-and-forget: returns at once, and when the agent cannot be reached
    /// or refuses the id (more than 128 characters) nothing changes and nothing says so; the async form does.
    /// The agent keeps the id across its restarts.
    public func setThirdPartyId(_ thirdPartyId: String?) {
        post(Command.setThirdPartyId.wireName, args: VisitorWire.setArguments("thirdPartyId", thirdPartyId)) { _ in }
    }

    /// Sets the box's third-party id for every app (nil or empty clears it) and returns the id now in effect.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `thirdPartyId`) for an id of more than 128
    ///   characters, which changes nothing; ``PreflightError/isUnreachable`` when the agent could not be
    ///   reached (nothing changed).
    @discardableResult
    public func setThirdPartyId(_ thirdPartyId: String?) async throws(PreflightError) -> String? {
        try await visitorId(
            .setThirdPartyId,
            "thirdPartyId",
            args: VisitorWire.setArguments("thirdPartyId", thirdPartyId)
        )
    }

    // MARK: tntId

    /// The box's Target visitor id, the `tntId` Target handed out (or an app set): AEP's `getTntId`.
    ///
    /// - Returns: The id; nil before Target's first answer, after ``resetExperience()`` or `setTntId(nil)`
    ///   until the next call to Target, and also when the agent could not be reached or refused the request.
    public func getTntId() async -> String? {
        try? await visitorId(.getTntId, "tntId")
    }

    /// AEP's `Target.getTntId(_:)`: `completion` gets the tntId (nil when there is none yet) and nil, or nil
    /// and the ``PreflightError`` when the agent could not be reached or refused the request. It runs on a
    /// task of the global concurrent executor.
    public func getTntId(_ completion: @escaping @Sendable (String?, (any Error)?) -> Void) {
        postVisitorId(.getTntId, "tntId", args: nil, completion)
    }

    /// Sets the box's tntId for every app, e.g. for a visitor migrated from another channel (nil, or an empty
    /// string as AEP takes it, clears it: Target hands out a new one on the next call): AEP's
    /// `Target.setTntId(_:)`. The edge host is learned again from Target's next answer. Fire-and-forget:
    /// returns at once, and when the agent cannot be reached or refuses the id (more than 128 characters)
    /// nothing changes and nothing says so; the async form does.
    public func setTntId(_ tntId: String?) {
        post(Command.setTntId.wireName, args: VisitorWire.setArguments("tntId", tntId)) { _ in }
    }

    /// Sets the box's tntId for every app (nil or empty clears it) and returns the tntId now in effect.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `tntId`) for an id of more than 128
    ///   characters, which changes nothing; ``PreflightError/isUnreachable`` when the agent could not be
    ///   reached (nothing changed).
    @discardableResult
    public func setTntId(_ tntId: String?) async throws(PreflightError) -> String? {
        try await visitorId(.setTntId, "tntId", args: VisitorWire.setArguments("tntId", tntId))
    }

    // MARK: Session id

    /// The session id the box's next Target call carries (a new one when the session timed out, after
    /// `target.sessionTimeout` without calls): AEP's `getSessionId`.
    ///
    /// - Returns: The session id; nil only when the agent could not be reached or refused the request.
    public func getSessionId() async -> String? {
        try? await visitorId(.getSessionId, "sessionId")
    }

    /// AEP's `Target.getSessionId(_:)`: `completion` gets the session id and nil, or nil and the
    /// ``PreflightError`` when the agent could not be reached or refused the request. It runs on a task of
    /// the global concurrent executor.
    public func getSessionId(_ completion: @escaping @Sendable (String?, (any Error)?) -> Void) {
        postVisitorId(.getSessionId, "sessionId", args: nil, completion)
    }

    /// Makes every app's Target calls carry `sessionId` from now on, e.g. a session begun in a web view: AEP's
    /// `Target.setSessionId(_:)`. It is renewed after `target.sessionTimeout` without calls, as any session
    /// is. The Delivery API takes 1 to 128 printable characters other than a space, `?` and `/`; the agent
    /// refuses anything else. AEP's nil or empty (forget the session) has no counterpart: the agent always
    /// has a session, and ``resetExperience()`` starts a new one.
    ///
    /// Fire-and-forget: returns at once, and when the agent cannot be reached or refuses the id nothing
    /// changes and nothing says so; the async form does.
    public func setSessionId(_ sessionId: String) {
        post(Command.setSessionId.wireName, args: ["sessionId": .string(sessionId)]) { _ in }
    }

    /// Makes every app's Target calls carry `sessionId` from now on, and returns it.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `sessionId`) for an id the Delivery API
    ///   does not take, which changes nothing; ``PreflightError/isUnreachable`` when the agent could not be
    ///   reached (nothing changed).
    @discardableResult
    public func setSessionId(_ sessionId: String) async throws(PreflightError) -> String {
        let answered = try await visitorId(.setSessionId, "sessionId", args: ["sessionId": .string(sessionId)])
        guard let answered else { throw .badReply("setSessionId answered a null sessionId") }
        return answered
    }

    // MARK: Experience Cloud visitor id and customer ids

    /// Every id of the box's visitor at once: tntId, third-party id, session id, Experience Cloud visitor id and
    /// customer ids.
    ///
    /// - Throws: ``PreflightError`` when the agent could not be reached (``PreflightError/isUnreachable``).
    public func getVisitorIds() async throws(PreflightError) -> TargetVisitorIds {
        let result = try await send(Command.getVisitorIds.wireName, args: nil, timeout: configuration.requestTimeout)
            .get()
        return try VisitorWire.visitorIds(from: result)
    }

    /// Every id of the box's visitor, in AEP's callback form: `completion` gets them and nil, or nil and the
    /// ``PreflightError`` when the agent could not be reached. It runs on a task of the global concurrent executor.
    public func getVisitorIds(_ completion: @escaping @Sendable (TargetVisitorIds?, (any Error)?) -> Void) {
        post(Command.getVisitorIds.wireName, args: nil) { outcome in
            do throws(PreflightError) {
                completion(try VisitorWire.visitorIds(from: outcome.get()), nil)
            } catch {
                completion(nil, error)
            }
        }
    }

    /// Sets the Experience Cloud visitor id (ECID) the app has, sent to Target as `id.marketingCloudVisitorId` for
    /// every app (the box runs no ECID service: AEP's Identity extension would supply it); nil, or an empty
    /// string, clears it and the customer ids with it. Fire-and-forget: returns at once, and when the agent
    /// cannot be reached or refuses the id (more than 128 characters) nothing changes and nothing says so.
    public func setMarketingCloudVisitorId(_ marketingCloudVisitorId: String?) {
        post(
            Command.setMarketingCloudVisitorId.wireName,
            args: VisitorWire.setArguments("marketingCloudVisitorId", marketingCloudVisitorId)
        ) { _ in }
    }

    /// Sets (nil or empty clears) the Experience Cloud visitor id and returns the one now in effect.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `marketingCloudVisitorId`) for an id of more
    ///   than 128 characters; ``PreflightError/isUnreachable`` when the agent could not be reached.
    @discardableResult
    public func setMarketingCloudVisitorId(_ marketingCloudVisitorId: String?) async throws(PreflightError) -> String? {
        try await visitorId(
            .setMarketingCloudVisitorId,
            "marketingCloudVisitorId",
            args: VisitorWire.setArguments("marketingCloudVisitorId", marketingCloudVisitorId)
        )
    }

    /// Sets the visitor's customer ids (AEP Identity's `syncIdentifiers`), sent to Target as `id.customerIds`;
    /// `[]` clears them. Target takes them only along with an Experience Cloud visitor id, so the agent refuses
    /// them without one. Fire-and-forget: when the agent cannot be reached or refuses, nothing changes and nothing
    /// says so; the async form does.
    public func setCustomerIds(_ customerIds: [TargetCustomerId]) {
        post(Command.setCustomerIds.wireName, args: VisitorWire.customerIdsArguments(customerIds)) { _ in }
    }

    /// Sets the visitor's customer ids (`[]` clears them) and returns those now in effect.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `customerIds`) without an Experience Cloud
    ///   visitor id, or for more than 50 ids (field `customerIds[i]...` for a bad one);
    ///   ``PreflightError/isUnreachable`` when the agent could not be reached.
    @discardableResult
    public func setCustomerIds(_ customerIds: [TargetCustomerId]) async throws(PreflightError) -> [TargetCustomerId] {
        let result = try await send(
            Command.setCustomerIds.wireName,
            args: VisitorWire.customerIdsArguments(customerIds),
            timeout: configuration.requestTimeout
        )
        .get()
        return try VisitorWire.customerIds(from: result, of: .setCustomerIds)
    }

    // MARK: resetExperience

    /// Starts a new Target visitor for every app of the box: AEP's `Target.resetExperience()`. The agent first
    /// sends the display notifications already queued (under the visitor they belong to), then forgets the
    /// tntId, the third-party id, the session and the edge host, as AEP does, and drops every cached offer,
    /// which AEP does not: they were decided for the old visitor. Apps see it as the event `target.reset`.
    ///
    /// Fire-and-forget: returns at once, and when the agent cannot be reached nothing changes and nothing says
    /// so. A prefetch made right after it can reach Target while the agent is still sending the notifications,
    /// under the old visitor: to prefetch for the new visitor, `await` the async form first.
    public func resetExperience() {
        post(Command.resetExperience.wireName, args: nil, timeout: configuration.preauthorizeTimeout) { _ in }
    }

    /// Starts a new Target visitor for every app of the box (see ``resetExperience()``) and returns how many
    /// cached offers were dropped, once the reset is done.
    ///
    /// Can take up to the agent's Target timeout (`target.timeout`, 5 s) and longer with many notifications
    /// queued, so each attempt waits ``Configuration/preauthorizeTimeout``, not the shorter
    /// ``Configuration/requestTimeout``.
    ///
    /// - Throws: ``PreflightError`` when the agent could not be reached (``PreflightError/isUnreachable``):
    ///   nothing changed then, unless the agent got the request and its answer was what did not come back.
    @discardableResult
    public func resetExperience() async throws(PreflightError) -> Int {
        let result = try await send(
            Command.resetExperience.wireName,
            args: nil,
            timeout: configuration.preauthorizeTimeout
        )
        .get()
        return try VisitorWire.cleared(from: result)
    }

    // MARK: Plumbing

    /// A visitor command's id, for the async forms.
    private func visitorId(
        _ command: Command,
        _ key: String,
        args: JSONObject? = nil
    ) async throws(PreflightError) -> String? {
        let result = try await send(command.wireName, args: args, timeout: configuration.requestTimeout).get()
        return try VisitorWire.id(key, of: command, from: result)
    }

    /// A visitor command posted at once, for the getters' AEP forms.
    private func postVisitorId(
        _ command: Command,
        _ key: String,
        args: JSONObject?,
        _ completion: @escaping @Sendable (String?, (any Error)?) -> Void
    ) {
        post(command.wireName, args: args) { outcome in
            do throws(PreflightError) {
                completion(try VisitorWire.id(key, of: command, from: outcome.get()), nil)
            } catch {
                completion(nil, error)
            }
        }
    }

    /// A command posted at once with the Target commands' timeout.
    private func post(
        _ command: String,
        args: JSONObject?,
        then handler: @escaping @Sendable (Result<JSONValue, PreflightError>) -> Void
    ) {
        post(command, args: args, timeout: configuration.requestTimeout, then: handler)
    }
}

/// AEP's `MobileVisitorAuthenticationState`: how far a customer id is signed in.
public enum MobileVisitorAuthenticationState: String, Sendable, Hashable {
    /// Not known (the default).
    case unknown
    /// Signed in.
    case authenticated
    /// Signed out.
    case loggedOut = "logged_out"
}

/// One customer id of the visitor, sent to Target in `id.customerIds` (AEP Identity's synced identifiers).
public struct TargetCustomerId: Sendable, Hashable {
    /// The id in the customer's system.
    public var id: String
    /// The data source's integration code (`crm`, ...).
    public var integrationCode: String
    /// How far it is signed in.
    public var authenticatedState: MobileVisitorAuthenticationState

    /// A customer id.
    public init(
        id: String,
        integrationCode: String,
        authenticatedState: MobileVisitorAuthenticationState = .unknown
    ) {
        self.id = id
        self.integrationCode = integrationCode
        self.authenticatedState = authenticatedState
    }
}

/// Every id of the box's Target visitor (`getVisitorIds`); nil where none is set.
public struct TargetVisitorIds: Sendable, Hashable {
    /// The tntId.
    public var tntId: String?
    /// The third-party id.
    public var thirdPartyId: String?
    /// The session id the next call carries.
    public var sessionId: String?
    /// The Experience Cloud visitor id.
    public var marketingCloudVisitorId: String?
    /// The customer ids.
    public var customerIds: [TargetCustomerId]

    /// A value (tests and app-side fakes make them).
    public init(
        tntId: String? = nil,
        thirdPartyId: String? = nil,
        sessionId: String? = nil,
        marketingCloudVisitorId: String? = nil,
        customerIds: [TargetCustomerId] = []
    ) {
        self.tntId = tntId
        self.thirdPartyId = thirdPartyId
        self.sessionId = sessionId
        self.marketingCloudVisitorId = marketingCloudVisitorId
        self.customerIds = customerIds
    }
}

/// The JSON of the visitor commands (docs/PROTOCOL.md, "Visitor identity"), kept apart from the calls so that
/// it is tested alone.
enum VisitorWire {
    /// `setThirdPartyId` / `setTntId` args: `{"thirdPartyId": "household-42"}`, or null to clear. An empty
    /// string clears too, as AEP's setters take it (the agent refuses an empty id).
    static func setArguments(_ key: String, _ id: String?) -> JSONObject {
        guard let id, !id.isEmpty else { return [key: .null] }
        return [key: .string(id)]
    }

    /// The id a visitor command answered: the string, or nil for the JSON null the agent answers when there
    /// is none. A result without the key, or with another type, is a bad reply.
    static func id(_ key: String, of command: Command, from result: JSONValue) throws(PreflightError) -> String? {
        switch result[key] {
        case .string(let id)?: return id
        case .null?: return nil
        default: throw .badReply("\(command.wireName) result without \(key)")
        }
    }

    /// `setCustomerIds` args: `{"customerIds":[{"id","integrationCode","authenticatedState"}]}`.
    static func customerIdsArguments(_ customerIds: [TargetCustomerId]) -> JSONObject {
        [
            "customerIds": .array(
                customerIds.map {
                    .object([
                        "id": .string($0.id), "integrationCode": .string($0.integrationCode),
                        "authenticatedState": .string($0.authenticatedState.rawValue),
                    ])
                }
            )
        ]
    }

    /// The `customerIds` of a result; an entry the client cannot read is a bad reply.
    static func customerIds(from result: JSONValue, of command: Command) throws(PreflightError) -> [TargetCustomerId] {
        guard let entries = result["customerIds"]?.arrayValue else {
            throw .badReply("\(command.wireName) result without customerIds")
        }
        var ids: [TargetCustomerId] = []
        for entry in entries {
            guard let id = entry["id"]?.stringValue, let code = entry["integrationCode"]?.stringValue,
                let state = MobileVisitorAuthenticationState(
                    rawValue: entry["authenticatedState"]?.stringValue ?? "unknown"
                )
            else { throw .badReply("\(command.wireName) answered a customer id it cannot read") }
            ids.append(TargetCustomerId(id: id, integrationCode: code, authenticatedState: state))
        }
        return ids
    }

    /// A `getVisitorIds` result.
    static func visitorIds(from result: JSONValue) throws(PreflightError) -> TargetVisitorIds {
        let command = Command.getVisitorIds
        return TargetVisitorIds(
            tntId: try id("tntId", of: command, from: result),
            thirdPartyId: try id("thirdPartyId", of: command, from: result),
            sessionId: try id("sessionId", of: command, from: result),
            marketingCloudVisitorId: try id("marketingCloudVisitorId", of: command, from: result),
            customerIds: try customerIds(from: result, of: command)
        )
    }

    /// A `resetExperience` result: `{"cleared": N}`, the cached offers dropped.
    static func cleared(from result: JSONValue) throws(PreflightError) -> Int {
        guard let cleared = result["cleared"]?.doubleValue.flatMap({ Int(exactly: $0) }), cleared >= 0 else {
            throw .badReply("resetExperience result without cleared")
        }
        return cleared
    }
}
