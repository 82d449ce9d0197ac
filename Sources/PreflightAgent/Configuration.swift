import PassEntitlement
import PreflightProtocol
import StateFiles
import TargetOffers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The agent's configuration, read from `/etc/preflight/preflight.json` (or `--config PATH`).
///
/// Key names under `target` follow the Target SDK's ADBMobileConfig.json (`clientCode`, `timeout`,
/// `environmentId`) so that an existing file's values carry over.
public struct AgentConfiguration: Sendable, Equatable {
    public struct Agent: Sendable, Equatable {
        public var appEndpoint = "ipc:///run/preflight/app.sock"
        public var adminEndpoint = "ipc:///run/preflight/admin.sock"
        public var eventsEndpoint = "ipc:///run/preflight/events.sock"
        public var stateDirectory = "/var/lib/preflight"
        /// Largest request body answered normally; larger ones get `payload_too_large`.
        public var maxBodyBytes = defaultMaxBodyBytes
        /// Most mboxes per `prefetch` and requests per `loadRequests`.
        public var maxMboxesPerCommand = 50
        /// Most resources per `preauthorize`.
        public var maxResourcesPerCommand = 100
        /// Most requests waiting on an upstream at once; beyond it, `overloaded`.
        public var maxInFlight = 1024
        /// Most requests of one connection waiting on an upstream at once.
        public var maxInFlightPerPeer = 128
        /// Least severe level logged: trace, debug, info, notice, warning, error, critical.
        public var logLevel = "info"
        /// Group of the app and events socket files (`preflight` on a box); absent keeps the agent's group.
        public var appSocketGroup: String?
        /// Group of the admin socket file (`preflight-admin` on a box).
        public var adminSocketGroup: String?
        /// When set, admin commands are answered only for root, the agent's user and members of these
        /// groups, checked per connection from the kernel's peer credentials (ZAP); others get
        /// `not_permitted`. Empty: the socket file's mode is the only check.
        public var allowedAdminGroups: [String] = []
    }

    public struct Target: Sendable, Equatable {
        public var clientCode = ""
        /// Absent means `https://{clientCode}.tt.omtrdc.net`.
        public var serverURL: String?
        public var environmentId: Int64 = 0
        public var propertyToken = ""
        /// Upstream timeout in seconds (as the SDK's `timeout`).
        public var timeout: Double = 5
        /// Seconds without a request after which the Target session id is renewed.
        public var sessionTimeout: Double = 1800
        public var cacheBudgetBytes = 32 << 20
        /// Display notifications go out when this many are queued...
        public var notificationBatchSize = 50
        /// ...or when the oldest has waited this many seconds.
        public var notificationBatchAge: Double = 2
        /// Most display notifications held before the oldest are dropped (and counted).
        public var notificationQueueCapacity = 10_000
        /// `context.userAgent` and the `User-Agent` header of Delivery API calls.
        public var userAgent = "Preflight/\(preflightVersion) (Linux; SetTopBox)"
        /// `context.mobilePlatform.platformType`: `android` (default) or `ios`, the only values the
        /// Delivery API accepts.
        public var platformType = "android"
        /// `experienceCloud.analytics.logging` sent to Target: `client_side` makes Target return the
        /// Analytics for Target payloads (`withData`); `none` sends nothing (Target's default).
        public var analyticsLogging = "none"
        /// The box's privacy status for Target: `optedIn`, `optedOut` or `unknown` (TargetPrivacy).
        public var privacy = "optedIn"
        /// Where offers are decided: `server-side`, `on-device` or `hybrid` (DecisioningMethod).
        public var decisioningMethod = "server-side"
        /// The Target environment the artifact is published for (the SDKs' `environment`).
        public var environment = "production"
        /// The Experience Cloud organization id (`…@AdobeOrg`): the key of the obfuscated `rules.bin`.
        public var organizationId = ""
        /// Absent means Target's CDN address for the account (`TargetConfiguration.defaultArtifactURL`).
        public var artifactURL: String?
        /// `json` or `bin`.
        public var artifactFormat = "json"
        /// Seconds between fetches of the artifact; 0: at start and on reload only.
        public var artifactPollingInterval: Double = 300
        /// Target's geo service; absent means Adobe's (`GeoPolling.defaultURL`).
        public var geoURL: String?

