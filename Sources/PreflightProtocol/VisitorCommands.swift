/// The Target visitor's identity, as AEP's Target extension lets an app read and set it: one visitor per
/// box, shared by every app (docs/PROTOCOL.md, "Visitor identity").
public enum VisitorCommand: Sendable, Hashable {
    case getThirdPartyId
    /// nil clears it.
    case setThirdPartyId(String?)
    case getTntId
    /// nil clears it (Target hands out a new one on the next call).
    case setTntId(String?)
    case getSessionId
    case setSessionId(String)
    /// New visitor: tntId, thirdPartyId, session and edge host forgotten.
    case resetExperience
    /// Every id at once: tntId, thirdPartyId, sessionId, marketingCloudVisitorId, customerIds.
    case getVisitorIds
    /// nil clears it (and the customer ids, which Target takes only along with it).
    case setMarketingCloudVisitorId(String?)
    /// Replaces the customer ids (an empty list clears them).
    case setCustomerIds([CustomerId])

    /// Whether it sets an id the box would keep (a session id is not kept).
    public var setsAnId: Bool {
        switch self {
        case .setThirdPartyId, .setTntId, .setMarketingCloudVisitorId, .setCustomerIds: true
        case .getThirdPartyId, .getTntId, .getSessionId, .setSessionId, .resetExperience, .getVisitorIds: false
        }
    }

    public var command: Command {
        switch self {
        case .getThirdPartyId: .getThirdPartyId
        case .setThirdPartyId: .setThirdPartyId
        case .getTntId: .getTntId
        case .setTntId: .setTntId
        case .getSessionId: .getSessionId
        case .setSessionId: .setSessionId
        case .resetExperience: .resetExperience
        case .getVisitorIds: .getVisitorIds
        case .setMarketingCloudVisitorId: .setMarketingCloudVisitorId
        case .setCustomerIds: .setCustomerIds
        }
    }

    /// The Delivery API's `maxLength` of `tntId` and `thirdPartyId`, and its bound on `sessionId`.
    public static let idLength = 128

    /// Reads the arguments of a visitor command; nil for any other command.
    static func decode(_ command: Command, _ args: ArgumentReader) throws(ProtocolError) -> VisitorCommand? {
        switch command {
        case .getThirdPartyId: return .getThirdPartyId
        case .setThirdPartyId: return .setThirdPartyId(try nullable(args, "thirdPartyId"))
        case .getTntId: return .getTntId
        case .setTntId: return .setTntId(try nullable(args, "tntId"))
        case .getSessionId: return .getSessionId
        case .setSessionId:
            let sessionId = try EntitlementCommand.required(args, "sessionId", idLength)
            // The Delivery API: any printable characters but a space, `?` or `/`.
            guard sessionId.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && $0 != "?" && $0 != "/" })
            else {
                throw .invalidArgument(
                    args.fieldPath("sessionId"),
                    "sessionId may hold printable characters other than a space, ? and /"
                )
            }
            return .setSessionId(sessionId)
        case .resetExperience: return .resetExperience
        case .getVisitorIds: return .getVisitorIds
        case .setMarketingCloudVisitorId:
            return .setMarketingCloudVisitorId(try nullable(args, "marketingCloudVisitorId"))
        case .setCustomerIds: return .setCustomerIds(try CustomerId.decodeList(args))
        default: return nil
        }
    }

    /// A member that must be there: a string of 1 to `idLength` characters, or null.
    private static func nullable(_ args: ArgumentReader, _ key: String) throws(ProtocolError) -> String? {
        guard args.has(key) else { throw .invalidArgument(args.fieldPath(key), "\(key) is required (null clears it)") }
        return try EntitlementCommand.bounded(args, key, idLength)
    }
}

/// A customer id of the visitor (the Delivery API's `CustomerId`): an id in one of the account's customer
/// attribute data sources.
public struct CustomerId: Sendable, Hashable {
    public var id: String
    /// The data source's alias in the Experience Cloud.
    public var integrationCode: String
    /// `unknown`, `authenticated`, `logged_out`.
    public var authenticatedState: String

    public static let states = ["unknown", "authenticated", "logged_out"]
    /// The Delivery API's bounds.
    public static let maxCount = 50
    public static let integrationCodeLength = 50

    public init(id: String, integrationCode: String, authenticatedState: String = "unknown") {
        self.id = id
        self.integrationCode = integrationCode
        self.authenticatedState = authenticatedState
    }

    /// `customerIds`: 0 to 50 of `{id, integrationCode, authenticatedState?}`, integration codes unique.
    static func decodeList(_ args: ArgumentReader) throws(ProtocolError) -> [CustomerId] {
        let elements = try args.requiredArray("customerIds")
        guard elements.count <= maxCount else {
            throw .invalidArgument(args.fieldPath("customerIds"), "at most \(maxCount) customer ids")
        }
        var ids: [CustomerId] = []
        for reader in try args.objects(in: "customerIds", elements) {
            try reader.onlyKeys(["id", "integrationCode", "authenticatedState"], describing: "a customer id")
            let id = try EntitlementCommand.required(reader, "id", VisitorCommand.idLength)
            let code = try EntitlementCommand.required(reader, "integrationCode", integrationCodeLength)
            guard !ids.contains(where: { $0.integrationCode == code }) else {
                throw .invalidArgument(reader.fieldPath("integrationCode"), "integration code \(code) is given twice")
            }
            let state = try reader.optionalString("authenticatedState") ?? "unknown"
            guard states.contains(state) else {
                throw .invalidArgument(
                    reader.fieldPath("authenticatedState"),
                    "authenticatedState is one of \(states.joined(separator: ", "))"
                )
            }
            ids.append(CustomerId(id: id, integrationCode: code, authenticatedState: state))
        }
        return ids
    }

    /// The Delivery API's `CustomerId` object.
    public var json: JSONValue {
        [
            "id": .string(id), "integrationCode": .string(integrationCode),
            "authenticatedState": .string(authenticatedState),
        ]
    }

    public init?(json: JSONValue) {
        guard let id = json["id"]?.stringValue, let code = json["integrationCode"]?.stringValue else { return nil }
        self.init(
            id: id,
            integrationCode: code,
            authenticatedState: json["authenticatedState"]?.stringValue ?? "unknown"
        )
    }
}
