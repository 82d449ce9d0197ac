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

    public var command: Command {
        switch self {
        case .getThirdPartyId: .getThirdPartyId
        case .setThirdPartyId: .setThirdPartyId
        case .getTntId: .getTntId
        case .setTntId: .setTntId
        case .getSessionId: .getSessionId
        case .setSessionId: .setSessionId
        case .resetExperience: .resetExperience
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
        default: return nil
        }
    }

    /// A member that must be there: a string of 1 to `idLength` characters, or null.
    private static func nullable(_ args: ArgumentReader, _ key: String) throws(ProtocolError) -> String? {
        guard args.has(key) else { throw .invalidArgument(args.fieldPath(key), "\(key) is required (null clears it)") }
        return try EntitlementCommand.bounded(args, key, idLength)
    }
}
