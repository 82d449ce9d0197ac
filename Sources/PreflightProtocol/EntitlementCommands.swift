/// Arguments of the Adobe Pass entitlement commands (the AccessEnabler's job beyond `preauthorize`):
/// sign-in by code on a second screen, playback authorization, logout, metadata, provider selection.
/// docs/PROTOCOL.md, "Entitlement".
public enum EntitlementCommand: Sendable, Hashable {
    /// `checkAuthentication`: is the user signed in; `fresh` asks Adobe even when a valid profile is held.
    case checkAuthentication(requestor: String, mvpd: String?, fresh: Bool)
    /// `getAuthentication`: starts (or joins) the second-screen sign-in.
    case getAuthentication(SignInRequest)
    /// `cancelAuthentication`: gives up the pending sign-in.
    case cancelAuthentication(requestor: String)
    /// `getAuthorization`: a decision with a media token for the player.
    case getAuthorization(requestor: String, resource: String)
    /// `checkAuthorization`: a decision, from a held permit when there is one.
    case checkAuthorization(requestor: String, resource: String)
    /// `logout`.
    case logout(requestor: String, mvpd: String?)
    /// `getMetadata`: the profile's attributes, or one of them.
    case getMetadata(requestor: String, key: String?)
    /// `getSelectedProvider`.
    case getSelectedProvider(requestor: String)
    /// `setSelectedProvider`; nil clears the choice.
    case setSelectedProvider(requestor: String, mvpd: String?)

    public var command: Command {
        switch self {
        case .checkAuthentication: .checkAuthentication
        case .getAuthentication: .getAuthentication
        case .cancelAuthentication: .cancelAuthentication
        case .getAuthorization: .getAuthorization
        case .checkAuthorization: .checkAuthorization
        case .logout: .logout
        case .getMetadata: .getMetadata
        case .getSelectedProvider: .getSelectedProvider
        case .setSelectedProvider: .setSelectedProvider
        }
    }

    /// Longest MVPD id, metadata key, redirect URL and domain name an app may send.
    public static let mvpdLength = 256
    public static let keyLength = 256
    public static let urlLength = 2048

    /// Reads the arguments of an entitlement command; nil for any other command.
    static func decode(_ command: Command, _ args: ArgumentReader) throws(ProtocolError) -> EntitlementCommand? {
        switch command {
        case .checkAuthentication:
            return .checkAuthentication(
                requestor: try requestor(args),
                mvpd: try bounded(args, "mvpd", mvpdLength),
                fresh: try args.optionalBool("fresh") ?? false
            )
        case .getAuthentication:
            return .getAuthentication(
                SignInRequest(
                    requestor: try requestor(args),
                    mvpd: try bounded(args, "mvpd", mvpdLength),
                    redirectUrl: try bounded(args, "redirectUrl", urlLength),
                    domainName: try bounded(args, "domainName", urlLength)
                )
            )
        case .cancelAuthentication:
            return .cancelAuthentication(requestor: try requestor(args))
        case .getAuthorization:
            return .getAuthorization(requestor: try requestor(args), resource: try resource(args))
        case .checkAuthorization:
            return .checkAuthorization(requestor: try requestor(args), resource: try resource(args))
        case .logout:
            return .logout(requestor: try requestor(args), mvpd: try bounded(args, "mvpd", mvpdLength))
        case .getMetadata:
            return .getMetadata(requestor: try requestor(args), key: try bounded(args, "key", keyLength))
        case .getSelectedProvider:
            return .getSelectedProvider(requestor: try requestor(args))
        case .setSelectedProvider:
            guard args.has("mvpd") else {
                throw .invalidArgument(args.fieldPath("mvpd"), "mvpd is required (null clears)")
            }
            return .setSelectedProvider(requestor: try requestor(args), mvpd: try bounded(args, "mvpd", mvpdLength))
        default:
            return nil
        }
    }

    /// `requestor`, as `preauthorize` reads it.
    static func requestor(_ args: ArgumentReader) throws(ProtocolError) -> String {
        try required(args, "requestor", PreauthorizeCommand.requestorLength)
    }

    static func resource(_ args: ArgumentReader) throws(ProtocolError) -> String {
        try required(args, "resource", PreauthorizeCommand.resourceLength)
    }

    /// A required string of 1 to `limit` characters.
    static func required(_ args: ArgumentReader, _ key: String, _ limit: Int) throws(ProtocolError) -> String {
        let value = try args.requiredString(key)
        guard (1...limit).contains(value.scalarCount) else {
            throw .invalidArgument(args.fieldPath(key), "\(key) must be 1 to \(limit) characters")
        }
        return value
    }

    /// An optional string of 1 to `limit` characters.
    static func bounded(_ args: ArgumentReader, _ key: String, _ limit: Int) throws(ProtocolError) -> String? {
        guard let value = try args.optionalString(key) else { return nil }
        guard (1...limit).contains(value.scalarCount) else {
            throw .invalidArgument(args.fieldPath(key), "\(key) must be 1 to \(limit) characters")
        }
        return value
    }
}

/// `getAuthentication`'s arguments: what the sign-in session is created with.
public struct SignInRequest: Sendable, Hashable {
    public var requestor: String
    /// The provider to sign in with; absent: the selected provider, else the user picks it on the second
    /// screen.
    public var mvpd: String?
    public var redirectUrl: String?
    public var domainName: String?

    public init(requestor: String, mvpd: String? = nil, redirectUrl: String? = nil, domainName: String? = nil) {
        self.requestor = requestor
        self.mvpd = mvpd
        self.redirectUrl = redirectUrl
        self.domainName = domainName
    }
}
