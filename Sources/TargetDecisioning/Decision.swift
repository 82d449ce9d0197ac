import PreflightCore
import PreflightProtocol

/// The account a decision is made for (the SDKs' client configuration).
public struct DecisioningConf: Sendable, Equatable {
    /// The Target client code (`client`), part of every allocation and of the response.
    public var client: String
    /// The Experience Cloud organization id (`organizationId`).
    public var organizationId: String
    /// The property the box's requests belong to, used when a request names none.
    public var propertyToken: String?
    /// Whether the notification request carries telemetry entries (`telemetryEnabled`, default true).
    public var telemetryEnabled: Bool

    public init(client: String, organizationId: String, propertyToken: String? = nil, telemetryEnabled: Bool = true) {
        self.client = client
        self.organizationId = organizationId
        self.propertyToken = propertyToken
        self.telemetryEnabled = telemetryEnabled
    }
}

/// What a decision may take besides the request, all optional.
public struct DecisionOptions {
    /// The visitor's session, shown in traces (`sessionId`).
    public var sessionId: String?
    /// Target's location hint for a new tntId (`targetLocationHint`): a visitor without any id gets
    /// `{uuid}.{hint}_0`.
    public var locationHint: String?
    /// What traces show as `artifact` besides the artifact's version and meta (where it came from,
    /// when, how often it is polled), as the SDKs' artifact tracer reports it.
    public var artifactTrace: JSONObject
    /// Makes the random ids a decision needs (notification and impression ids, a request id or tntId
    /// the request lacks); a UUID v4 by default. Tests pass a deterministic one.
    public var makeIdentifier: () -> String

    public init(
        sessionId: String? = nil,
        locationHint: String? = nil,
        artifactTrace: JSONObject = JSONObject(),
        makeIdentifier: @escaping () -> String = RandomUUID.make
    ) {
        self.sessionId = sessionId
        self.locationHint = locationHint
        self.artifactTrace = artifactTrace
        self.makeIdentifier = makeIdentifier
    }
}

/// An address to look up before deciding, because the artifact targets by geo and the request carries
/// only an IP address (the SDKs then ask Target's geo service and merge its `x-geo-*` answer).
public struct GeoLookup: Sendable, Equatable {
    /// The address to look up; nil when the request says `unknownIpAddress`, meaning the caller's own.
    public let ipAddress: String?
}

/// What the engine decided for one Delivery API request.
public struct Decision: Sendable {
    /// The Delivery API response the SDKs' on-device engine returns: `status` (200, or 206 when some
    /// requested mbox or view needs Target's edge), `remoteMboxes`, `remoteViews`, `requestId`, `id`,
    /// `client`, and `execute` and `prefetch` with `mboxes`, `views`, `pageLoad`.
    public let response: JSONObject
    /// One display notification per executed mbox (or page load activity) that has event tokens, each
    /// a Delivery API notification object (`id`, `impressionId`, `timestamp`, `type`, `mbox`, `tokens`).
    public let notifications: [JSONObject]
    /// Set when the artifact targets by geo, the request carries only an IP address and no geo answer
    /// was given: the decision was made without geo, and the wiring should look the address up (and
    /// may decide again with the answer).
    public let geoLookup: GeoLookup?

    /// The request's `id`, `context` (with its validated geo) and `experienceCloud`, which a
    /// notification request repeats.
    let notificationBase: JSONObject
    let requestId: String
    let timestamp: Int64
    let features: JSONObject
    let telemetryEnabled: Bool

    /// The Delivery API request that carries this decision's notifications (and the telemetry given)
    /// to Target, as the SDKs send it; nil when there is nothing to send. Telemetry entries are dropped
    /// when the configuration disables telemetry.
    public func notificationRequest(telemetry: [JSONObject] = []) -> JSONObject? {
        let entries = telemetryEnabled ? telemetry : []
        guard !notifications.isEmpty || !entries.isEmpty else { return nil }
        var request = notificationBase
        if !notifications.isEmpty { request["notifications"] = .array(notifications.map(JSONValue.object)) }
        if !entries.isEmpty { request["telemetry"] = ["entries": .array(entries.map(JSONValue.object))] }
        return request
    }

    /// This decision's telemetry entry, as the SDKs record an on-device request: its id and time, the
    /// time it took (milliseconds, measured by the caller, since the engine reads no clock), and what
    /// it asked for.
    public func telemetryEntry(execution: Double, parsing: Double? = nil) -> JSONObject {
        var entry: JSONObject = [
            "requestId": .string(requestId),
            "timestamp": .integer(timestamp),
            "execution": .number(Decision.twoDecimals(execution)),
        ]
        if let parsing { entry["parsing"] = .number(Decision.twoDecimals(parsing)) }
        entry["mode"] = "local"
        entry["features"] = .object(features)
        return entry
    }

    /// target-tools' `formatDecimal`: telemetry times keep two decimals.
    private static func twoDecimals(_ value: Double) -> Double {
        JavaScript.round(value * 100) / 100
    }
}
