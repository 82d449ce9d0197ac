/// What the Target half of the agent needs from configuration (the `target` section).
public struct TargetConfiguration: Sendable, Equatable {
    public var clientCode: String
    /// Base URL of the Delivery API, without a trailing slash: `serverURL`, or `https://{clientCode}.tt.omtrdc.net`.
    public var serverURL: String
    /// True when `serverURL` was configured explicitly: then an `edgeHost` from Target replaces only the
    /// host, and the scheme and port stay those of `serverURL`.
    public var serverURLConfigured: Bool
    public var environmentId: Int64
    public var propertyToken: String
    /// Upstream timeout (the SDK's `timeout`).
    public var timeout: Duration
    /// Inactivity after which the session id is renewed and the edge host forgotten.
    public var sessionTimeout: Duration
    /// Memory budget of the prefetch cache, in bytes of cached content and tokens.
    public var cacheBudgetBytes: Int
    /// Display notifications are sent when this many are queued...
    public var notificationBatchSize: Int
    /// ...or when the oldest has waited this long.
    public var notificationMaxAge: Duration
    /// Most notifications held; beyond it the oldest are dropped and counted.
    public var notificationQueueCapacity: Int
    /// The box as Target's `context` describes it.
    public var device: DeviceDescription
    /// `experienceCloud.analytics.logging` (`client_side`, `server_side`); nil sends none.
    public var analyticsLogging: String?
    /// The configured privacy status (`target.privacy`); the admin command may override it.
    public var privacy: TargetPrivacy = .optedIn
    /// Where offers are decided (`target.decisioningMethod`); the rules artifact is fetched unless `serverSide`.
    public var decisioningMethod: DecisioningMethod = .serverSide
    /// The rules artifact's address (`target.artifactURL`, or Target's CDN address for the account).
    public var artifactURL = ""
    /// `json` (`rules.json`) or `bin` (the obfuscated `rules.bin`, read with `organizationId`).
    public var artifactFormat: ArtifactFormat = .json
    /// Between two fetches of the artifact; nil: fetched at start and on reload only.
    public var artifactPollingInterval: Duration? = .seconds(300)
    /// The Experience Cloud organization (`target.organizationId`): the key of `rules.bin`.
    public var organizationId = ""
    /// Target's geo service (`target.geoURL`), asked where the box is when the artifact targets by geo.
    public var geoURL = GeoPolling.defaultURL

    /// The Delivery API of an account when no server is configured: `https://{clientCode}.tt.omtrdc.net`.
    public static func defaultServerURL(clientCode: String) -> String {
        "https://\(clientCode).tt.omtrdc.net"
    }

    /// Target's CDN address of an account's artifact, as Adobe's SDKs build it:
    /// `https://assets.adobetarget.com/{clientCode}/{environment}/v1/[{propertyToken}/]rules.json`.
    public static func defaultArtifactURL(
        clientCode: String,
        environment: String,
        propertyToken: String,
        format: ArtifactFormat
    ) -> String {
        let property = propertyToken.isEmpty ? "" : "\(propertyToken)/"
        return "https://assets.adobetarget.com/\(clientCode)/\(environment)/v1/\(property)rules.\(format.rawValue)"
    }

    public init(
        clientCode: String,
        serverURL: String? = nil,
        environmentId: Int64 = 0,
        propertyToken: String = "",
        timeout: Duration = .seconds(5),
        sessionTimeout: Duration = .seconds(1800),
        cacheBudgetBytes: Int = 32 << 20,
        notificationBatchSize: Int = 50,
        notificationMaxAge: Duration = .seconds(2),
        notificationQueueCapacity: Int = 10_000,
        device: DeviceDescription = DeviceDescription()
    ) {
        self.clientCode = clientCode
        self.serverURL = serverURL ?? Self.defaultServerURL(clientCode: clientCode)
        self.serverURLConfigured = serverURL != nil
        self.environmentId = environmentId
        self.propertyToken = propertyToken
        self.timeout = timeout
        self.sessionTimeout = sessionTimeout
        self.cacheBudgetBytes = cacheBudgetBytes
        self.notificationBatchSize = notificationBatchSize
        self.notificationMaxAge = notificationMaxAge
        self.notificationQueueCapacity = notificationQueueCapacity
        self.device = device
    }
}

/// Where offers are decided (`target.decisioningMethod`, as Adobe's server-side SDKs name it).
public enum DecisioningMethod: String, Sendable, CaseIterable {
    /// Every offer from Target's edge (the Delivery API): no artifact is fetched.
    case serverSide = "server-side"
    /// Offers decided on the box from the rules artifact.
    case onDevice = "on-device"
    /// On the box what the artifact can decide, the rest from the edge.
    case hybrid
}

/// The form of the rules artifact (`target.artifactFormat`).
public enum ArtifactFormat: String, Sendable, CaseIterable {
    /// `rules.json`.
    case json
    /// `rules.bin`: the same JSON, obfuscated with the organization id.
    case bin
}

/// The box, as the Delivery API's `context` carries it.
///
/// The Delivery API asks for `mobilePlatform` on the mobile channel, but its schema allows only
/// `android` and `ios` as `platformType` and `phone` or `tablet` as `deviceType`. A TV box is none of
/// these; the agent sends `android`/`tablet` by default (what Target's own SDK reports on Android-based
/// TV boxes, so audience rules written for them apply) and lets configuration say `ios`.
public struct DeviceDescription: Sendable, Equatable {
    public var userAgent: String
    public var applicationId: String
    public var applicationName: String
    public var applicationVersion: String
    public var screenWidth: Int
    public var screenHeight: Int
    /// `android` (default) or `ios`: the only values the Delivery API accepts.
    public var platformType: String
    public var deviceName: String

    public init(
        userAgent: String = "Preflight/0.1.0 (Linux; SetTopBox)",
        applicationId: String = "com.preflight.agent",
        applicationName: String = "Preflight",
        applicationVersion: String = "0.1.0",
        screenWidth: Int = 1920,
        screenHeight: Int = 1080,
        platformType: String = "android",
        deviceName: String = "SetTopBox"
    ) {
        self.userAgent = userAgent
        self.applicationId = applicationId
        self.applicationName = applicationName
        self.applicationVersion = applicationVersion
        self.screenWidth = screenWidth
        self.screenHeight = screenHeight
        self.platformType = platformType
        self.deviceName = deviceName
    }
}
