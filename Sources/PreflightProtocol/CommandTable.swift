/// Every command of the wire protocol, declared once: its wire name (the raw value) and, in
/// ``declaration``, which endpoints take it, whether the one-pass reader reads it, and the line
/// docs/PROTOCOL.md's command table shows for it.
///
/// Everything else comes from here: the agent's dispatch (`unknown_command` for a name not in this
/// table, `not_permitted` for an admin command on the app endpoint), `FastRequest`'s command names,
/// the client library's and `preflightctl`'s calls, `preflightctl call`'s completion list, and the
/// doc's table (a test compares the two). The agent's handler for each command is a `switch` over this
/// type, so the compiler refuses a command without one.
///
/// To add a command: a `case` here with its declaration below, then its handler in the agent
/// (docs/ARCHITECTURE.md, "Adding a command").
public enum Command: String, CaseIterable, Sendable, Hashable {
    case ping
    case prefetch
    case loadRequests
    case clearPrefetchCache
    case clickedLocation
    case displayedLocations
    case getThirdPartyId
    case setThirdPartyId
    case getTntId
    case setTntId
    case getSessionId
    case setSessionId
    case resetExperience
    case getVisitorIds
    case setMarketingCloudVisitorId
    case setCustomerIds
    case preauthorize
    case checkAuthentication
    case getAuthentication
    case cancelAuthentication
    case getAuthorization
    case checkAuthorization
    case logout
    case getMetadata
    case getSelectedProvider
    case setSelectedProvider
    case status
    case stats
    case offersList = "offers.list"
    case offersShow = "offers.show"
    case offersClear = "offers.clear"
    case targetPreview = "target.preview"
    case notificationsStatus = "notifications.status"
    case notificationsFlush = "notifications.flush"
    case configShow = "config.show"
    case authList = "auth.list"
    case authClear = "auth.clear"
    case targetPrivacy = "target.privacy"
    case decisioningEvaluate = "decisioning.evaluate"

    /// What the table says about this command besides its name and handler.
    public var declaration: CommandDeclaration {
        switch self {
        case .ping:
            CommandDeclaration(.anyEndpoint, reader: .oneShot, "the agent's version and uptime")
        case .prefetch:
            CommandDeclaration(.anyEndpoint, "fetches mboxes from Target into the cache (targetPrefetchContent)")
        case .loadRequests:
            CommandDeclaration(
                .anyEndpoint,
                reader: .oneShot,
                "offers from the cache, else Target, else the default content"
            )
        case .clearPrefetchCache:
            CommandDeclaration(.anyEndpoint, "empties the prefetch cache (targetPrefetchClearCache)")
        case .clickedLocation:
            CommandDeclaration(
                .anyEndpoint,
                "tells Target an offer was clicked (a click notification, queued and journaled)"
            )
        case .displayedLocations:
            CommandDeclaration(
                .anyEndpoint,
                "tells Target the app now shows offers it loaded with `notifyDisplay: false`"
            )
        case .getThirdPartyId:
            CommandDeclaration(.anyEndpoint, "the box's Target third-party id (getThirdPartyId)")
        case .setThirdPartyId:
            CommandDeclaration(
                .anyEndpoint,
                "sets (or clears) the third-party id sent as `id.thirdPartyId`, kept across restarts"
            )
        case .getTntId:
            CommandDeclaration(.anyEndpoint, "the Target visitor id Target gave this box (getTntId)")
        case .setTntId:
            CommandDeclaration(.anyEndpoint, "sets the Target visitor id, for an app that migrates a visitor")
        case .getSessionId:
            CommandDeclaration(.anyEndpoint, "the current Target session id (getSessionId)")
        case .setSessionId:
            CommandDeclaration(.anyEndpoint, "sets the Target session id, for a session shared with another channel")
        case .resetExperience:
            CommandDeclaration(
                .anyEndpoint,
                "a new Target visitor: ids, session, edge host and cached offers forgotten"
            )
        case .getVisitorIds:
            CommandDeclaration(
                .anyEndpoint,
                "every Target visitor id at once (tntId, thirdPartyId, session, customer ids)"
            )
        case .setMarketingCloudVisitorId:
            CommandDeclaration(
                .anyEndpoint,
                "sets (or clears) the Experience Cloud visitor id sent as `id.marketingCloudVisitorId`"
            )
        case .setCustomerIds:
            CommandDeclaration(
                .anyEndpoint,
                "sets the customer ids (with `authenticatedState`) sent as `id.customerIds`"
            )
        case .preauthorize:
            CommandDeclaration(
                .anyEndpoint,
                reader: .oneShot,
                "one Adobe Pass decision per resource (AccessEnabler preauthorize)"
            )
        case .checkAuthentication:
            CommandDeclaration(.anyEndpoint, "whether the user is signed in with a TV provider, and until when")
        case .getAuthentication:
            CommandDeclaration(.anyEndpoint, "starts (or joins) the sign-in with a code on a second screen")
        case .cancelAuthentication:
            CommandDeclaration(.anyEndpoint, "gives up the pending sign-in and its code")
        case .getAuthorization:
            CommandDeclaration(.anyEndpoint, "a playback decision with the media token for the player")
        case .checkAuthorization:
            CommandDeclaration(
                .anyEndpoint,
                "a playback decision without a token, from a held permit when there is one"
            )
        case .logout:
            CommandDeclaration(.anyEndpoint, "signs the user out of the TV provider; may ask for a browser step")
        case .getMetadata:
            CommandDeclaration(.anyEndpoint, "the signed-in user's metadata (userID, zip, …)")
        case .getSelectedProvider:
            CommandDeclaration(.anyEndpoint, "the requestor's TV providers for a picker, and the one chosen")
        case .setSelectedProvider:
            CommandDeclaration(.anyEndpoint, "chooses the TV provider the next sign-in uses")
        case .status:
            CommandDeclaration(.adminOnly, "agent, upstream health, cache, visitor and queue on one screen")
        case .stats:
            CommandDeclaration(.adminOnly, "latency per command and upstream, hit ratio; `reset` after reading")
        case .offersList:
            CommandDeclaration(.adminOnly, "the cached offers, most recently used first")
        case .offersShow:
            CommandDeclaration(.adminOnly, "one cached offer with its content, state and options")
        case .offersClear:
            CommandDeclaration(.adminOnly, "drops one cached offer, or all")
        case .targetPreview:
            CommandDeclaration(
                .adminOnly,
                "Target's QA mode for every app, for a while (a marketer's preview link); ends by itself"
            )
        case .notificationsStatus:
            CommandDeclaration(.adminOnly, "the display-notification queue")
        case .notificationsFlush:
            CommandDeclaration(.adminOnly, "sends the queued notifications now, ignoring the backoff")
        case .configShow:
            CommandDeclaration(.adminOnly, "the effective configuration, secrets redacted")
        case .authList:
            CommandDeclaration(.adminOnly, "registration, token, and per requestor configuration, session, decisions")
        case .authClear:
            CommandDeclaration(.adminOnly, "drops profiles and cached decisions; the registration on request")
        case .targetPrivacy:
            CommandDeclaration(.adminOnly, "reads or sets the box's Target privacy status (optedIn, optedOut, unknown)")
        case .decisioningEvaluate:
            CommandDeclaration(
                .adminOnly,
                "what on-device decisioning answers a Delivery request from a given artifact; changes nothing"
            )
        }
    }

