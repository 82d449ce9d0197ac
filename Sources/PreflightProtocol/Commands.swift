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

/// An app command with typed, validated arguments.
public enum AppCommand: Sendable, Hashable {
    case ping
    case loadRequests(LoadRequestsCommand)
    case clearPrefetchCache
    case preauthorize(PreauthorizeCommand)
    // Boxed: their arguments are larger than a load's, and every request's `AppCommand` is copied on the
    // cached path (an inline payload of ~70 bytes cost a cached load ~200 instructions of memcpy).
    indirect case prefetch(PrefetchCommand)
    indirect case entitlement(EntitlementCommand)
    indirect case visitor(VisitorCommand)
    indirect case clickedLocation(ClickedLocationCommand)
    indirect case displayedLocations(DisplayedLocationsCommand)
    /// A `loadRequests` with `trace`: never read by the one-pass reader, never answered from the cache.
    indirect case tracedLoad(TracedLoadCommand)

    /// The command of the table this is.
    public var command: Command {
        switch self {
        case .ping: .ping
        case .prefetch: .prefetch
        case .loadRequests: .loadRequests
        case .clearPrefetchCache: .clearPrefetchCache
        case .preauthorize: .preauthorize
        case .entitlement(let command): command.command
        case .visitor(let command): command.command
        case .clickedLocation: .clickedLocation
        case .displayedLocations: .displayedLocations
        case .tracedLoad: .loadRequests
        }
    }

    /// Reads an app command, or returns nil when `request.command` is not an app command.
    public static func decode(_ request: Request, limits: CommandLimits) throws(ProtocolError) -> AppCommand? {
        guard let command = Command(wireName: request.command) else { return nil }
        return try decode(command, ArgumentReader(request.args ?? JSONObject()), limits: limits)
    }

    /// Reads the arguments of `command`, or returns nil when it is not an app command (an admin
    /// command's handler reads its own).
    public static func decode(
        _ command: Command,
        _ args: ArgumentReader,
        limits: CommandLimits
    ) throws(ProtocolError) -> AppCommand? {
        switch command {
        case .ping: return .ping
        case .clearPrefetchCache: return .clearPrefetchCache
        case .prefetch: return .prefetch(try PrefetchCommand.decode(args, maxMboxes: limits.maxMboxes))
        case .loadRequests: return try loadRequests(args, maxMboxes: limits.maxMboxes)
        case .preauthorize:
            return .preauthorize(try PreauthorizeCommand.decode(args, maxResources: limits.maxResources))
        case .clickedLocation: return .clickedLocation(try ClickedLocationCommand.decode(args))
        case .displayedLocations:
            return .displayedLocations(try DisplayedLocationsCommand.decode(args, maxMboxes: limits.maxMboxes))
        default:
            if let visitor = try VisitorCommand.decode(command, args) { return .visitor(visitor) }
            return try EntitlementCommand.decode(command, args).map { .entitlement($0) }
        }
    }
}
