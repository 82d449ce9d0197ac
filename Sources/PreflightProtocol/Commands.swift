/// Features an app can disable for one `preauthorize` (the AccessEnabler's `disabledFeatures`).
public struct PreauthorizeFeature: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Bypass (and refresh) the agent's in-memory decision cache.
    public static let localCache = PreauthorizeFeature(rawValue: "LOCAL_CACHE")
    /// Ask Adobe Pass to bypass its server-side cache.
    public static let remoteCache = PreauthorizeFeature(rawValue: "REMOTE_CACHE")

    public static let all: [PreauthorizeFeature] = [.localCache, .remoteCache]
}

/// `preauthorize` arguments (AccessEnabler PreauthorizeRequest).
public struct PreauthorizeCommand: Sendable, Hashable {
    public var requestor: String
    /// In request order; duplicates are kept and each gets its own decision.
    public var resources: [String]
    public var disabledFeatures: Set<PreauthorizeFeature>

    public static let resourceLength = 1024
    public static let requestorLength = 256

    public init(requestor: String, resources: [String], disabledFeatures: Set<PreauthorizeFeature> = []) {
        self.requestor = requestor
        self.resources = resources
        self.disabledFeatures = disabledFeatures
    }

    public static func decode(_ args: ArgumentReader, maxResources: Int) throws(ProtocolError) -> PreauthorizeCommand {
        let requestor = try args.requiredString("requestor")
        guard (1...requestorLength).contains(requestor.scalarCount) else {
            throw .invalidArgument(args.fieldPath("requestor"), "requestor must be 1 to \(requestorLength) characters")
        }
        let elements = try args.requiredArray("resources")
        let resourcesPath = args.fieldPath("resources")
        guard !elements.isEmpty else { throw .invalidArgument(resourcesPath, "resources must not be empty") }
        guard elements.count <= maxResources else {
            throw .invalidArgument(
                resourcesPath,
                "at most \(maxResources) resources per command; got \(elements.count)"
            )
        }
        var resources: [String] = []
        resources.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard case .string(let resource) = element else {
                throw .invalidArgument(
                    "\(resourcesPath)[\(index)]",
                    "resources must be strings, got \(element.typeName)"
                )
            }
            guard (1...resourceLength).contains(resource.scalarCount) else {
                throw .invalidArgument(
                    "\(resourcesPath)[\(index)]",
                    "a resource id must be 1 to \(resourceLength) characters"
                )
            }
            resources.append(resource)
        }
        var features: Set<PreauthorizeFeature> = []
        for (index, element) in (try args.optionalArray("disabledFeatures") ?? []).enumerated() {
            let field = "\(args.fieldPath("disabledFeatures"))[\(index)]"
            guard case .string(let name) = element, PreauthorizeFeature.all.contains(.init(rawValue: name)) else {
                throw .invalidArgument(field, "disabledFeatures may hold LOCAL_CACHE and REMOTE_CACHE")
            }
            features.insert(PreauthorizeFeature(rawValue: name))
        }
        return PreauthorizeCommand(requestor: requestor, resources: resources, disabledFeatures: features)
    }
}

/// Bounds on command sizes that come from configuration.
public struct CommandLimits: Sendable, Hashable {
    /// Most mboxes in one `prefetch`, and most requests in one `loadRequests` (PROTOCOL.md: 50).
    public var maxMboxes: Int
    /// Most resources in one `preauthorize`.
    public var maxResources: Int

    public init(maxMboxes: Int = 50, maxResources: Int = 100) {
        self.maxMboxes = maxMboxes
        self.maxResources = maxResources
    }
}

/// Command names of the wire protocol.
public enum CommandName {
    public static let ping = "ping"
    public static let prefetch = "prefetch"
    public static let loadRequests = "loadRequests"
    public static let clearPrefetchCache = "clearPrefetchCache"
    public static let preauthorize = "preauthorize"

    public static let status = "status"
    public static let stats = "stats"
    public static let offersList = "offers.list"
    public static let offersShow = "offers.show"
    public static let offersClear = "offers.clear"
    public static let notificationsStatus = "notifications.status"
    public static let notificationsFlush = "notifications.flush"
    public static let configShow = "config.show"
    public static let authList = "auth.list"
    public static let authClear = "auth.clear"

    /// Commands any app may send.
    public static let app: Set<String> = [ping, prefetch, loadRequests, clearPrefetchCache, preauthorize]
    /// Commands only the admin endpoint accepts (defined in docs/PROTOCOL.md).
    public static let admin: Set<String> = [
        status, stats, offersList, offersShow, offersClear, notificationsStatus, notificationsFlush, configShow,
        authList, authClear,
    ]
    /// Every command name: the request path looks a name up once.
    public static let all = app.union(admin)
}

/// An app command with typed, validated arguments.
public enum AppCommand: Sendable, Hashable {
    case ping
    case prefetch(PrefetchCommand)
    case loadRequests(LoadRequestsCommand)
    case clearPrefetchCache
    case preauthorize(PreauthorizeCommand)

    /// Reads an app command, or returns nil when `request.command` is not an app command.
    public static func decode(_ request: Request, limits: CommandLimits) throws(ProtocolError) -> AppCommand? {
        let args = ArgumentReader(request.args ?? JSONObject())
        switch request.command {
        case CommandName.ping: return .ping
        case CommandName.clearPrefetchCache: return .clearPrefetchCache
        case CommandName.prefetch: return .prefetch(try PrefetchCommand.decode(args, maxMboxes: limits.maxMboxes))
        case CommandName.loadRequests:
            return .loadRequests(try LoadRequestsCommand.decode(args, maxMboxes: limits.maxMboxes))
        case CommandName.preauthorize:
            return .preauthorize(try PreauthorizeCommand.decode(args, maxResources: limits.maxResources))
        default: return nil
        }
    }
}