        /// The geo service's address in effect.
        public var effectiveGeoURL: String { geoURL ?? GeoPolling.defaultURL }

        /// The artifact's address in effect.
        public var effectiveArtifactURL: String {
            artifactURL
                ?? TargetConfiguration.defaultArtifactURL(
                    clientCode: clientCode,
                    environment: environment,
                    propertyToken: propertyToken,
                    format: ArtifactFormat(rawValue: artifactFormat) ?? .json
                )
        }

        /// The Delivery API base URL in effect.
        public var effectiveServerURL: String {
            serverURL ?? TargetConfiguration.defaultServerURL(clientCode: clientCode)
        }
    }

    public struct Pass: Sendable, Equatable {
        /// Absent means `https://sp.auth.adobe.com`.
        public var serverURL: String?
        public var softwareStatement = ""
        public var requestors: [String] = []
        /// The `redirect_uri` sent at registration (a reserved `.invalid` host: never visited).
        public var redirectURI = "https://preflight.invalid/pass/callback"
        /// A fixed box id (hashed before use); absent means the SHA-256 of /etc/machine-id.
        public var deviceIdentifier: String?
        /// `X-Device-Info` fields.
        public var deviceModel = "Preflight"
        public var deviceMake: String?
        public var deviceVersion = "1.0"
        public var deviceOSVersion: String?
        public var connectionType = "LAN"
        public var maxResourcesPerRequest = 5
        /// Seconds a permit decision is served from the local cache.
        public var decisionTTL: Double = 600
        /// Seconds per upstream call.
        public var timeout: Double = 5
        /// Seconds after which an app gets `network_error` whatever is still pending.
        public var answerDeadline: Double = 15
        /// Seconds between upstream calls once the burst is spent (Adobe allows about 1 per second).
        public var pacingInterval: Double = 1.1
        /// Calls allowed at once at start (Adobe's one-time burst of 10).
        public var pacingBurst = 10
        /// Seconds between checks of a pending sign-in.
        public var signInPollInterval: Double = 5

        public var effectiveServerURL: String {
            serverURL ?? PassConfiguration.defaultServerURL
        }
    }

    public var agent = Agent()
    public var target = Target()
    public var pass = Pass()

    public init() {}

    public var admissionLimits: AdmissionLimits {
        AdmissionLimits(maxInFlight: agent.maxInFlight, maxInFlightPerPeer: agent.maxInFlightPerPeer)
    }

    public var commandLimits: CommandLimits {
        CommandLimits(maxMboxes: agent.maxMboxesPerCommand, maxResources: agent.maxResourcesPerCommand)
    }
}

/// A configuration value that is wrong: the key at fault and why.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Dotted path of the key, e.g. `target.timeout`; empty when the file as a whole is at fault.
    public var key: String
    public var message: String

    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String {
        key.isEmpty ? message : "\(key): \(message)"
    }
}

/// The outcome of reading a configuration: the values, plus warnings for keys it did not know.
public struct LoadedConfiguration: Sendable {
    public var configuration: AgentConfiguration
    public var warnings: [String]
    public var path: String?
}

