import PassAuthorization
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

        /// The Delivery API base URL in effect.
        public var effectiveServerURL: String {
            serverURL ?? "https://\(clientCode).tt.omtrdc.net"
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

        public var effectiveServerURL: String {
            serverURL ?? "https://sp.auth.adobe.com"
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
        var reader = ConfigurationReader()
        var configuration = AgentConfiguration()
        try reader.section(root, "agent") { (section: inout ConfigurationReader.Section) throws(ConfigurationError) in
            try section.endpoint("appEndpoint", into: &configuration.agent.appEndpoint)
            try section.endpoint("adminEndpoint", into: &configuration.agent.adminEndpoint)
            try section.endpoint("eventsEndpoint", into: &configuration.agent.eventsEndpoint)
            try section.path("stateDirectory", into: &configuration.agent.stateDirectory)
            try section.integer("maxBodyBytes", into: &configuration.agent.maxBodyBytes, in: 1024...(64 << 20))
            try section.integer("maxMboxesPerCommand", into: &configuration.agent.maxMboxesPerCommand, in: 1...10_000)
            try section.integer(
                "maxResourcesPerCommand",
                into: &configuration.agent.maxResourcesPerCommand,
                in: 1...10_000
            )
            try section.integer("maxInFlight", into: &configuration.agent.maxInFlight, in: 1...100_000)
            try section.integer("maxInFlightPerPeer", into: &configuration.agent.maxInFlightPerPeer, in: 1...100_000)
            try section.optionalString("appSocketGroup", into: &configuration.agent.appSocketGroup)
            try section.optionalString("adminSocketGroup", into: &configuration.agent.adminSocketGroup)
            try section.stringArray("allowedAdminGroups", into: &configuration.agent.allowedAdminGroups)
            try section.oneOf(
                "logLevel",
                ["trace", "debug", "info", "notice", "warning", "error", "critical"],
                into: &configuration.agent.logLevel
            )
        }
        try reader.section(root, "target") { (section: inout ConfigurationReader.Section) throws(ConfigurationError) in
            try section.string("clientCode", into: &configuration.target.clientCode)
            try section.url("serverURL", into: &configuration.target.serverURL)
            try section.integer("environmentId", into: &configuration.target.environmentId, in: 0...Int64.max)
            try section.string("propertyToken", into: &configuration.target.propertyToken)
            try section.seconds("timeout", into: &configuration.target.timeout, in: 0.1...300)
            try section.seconds("sessionTimeout", into: &configuration.target.sessionTimeout, in: 1...86_400)
            try section.integer("cacheBudgetBytes", into: &configuration.target.cacheBudgetBytes, in: 4096...(1 << 32))
            try section.integer(
                "notificationBatchSize",
                into: &configuration.target.notificationBatchSize,
                in: 1...1000
            )
            try section.seconds(
                "notificationBatchAge",
                into: &configuration.target.notificationBatchAge,
                in: 0.05...3600
            )
            try section.integer(
                "notificationQueueCapacity",
                into: &configuration.target.notificationQueueCapacity,
                in: 100...1_000_000
            )
            try section.string("userAgent", into: &configuration.target.userAgent)
            try section.oneOf("platformType", ["android", "ios"], into: &configuration.target.platformType)
        }
        try reader.section(root, "pass") { (section: inout ConfigurationReader.Section) throws(ConfigurationError) in
            try section.url("serverURL", into: &configuration.pass.serverURL)
            try section.string("softwareStatement", into: &configuration.pass.softwareStatement)
            try section.stringArray("requestors", into: &configuration.pass.requestors)
            try section.string("redirectURI", into: &configuration.pass.redirectURI)
            try section.optionalString("deviceIdentifier", into: &configuration.pass.deviceIdentifier)
            try section.string("deviceModel", into: &configuration.pass.deviceModel)
            try section.optionalString("deviceMake", into: &configuration.pass.deviceMake)
            try section.string("deviceVersion", into: &configuration.pass.deviceVersion)
            try section.optionalString("deviceOSVersion", into: &configuration.pass.deviceOSVersion)
            try section.oneOf(
                "connectionType",
                ["LAN", "WLAN", "WiFi", "Cellular", "Ethernet"],
                into: &configuration.pass.connectionType
            )
            try section.integer("maxResourcesPerRequest", into: &configuration.pass.maxResourcesPerRequest, in: 1...100)
            try section.seconds("decisionTTL", into: &configuration.pass.decisionTTL, in: 1...86_400)
            try section.seconds("timeout", into: &configuration.pass.timeout, in: 0.1...300)
            try section.seconds("answerDeadline", into: &configuration.pass.answerDeadline, in: 0.5...600)
            try section.seconds("pacingInterval", into: &configuration.pass.pacingInterval, in: 0.05...60)
            try section.integer("pacingBurst", into: &configuration.pass.pacingBurst, in: 1...100)
        }
        for key in root.keys where !["agent", "target", "pass"].contains(key) {
            reader.warnings.append("unknown key \(key) (ignored)")
        }
        try configuration.checkConsistency()
        return LoadedConfiguration(configuration: configuration, warnings: reader.warnings, path: nil)
    }

    private func checkConsistency() throws(ConfigurationError) {
        let endpoints = [agent.appEndpoint, agent.adminEndpoint, agent.eventsEndpoint]
        guard Set(endpoints).count == endpoints.count else {
            throw ConfigurationError(key: "agent", message: "appEndpoint, adminEndpoint and eventsEndpoint must differ")
        }
        if target.serverURL == nil && target.clientCode.isEmpty {
            throw ConfigurationError(key: "target.clientCode", message: "required unless target.serverURL is set")
        }
    }
}