    /// The command a wire name names, or nil: one hash lookup.
    public init?(wireName: String) {
        guard let command = Self.byWireName[wireName] else { return nil }
        self = command
    }

    /// The name on the wire (`cmd`).
    public var wireName: String { rawValue }

    /// The case's place in the declaration above, 0 first: an array index where a dictionary keyed by the
    /// command would hash its name (the raw value). A fieldless enum is stored as its case's number, in
    /// declaration order; `CommandTableTests` checks that for every case.
    public var ordinal: Int {
        withUnsafeBytes(of: self) { Int($0[0]) }
    }

    private static let byWireName = [String: Command](uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })
}

/// Which endpoints take a command.
public enum CommandAccess: Sendable, Hashable {
    /// The app endpoint and the admin endpoint.
    case anyEndpoint
    /// The admin endpoint only; on the app endpoint the command gets `not_permitted`.
    case adminOnly
}

/// How a command's arguments are read.
public enum CommandReader: Sendable, Hashable {
    /// The general path: `Request.decode`, then the command's argument reader.
    case general
    /// `FastRequest` reads the plain shape in one pass; anything else falls back to the general path.
    case oneShot
}

/// A command's row of the table.
public struct CommandDeclaration: Sendable, Hashable {
    public var access: CommandAccess
    public var reader: CommandReader
    /// One line for docs/PROTOCOL.md's command table.
    public var summary: String

    init(_ access: CommandAccess, reader: CommandReader = .general, _ summary: String) {
        self.access = access
        self.reader = reader
        self.summary = summary
    }
}

extension Command {
    /// The commands `FastRequest` reads in one pass, with their names' bytes, for matching without a String.
    static let oneShot: [(command: Command, name: [UInt8])] = allCases.filter {
        $0.declaration.reader == .oneShot
    }.map { ($0, Array($0.rawValue.utf8)) }

    /// docs/PROTOCOL.md's command table, as the doc shows it: one row per command.
    public static var markdownTable: String {
        var lines = ["| command | endpoints | what it does |", "|---|---|---|"]
        for command in allCases {
            let endpoints = command.declaration.access == .adminOnly ? "admin" : "app, admin"
            lines.append("| `\(command.rawValue)` | \(endpoints) | \(command.declaration.summary) |")
        }
        return lines.joined(separator: "\n")
    }
}