extension AgentConfiguration {
    /// Reads a configuration file. Unknown keys become warnings; a wrong type or value throws,
    /// naming the key.
    public static func load(path: String) throws(ConfigurationError) -> LoadedConfiguration {
        try checkNotWritableByOthers(path, describing: "the configuration file")
        let bytes: [UInt8]
        do throws(SystemCallError) {
            guard let contents = try FileSystem.readFile(path, limit: 4 << 20) else {
                throw SystemCallError(call: "open", path: path, errno: ENOENT)
            }
            bytes = contents
        } catch {
            throw ConfigurationError(key: "", message: "cannot read \(path): \(String(cString: strerror(error.errno)))")
        }
        var loaded = try parse(bytes)
        loaded.path = path
        try checkNotWritableByOthers(
            "\(loaded.configuration.agent.stateDirectory)/pass-registration.json",
            describing: "the Adobe Pass registration file"
        )
        return loaded
    }

    /// Refuses a file others could write: whoever can change the configuration or the stored
    /// registration can point the agent at another server or impersonate the box.
    public static func checkNotWritableByOthers(_ path: String, describing what: String) throws(ConfigurationError) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }  // absent: nothing to protect yet
        let mode = info.st_mode & 0o777
        guard mode & 0o022 == 0 else {
            throw ConfigurationError(
                key: "",
                message: "\(what) \(path) is writable by group or others (mode \(String(mode, radix: 8))); "
                    + "run: chmod go-w \(path)"
            )
        }
    }

    /// Reads configuration JSON.
    public static func parse(_ bytes: [UInt8]) throws(ConfigurationError) -> LoadedConfiguration {
        let value: JSONValue
        do {
            value = try JSONReader.read(bytes)
        } catch {
            throw ConfigurationError(key: "", message: "not valid JSON: \(error)")
        }
        guard case .object(let root) = value else {
            throw ConfigurationError(key: "", message: "the configuration must be a JSON object")
        }
        var configuration = AgentConfiguration()
        var warnings: [String] = []
        for section in ConfigurationSection.allCases {
            guard let value = root[section.rawValue] else { continue }
            guard case .object(let object) = value else {
                throw ConfigurationError(key: section.rawValue, message: "must be an object, got \(value.typeName)")
            }
            let keys = Self.keys(in: section)
            for key in keys {
                if let member = object[key.name] { try key.read(member, into: &configuration) }
            }
            for member in object.keys where !keys.contains(where: { $0.name == member }) {
                warnings.append("unknown key \(section.rawValue).\(member) (ignored)")
            }
        }
        for key in root.keys where ConfigurationSection(rawValue: key) == nil {
            warnings.append("unknown key \(key) (ignored)")
        }
        try configuration.checkConsistency()
        return LoadedConfiguration(configuration: configuration, warnings: warnings, path: nil)
    }

    private func checkConsistency() throws(ConfigurationError) {
        let endpoints = [agent.appEndpoint, agent.adminEndpoint, agent.eventsEndpoint]
        guard Set(endpoints).count == endpoints.count else {
            throw ConfigurationError(key: "agent", message: "appEndpoint, adminEndpoint and eventsEndpoint must differ")
        }
        if target.serverURL == nil && target.clientCode.isEmpty {
            throw ConfigurationError(
                key: Self.path(of: \.target.clientCode),
                message: "required unless \(Self.path(of: \.target.serverURL)) is set"
            )
        }
        // rules.bin cannot be read without its key: refused here rather than at every download.
        if target.decisioningMethod != DecisioningMethod.serverSide.rawValue, target.artifactFormat == "bin",
            target.organizationId.isEmpty
        {
            throw ConfigurationError(
                key: Self.path(of: \.target.organizationId),
                message: "required when \(Self.path(of: \.target.artifactFormat)) is bin (the key of rules.bin)"
            )
        }
    }
}

extension AgentConfiguration {
    /// The effective configuration as JSON, every key of the table in its order, secrets redacted.
    public var redactedJSON: JSONValue {
        var sections = JSONObject()
        for section in ConfigurationSection.allCases {
            var object = JSONObject()
            for key in Self.keys(in: section) {
                object[key.name] = key.shown(in: self)
            }
            sections[section.rawValue] = .object(object)
        }
        return .object(sections)
    }