/// Walks configuration JSON with a known set of keys per section.
struct ConfigurationReader {
    var warnings: [String] = []

    struct Section {
        let name: String
        let object: JSONObject
        var known: [String] = []

        private func key(_ member: String) -> String { "\(name).\(member)" }

        private mutating func value(_ member: String) -> JSONValue? {
            known.append(member)
            return object[member]
        }

        mutating func string(_ member: String, into target: inout String) throws(ConfigurationError) {
            guard let value = value(member) else { return }
            guard case .string(let text) = value else {
                throw ConfigurationError(key: key(member), message: "must be a string, got \(value.typeName)")
            }
            target = text
        }

        mutating func optionalString(_ member: String, into target: inout String?) throws(ConfigurationError) {
            guard let value = value(member) else { return }
            switch value {
            case .null: target = nil
            case .string(let text) where !text.isEmpty: target = text
            default:
                throw ConfigurationError(key: key(member), message: "must be a non-empty string, got \(value.typeName)")
            }
        }

        mutating func stringArray(_ member: String, into target: inout [String]) throws(ConfigurationError) {
            guard let value = value(member) else { return }
            guard case .array(let elements) = value else {
                throw ConfigurationError(
                    key: key(member),
                    message: "must be an array of strings, got \(value.typeName)"
                )
            }
            var strings: [String] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element, !text.isEmpty else {
                    throw ConfigurationError(key: "\(key(member))[\(index)]", message: "must be a non-empty string")
                }
                strings.append(text)
            }
            target = strings
        }

        mutating func oneOf(_ member: String, _ allowed: [String], into target: inout String) throws(ConfigurationError)
        {
            var text = target
            try string(member, into: &text)
            guard allowed.contains(text) else {
                throw ConfigurationError(
                    key: key(member),
                    message: "must be one of \(allowed.joined(separator: ", ")); got \"\(text)\""
                )
            }
            target = text
        }

        mutating func endpoint(_ member: String, into target: inout String) throws(ConfigurationError) {
            var text = target
            try string(member, into: &text)
            let schemes = ["ipc://", "tcp://", "inproc://"]
            guard schemes.contains(where: { text.hasPrefix($0) }), !schemes.contains(text) else {
                throw ConfigurationError(
                    key: key(member),
                    message: "must be a ZeroMQ endpoint such as ipc:///run/preflight/app.sock; got \"\(text)\""
                )
            }
            target = text
        }

        mutating func path(_ member: String, into target: inout String) throws(ConfigurationError) {
            var text = target
            try string(member, into: &text)
            guard !text.isEmpty, !text.contains("\u{0}") else {
                throw ConfigurationError(key: key(member), message: "must be a folder path")
            }
            target = text
        }

