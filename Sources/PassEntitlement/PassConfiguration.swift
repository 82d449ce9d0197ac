import PreflightProtocol

/// Where the box's stable identity comes from. Whatever the source, Adobe only ever sees
/// `fingerprint <Base64 of SHA-256(id)>`: a raw machine id or serial number never leaves the box.
public enum DeviceIdentifierSource: Sendable, Equatable {
    /// The contents of a machine-id file, surrounding whitespace trimmed (systemd's `/etc/machine-id`).
    case machineIDFile(String)
    /// A fixed id from configuration (a serial number, an operator-assigned id).
    case fixed(String)

    /// `/etc/machine-id`.
    public static let machineID = DeviceIdentifierSource.machineIDFile("/etc/machine-id")
}

/// What the box says about itself in `X-Device-Info` (Base64 of a JSON object). The attribute names are
/// those of Adobe's X-Device-Info header documentation; `model`, `version`, `osName`, `osVersion` and
/// `connectionType` are the ones it marks required.
public struct DeviceInfo: Sendable, Equatable {
    /// Adobe's device type; a TV box is a `SetTopBox`.
    public var primaryHardwareType: String
    public var model: String
    /// The manufacturer, sent as `make` when set.
    public var make: String?
    /// The hardware (or firmware) version.
    public var version: String
    public var osName: String
    public var osVersion: String
    /// e.g. `LAN`, `WiFi`.
    public var connectionType: String

    public init(
        primaryHardwareType: String = "SetTopBox",
        model: String = "Preflight",
        make: String? = nil,
        version: String = "1.0",
        osName: String = "Linux",
        osVersion: String = DeviceInfo.kernelVersion,
        connectionType: String = "LAN"
    ) {
        self.primaryHardwareType = primaryHardwareType
        self.model = model
        self.make = make
        self.version = version
        self.osName = osName
        self.osVersion = osVersion
        self.connectionType = connectionType
    }

    /// The running kernel's release (`uname -r`), the default `osVersion`.
    public static var kernelVersion: String { kernelRelease() }

    /// The JSON object, attributes in a fixed order.
    public var json: JSONValue {
        var object: JSONObject = [
            "primaryHardwareType": .string(primaryHardwareType),
            "model": .string(model),
        ]
        if let make { object["make"] = .string(make) }
        object["version"] = .string(version)
        object["osName"] = .string(osName)
        object["osVersion"] = .string(osVersion)
        object["connectionType"] = .string(connectionType)
        return .object(object)
    }

    /// The `X-Device-Info` header value.
    public var headerValue: String { Encoding.base64(JSONWriter.encode(json)) }
}

/// How fast the agent lets itself call Adobe Pass. Adobe allows about one request per second per device
/// with a one-time burst of 10; the pacer stays inside that on its own clock.
public struct PassPacing: Sendable, Equatable {
    /// Spacing of requests once the burst is spent. The default, 1.1 s, leaves a 10 % margin so that
    /// jitter in network latency cannot land two requests in one of Adobe's one-second windows.
    public var interval: Duration
    /// Requests that may go at once before the spacing applies; spent once per agent lifetime, as
    /// Adobe's burst is.
    public var burst: Int

    public init(interval: Duration = .milliseconds(1100), burst: Int = 10) {
        self.interval = interval
        self.burst = burst
    }
}

/// The Adobe Pass part of the agent's configuration (`pass.*` in the JSON configuration).
public struct PassConfiguration: Sendable, Equatable {
    /// Base URL of Adobe Pass, without a trailing slash: DCR lives under `/o/client`, REST API v2 under
    /// `/api/v2`. `pass.serverURL`.
    public var serverURL: String
    /// The software statement from the TVE Dashboard. A secret: never logged, never shown.
    /// `pass.softwareStatement`.
    public var softwareStatement: String
    /// The service providers (requestor ids) this box serves, in display order. `pass.requestors`.
    public var requestors: [String]
    /// The `redirect_uri` sent at registration. `dcrApi.json` requires one, the prose docs call it optional,
    /// and a `client_credentials` client never redirects anyone: the default is an address under the
    /// reserved `.invalid` top-level domain, so it can never reach a real host. `pass.redirectURI`.
    public var redirectURI: String
    /// Where `AP-Device-Identifier` comes from. `pass.deviceIdentifier` (absent: `/etc/machine-id`).
    public var deviceIdentifier: DeviceIdentifierSource
    /// `X-Device-Info`. `pass.deviceInfo.*`.
    public var deviceInfo: DeviceInfo
    /// Most resources in one upstream preauthorize call; more are split. `pass.maxResourcesPerRequest`.
    public var maxResourcesPerRequest: Int
    /// How long a permit decision is served from memory. `pass.decisionTTL` (seconds).
    public var decisionTTL: Duration
    /// Per upstream request, connect to last byte. `pass.timeout` (seconds).
    public var timeout: Duration
    /// The longest an app waits for any `preauthorize` answer, pacing and 429 back-off included; past
    /// it the answer is `network_error`. `pass.answerDeadline` (seconds).
    public var answerDeadline: Duration
    /// After a profile lookup found no (or an expired) session, answers come from memory for this long
    /// before Adobe is asked again, so that a logged-out box does not spend its request budget asking.
    /// `pass.sessionRecheckInterval` (seconds).
    public var sessionRecheckInterval: Duration
    /// Request pacing. `pass.pacing.interval` (seconds), `pass.pacing.burst`.
    public var pacing: PassPacing
    /// How often a pending sign-in asks Adobe whether the user has signed in (`GET profiles/code/{code}`).
    /// Adobe's guidance is every few seconds; each poll spends one of the box's ~1 request per second.
    /// `pass.signInPollInterval` (seconds).
    public var signInPollInterval: Duration

    /// Adobe Pass's production address, when no server is configured.
    public static let defaultServerURL = "https://sp.auth.adobe.com"

    public init(
        serverURL: String = PassConfiguration.defaultServerURL,
        softwareStatement: String = "",
        requestors: [String] = [],
        redirectURI: String = "https://preflight.invalid/pass/callback",
        deviceIdentifier: DeviceIdentifierSource = .machineID,
        deviceInfo: DeviceInfo = DeviceInfo(),
        maxResourcesPerRequest: Int = 5,
        decisionTTL: Duration = .seconds(600),
        timeout: Duration = .seconds(5),
        answerDeadline: Duration = .seconds(15),
        sessionRecheckInterval: Duration = .seconds(5),
        pacing: PassPacing = PassPacing(),
        signInPollInterval: Duration = .seconds(5)
    ) {
        self.serverURL = serverURL
        self.softwareStatement = softwareStatement
        self.requestors = requestors
        self.redirectURI = redirectURI
        self.deviceIdentifier = deviceIdentifier
        self.deviceInfo = deviceInfo
        self.maxResourcesPerRequest = maxResourcesPerRequest
        self.decisionTTL = decisionTTL
        self.timeout = timeout
        self.answerDeadline = answerDeadline
        self.sessionRecheckInterval = sessionRecheckInterval
        self.pacing = pacing
        self.signInPollInterval = signInPollInterval
    }

    /// `serverURL` without trailing slashes.
    var baseURL: String {
        var url = serverURL
        while url.hasSuffix("/") {
            url.removeLast()
        }
        return url
    }
}