    /// A key whose new value a reload could not apply: the running value is kept.
    public struct RefusedChange: Sendable {
        public var key: ConfigurationKey
        public var running: JSONValue
        public var requested: JSONValue
    }

    /// What a reload applies: `next`, except that every key that needs a restart keeps its running
    /// value; those whose value changed are returned so that the journal can say so.
    public static func reloaded(
        _ next: AgentConfiguration,
        running: AgentConfiguration
    ) -> (configuration: AgentConfiguration, refused: [RefusedChange]) {
        var applied = next
        var refused: [RefusedChange] = []
        for key in keys where key.reload == .needsRestart {
            if !key.isSame(in: running, and: next) {
                refused.append(RefusedChange(key: key, running: key.shown(in: running), requested: key.shown(in: next)))
            }
            key.keepRunning(running, in: &applied)
        }
        return (applied, refused)
    }

    /// docs/OPERATIONS.md's reference table of one section, as the doc shows it.
    public static func markdownTable(_ section: ConfigurationSection) -> String {
        let rows = keys(in: section).map(\.markdownRow)
        return
            (["| key | type, allowed values | default | what it does | on reload |", "|---|---|---|---|---|"] + rows)
            .joined(separator: "\n")
    }
}

extension AgentConfiguration.Target {
    /// The Target service's view of this section.
    public var serviceConfiguration: TargetConfiguration {
        var device = DeviceDescription(userAgent: userAgent, applicationVersion: preflightVersion)
        device.platformType = platformType
        var configuration = TargetConfiguration(
            clientCode: clientCode,
            serverURL: serverURL,
            environmentId: environmentId,
            propertyToken: propertyToken,
            timeout: .milliseconds(Int64(timeout * 1000)),
            sessionTimeout: .milliseconds(Int64(sessionTimeout * 1000)),
            cacheBudgetBytes: cacheBudgetBytes,
            notificationBatchSize: notificationBatchSize,
            notificationMaxAge: .milliseconds(Int64(notificationBatchAge * 1000)),
            notificationQueueCapacity: notificationQueueCapacity,
            device: device
        )
        configuration.analyticsLogging = analyticsLogging == "none" ? nil : analyticsLogging
        configuration.privacy = TargetPrivacy(rawValue: privacy) ?? .optedIn
        configuration.decisioningMethod = DecisioningMethod(rawValue: decisioningMethod) ?? .serverSide
        configuration.artifactURL = effectiveArtifactURL
        configuration.artifactFormat = ArtifactFormat(rawValue: artifactFormat) ?? .json
        configuration.artifactPollingInterval =
            artifactPollingInterval == 0 ? nil : .milliseconds(Int64(artifactPollingInterval * 1000))
        configuration.organizationId = organizationId
        configuration.geoURL = effectiveGeoURL
        return configuration
    }
}

extension AgentConfiguration.Pass {
    /// The Adobe Pass service's view of this section.
    public var serviceConfiguration: PassConfiguration {
        var info = DeviceInfo(
            model: deviceModel,
            make: deviceMake,
            version: deviceVersion,
            connectionType: connectionType
        )
        if let deviceOSVersion { info.osVersion = deviceOSVersion }
        return PassConfiguration(
            serverURL: effectiveServerURL,
            softwareStatement: softwareStatement,
            requestors: requestors,
            redirectURI: redirectURI,
            deviceIdentifier: deviceIdentifier.map { .fixed($0) } ?? .machineID,
            deviceInfo: info,
            maxResourcesPerRequest: maxResourcesPerRequest,
            decisionTTL: .milliseconds(Int64(decisionTTL * 1000)),
            timeout: .milliseconds(Int64(timeout * 1000)),
            answerDeadline: .milliseconds(Int64(answerDeadline * 1000)),
            pacing: PassPacing(interval: .milliseconds(Int64(pacingInterval * 1000)), burst: pacingBurst),
            signInPollInterval: .milliseconds(Int64(signInPollInterval * 1000))
        )
    }
}