        mutating func url(_ member: String, into target: inout String?) throws(ConfigurationError) {
            guard let value = value(member) else { return }
            if case .null = value {
                target = nil
                return
            }
            guard case .string(let text) = value else {
                throw ConfigurationError(key: key(member), message: "must be a string, got \(value.typeName)")
            }
            guard let url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme),
                url.host != nil
            else {
                throw ConfigurationError(key: key(member), message: "must be an http or https URL; got \"\(text)\"")
            }
            target = text.hasSuffix("/") ? String(text.dropLast()) : text
        }

        mutating func integer<Number: FixedWidthInteger>(
            _ member: String,
            into target: inout Number,
            in range: ClosedRange<Number>
        ) throws(ConfigurationError) {
            guard let value = value(member) else { return }
            guard case .integer(let number) = value, let converted = Number(exactly: number), range.contains(converted)
            else {
                throw ConfigurationError(
                    key: key(member),
                    message:
                        "must be an integer from \(range.lowerBound) to \(range.upperBound); got \(JSONWriter.string(value))"
                )
            }
            target = converted
        }

        mutating func seconds(
            _ member: String,
            into target: inout Double,
            in range: ClosedRange<Double>
        )
            throws(ConfigurationError)
        {
            guard let value = value(member) else { return }
            guard let number = value.doubleValue, range.contains(number) else {
                throw ConfigurationError(
                    key: key(member),
                    message: "must be a number of seconds from \(range.lowerBound) to \(range.upperBound); "
                        + "got \(JSONWriter.string(value))"
                )
            }
            target = number
        }
    }

    mutating func section(
        _ root: JSONObject,
        _ name: String,
        _ body: (inout Section) throws(ConfigurationError) -> Void
    ) throws(ConfigurationError) {
        guard let value = root[name] else { return }
        guard case .object(let object) = value else {
            throw ConfigurationError(key: name, message: "must be an object, got \(value.typeName)")
        }
        var section = Section(name: name, object: object)
        try body(&section)
        for key in object.keys where !section.known.contains(key) {
            warnings.append("unknown key \(name).\(key) (ignored)")
        }
    }
}

extension AgentConfiguration {
    /// The effective configuration as JSON, secrets replaced by a note of their length.
    public var redactedJSON: JSONValue {
        [
            "agent": [
                "appEndpoint": .string(agent.appEndpoint),
                "adminEndpoint": .string(agent.adminEndpoint),
                "eventsEndpoint": .string(agent.eventsEndpoint),
                "stateDirectory": .string(agent.stateDirectory),
                "maxBodyBytes": .integer(Int64(agent.maxBodyBytes)),
                "maxMboxesPerCommand": .integer(Int64(agent.maxMboxesPerCommand)),
                "maxResourcesPerCommand": .integer(Int64(agent.maxResourcesPerCommand)),
                "maxInFlight": .integer(Int64(agent.maxInFlight)),
                "maxInFlightPerPeer": .integer(Int64(agent.maxInFlightPerPeer)),
                "logLevel": .string(agent.logLevel),
                "appSocketGroup": agent.appSocketGroup.map { .string($0) } ?? .null,
                "adminSocketGroup": agent.adminSocketGroup.map { .string($0) } ?? .null,
                "allowedAdminGroups": .array(agent.allowedAdminGroups.map { .string($0) }),
            ],
            "target": [
                "clientCode": .string(target.clientCode),
                "serverURL": .string(target.effectiveServerURL),
                "environmentId": .integer(target.environmentId),
                "propertyToken": .string(target.propertyToken),
                "timeout": .number(target.timeout),
                "sessionTimeout": .number(target.sessionTimeout),
                "cacheBudgetBytes": .integer(Int64(target.cacheBudgetBytes)),
                "notificationBatchSize": .integer(Int64(target.notificationBatchSize)),
                "notificationBatchAge": .number(target.notificationBatchAge),
                "notificationQueueCapacity": .integer(Int64(target.notificationQueueCapacity)),
                "userAgent": .string(target.userAgent),
                "platformType": .string(target.platformType),
            ],
            "pass": [
                "serverURL": .string(pass.effectiveServerURL),
                "softwareStatement": .string(Self.redacted(pass.softwareStatement)),
                "requestors": .array(pass.requestors.map { .string($0) }),
                "redirectURI": .string(pass.redirectURI),
                "deviceIdentifier": .string(pass.deviceIdentifier == nil ? "(machine-id)" : "(configured)"),
                "deviceModel": .string(pass.deviceModel),
                "deviceVersion": .string(pass.deviceVersion),
                "connectionType": .string(pass.connectionType),
                "maxResourcesPerRequest": .integer(Int64(pass.maxResourcesPerRequest)),
                "decisionTTL": .number(pass.decisionTTL),
                "timeout": .number(pass.timeout),
                "answerDeadline": .number(pass.answerDeadline),
                "pacingInterval": .number(pass.pacingInterval),
                "pacingBurst": .integer(Int64(pass.pacingBurst)),
            ],
        ]
    }

    /// "(redacted, 412 characters)": enough to tell a set secret from an empty one, nothing more.
    static func redacted(_ secret: String) -> String {
        secret.isEmpty ? "(empty)" : "(redacted, \(secret.count) characters)"
    }
}

extension AgentConfiguration.Target {
    /// The Target service's view of this section.
    public var serviceConfiguration: TargetConfiguration {
        var device = DeviceDescription(userAgent: userAgent, applicationVersion: preflightVersion)
        device.platformType = platformType
        return TargetConfiguration(
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
            pacing: PassPacing(interval: .milliseconds(Int64(pacingInterval * 1000)), burst: pacingBurst)
        )
    }
}
