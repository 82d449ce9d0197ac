import Logging
import PassEntitlement
import PreflightProtocol
import TargetOffers

/// Every key of the configuration file, once, in the order `config.show` and docs/OPERATIONS.md list
/// them. A key's field and default value live in ``AgentConfiguration``; everything else about it is here.
///
/// To add a key: its field (with its default) in ``AgentConfiguration``, one declaration below, and the
/// regenerated row in docs/OPERATIONS.md (`ConfigurationTableTests` prints it when it differs).
extension AgentConfiguration {
    public static let keys: [ConfigurationKey] = agentKeys + targetKeys + passKeys

    /// The keys of one section, in the table's order.
    static func keys(in section: ConfigurationSection) -> [ConfigurationKey] {
        keys.filter { $0.section == section }
    }

    /// `section.name` of the key that sets `field`, for messages that name a key.
    public static func path(of field: PartialKeyPath<AgentConfiguration> & Sendable) -> String {
        guard let key = keys.first(where: { $0.field == field }) else {
            preconditionFailure("\(field) is not in AgentConfiguration.keys")
        }
        return key.path
    }

    private static let agentKeys: [ConfigurationKey] = [
        ConfigurationKey(
            .agent,
            AgentEndpoint.app.configurationKey,
            \.agent.appEndpoint,
            .endpoint,
            .needsRestart,
            "where apps connect"
        ),
        ConfigurationKey(
            .agent,
            AgentEndpoint.admin.configurationKey,
            \.agent.adminEndpoint,
            .endpoint,
            .needsRestart,
            "where `preflightctl` sends admin commands",
            allowed: "ZeroMQ endpoint, as above"
        ),
        ConfigurationKey(
            .agent,
            AgentEndpoint.events.configurationKey,
            \.agent.eventsEndpoint,
            .endpoint,
            .needsRestart,
            "where `preflightctl watch` and apps receive live events",
            allowed: "ZeroMQ endpoint, as above"
        ),
        ConfigurationKey(
            .agent,
            "stateDirectory",
            \.agent.stateDirectory,
            .folder,
            .needsRestart,
            "what survives restarts: Target visitor id, notification journal, Adobe Pass registration"
        ),
        ConfigurationKey(
            .agent,
            "maxBodyBytes",
            \.agent.maxBodyBytes,
            .integer(1024...(64 << 20)),
            .applies,
            "largest request body answered; larger ones get `payload_too_large`, beyond twice this libzmq drops "
                + "the connection",
            allowed: "integer 1024 to 67108864 (64 MiB)",
            default: "1048576 (1 MiB)",
            reloadNote: "reload, but the drop limit stays at twice the value at start: raising it more than that "
                + "needs a restart"
        ),
        ConfigurationKey(
            .agent,
            "maxMboxesPerCommand",
            \.agent.maxMboxesPerCommand,
            .integer(1...10_000),
            .applies,
            "most mboxes per `prefetch` and requests per `loadRequests`; more get `invalid_argument`"
        ),
        ConfigurationKey(
            .agent,
            "maxResourcesPerCommand",
            \.agent.maxResourcesPerCommand,
            .integer(1...10_000),
            .applies,
            "most resources per `preauthorize`; more get `invalid_argument`"
        ),
        ConfigurationKey(
            .agent,
            "maxInFlight",
            \.agent.maxInFlight,
            .integer(1...100_000),
            .applies,
            "most requests waiting on Target or Adobe Pass at once, whole agent; beyond it `overloaded` (cache "
                + "hits are still served)"
        ),
        ConfigurationKey(
            .agent,
            "maxInFlightPerPeer",
            \.agent.maxInFlightPerPeer,
            .integer(1...100_000),
            .applies,
            "the same limit for one app connection"
        ),
        ConfigurationKey(
            .agent,
            "logLevel",
            \.agent.logLevel,
            .oneOf(Logger.Level.allCases.map(\.rawValue)),
            .needsRestart,
            "least severe level written to the journal; `preflightd --log-level` overrides it"
        ),
        ConfigurationKey(
            .agent,
            "appSocketGroup",
            \.agent.appSocketGroup,
            .optionalString,
            .needsRestart,
            "group of the app and events socket files (`preflight` on a box); a group that does not exist is "
                + "logged and skipped",
            allowed: "group name (non-empty string) or `null`",
            default: "none: the agent's own group"
        ),
        ConfigurationKey(
            .agent,
            "adminSocketGroup",
            \.agent.adminSocketGroup,
            .optionalString,
            .needsRestart,
            "group of the admin socket file (`preflight-admin` on a box)",
            allowed: "group name (non-empty string) or `null`",
            default: "none: the agent's own group"
        ),
        ConfigurationKey(
            .agent,
            "allowedAdminGroups",
            \.agent.allowedAdminGroups,
            .strings,
            .needsRestart,
            "when set, admin commands are answered only for root, the agent's own user and members of these "
                + "groups, checked per connection from the kernel's peer credentials (ZAP); others get "
                + "`not_permitted`",
            allowed: "array of group names (non-empty strings)",
            default: "`[]` (no check)"
        ),
    ]

    private static let targetKeys: [ConfigurationKey] = [
        ConfigurationKey(
            .target,
            "clientCode",
            \.target.clientCode,
            .string,
            .applies,
            "the Target account; picks the server `https://CLIENTCODE.tt.omtrdc.net`",
            default: "`\"\"` (required unless `serverURL` is set)"
        ),
        ConfigurationKey(
            .target,
            "serverURL",
            \.target.serverURL,
            .url,
            .applies,
            "Target's address (a trailing `/` is dropped)",
            default: "`\(TargetConfiguration.defaultServerURL(clientCode: "{clientCode}"))`",
            display: { .string($0.target.effectiveServerURL) }
        ),
        ConfigurationKey(
            .target,
            "environmentId",
            \.target.environmentId,
            .integer(0...Int64.max),
            .applies,
            "the Target environment",
            default: "0 (not sent: Target's default environment)"
        ),
        ConfigurationKey(
            .target,
            "propertyToken",
            \.target.propertyToken,
            .string,
            .applies,
            "the Target property (`property.token`)",
            default: "`\"\"` (not sent)"
        ),
        ConfigurationKey(
            .target,
            "timeout",
            \.target.timeout,
            .seconds(0.1...300),
            .applies,
            "longest wait for one Target call; then the app gets its default content"
        ),
        ConfigurationKey(
            .target,
            "sessionTimeout",
            \.target.sessionTimeout,
            .seconds(1...86_400),
            .applies,
            "idle time after which the Target session id is renewed",
            default: "1800 (30 min)"
        ),
        ConfigurationKey(
            .target,
            "cacheBudgetBytes",
            \.target.cacheBudgetBytes,
            .integer(4096...(1 << 32)),
            .applies,
            "memory for prefetched offers; beyond it the least recently used are evicted",
            allowed: "integer 4096 to 4294967296 (4 GiB)",
            default: "33554432 (32 MiB)"
        ),
        ConfigurationKey(
            .target,
            "notificationBatchSize",
            \.target.notificationBatchSize,
            .integer(1...1000),
            .applies,
            "display notifications go out when this many are queued..."
        ),
        ConfigurationKey(
            .target,
            "notificationBatchAge",
            \.target.notificationBatchAge,
            .seconds(0.05...3600),
            .applies,
            "...or when the oldest has waited this long"
        ),
        ConfigurationKey(
            .target,
            "notificationQueueCapacity",
            \.target.notificationQueueCapacity,
            .integer(100...1_000_000),
            .needsRestart,
            "most notifications held; beyond it the oldest are dropped (`Dropped (full)`)"
        ),
        ConfigurationKey(
            .target,
            "userAgent",
            \.target.userAgent,
            .string,
            .applies,
            "`User-Agent` header and `context.userAgent` sent to Target",
            default: "`Preflight/VERSION (Linux; SetTopBox)`"
        ),
        ConfigurationKey(
            .target,
            "platformType",
            \.target.platformType,
            .oneOf(["android", "ios"]),
            .applies,
            "`context.mobilePlatform.platformType` sent to Target (the only two values it accepts)",
            allowed: "`android` or `ios`"
        ),
        ConfigurationKey(
            .target,
            "analyticsLogging",
            \.target.analyticsLogging,
            .oneOf(["none", "client_side", "server_side"]),
            .applies,
            "`experienceCloud.analytics.logging` sent to Target; `client_side` returns the Analytics for Target "
                + "payloads that `loadRequests` with `withData` passes to apps",
            allowed: "`none` (not sent), `client_side`, `server_side`"
        ),
        ConfigurationKey(
            .target,
            "privacy",
            \.target.privacy,
            .oneOf(TargetPrivacy.allCases.map(\.rawValue)),
            .applies,
            "the box's privacy status for Target: `optedOut` sends nothing and drops the visitor ids, cached offers "
                + "and queued notifications; `unknown` sends nothing and holds notifications until `optedIn`. "
                + "`preflightctl target privacy` overrides it until this value changes",
            allowed: "`optedIn`, `optedOut`, `unknown`"
        ),
        ConfigurationKey(
            .target,
            "decisioningMethod",
            \.target.decisioningMethod,
            .oneOf(DecisioningMethod.allCases.map(\.rawValue)),
            .applies,
            "where offers are decided, as Adobe's SDKs name it: `server-side` by Target's edge; `on-device` and "
                + "`hybrid` fetch Target's rules artifact, decide on the box the mboxes it holds and ask Target only "
                + "for the others; before any artifact, `hybrid` asks Target and `on-device` answers defaults",
            allowed: "`server-side`, `on-device`, `hybrid`"
        ),
        ConfigurationKey(
            .target,
            "environment",
            \.target.environment,
            .string,
            .applies,
            "the Target environment whose rules artifact is fetched (the SDKs' `environment`)"
        ),
        ConfigurationKey(
            .target,
            "organizationId",
            \.target.organizationId,
            .string,
            .applies,
            "the Experience Cloud organization id (`…@AdobeOrg`); the key of the obfuscated artifact (`artifactFormat` `bin`)",
            default: "`\"\"`"
        ),
        ConfigurationKey(
            .target,
            "artifactURL",
            \.target.artifactURL,
            .url,
            .applies,
            "where the rules artifact is fetched from (on-device and hybrid decisioning)",
            default:
                "`https://assets.adobetarget.com/{clientCode}/{environment}/v1/[{propertyToken}/]rules.{artifactFormat}`",
            display: { .string($0.target.effectiveArtifactURL) }
        ),
        ConfigurationKey(
            .target,
            "artifactFormat",
            \.target.artifactFormat,
            .oneOf(ArtifactFormat.allCases.map(\.rawValue)),
            .applies,
            "`json` fetches `rules.json`; `bin` the obfuscated `rules.bin`, read with `organizationId`",
            allowed: "`json`, `bin`"
        ),
        ConfigurationKey(
            .target,
            "artifactPollingInterval",
            \.target.artifactPollingInterval,
            .zeroOrSeconds(300...86_400),
            .applies,
            "how often the rules artifact is fetched again (`If-None-Match`; a 304 keeps the rules); 0 fetches at "
                + "start and on reload only. A reload (SIGHUP) fetches at once",
            default: "300 (5 min)"
        ),
        ConfigurationKey(
            .target,
            "geoURL",
            \.target.geoURL,
            .url,
            .applies,
            "Target's geo service, asked (without the box's address: it locates the caller) where the box is when "
                + "the rules artifact targets by geo; looked up when such an artifact arrives, on the artifact's "
                + "polling interval and on reload",
            default: "`\(GeoPolling.defaultURL)`",
            display: { .string($0.target.effectiveGeoURL) }
        ),
    ]

    private static let passKeys: [ConfigurationKey] = [
        ConfigurationKey(
            .pass,
            "serverURL",
            \.pass.serverURL,
            .url,
            .applies,
            "Adobe Pass's address (a trailing `/` is dropped)",
            default: "`\(PassConfiguration.defaultServerURL)`",
            display: { .string($0.pass.effectiveServerURL) }
        ),
        ConfigurationKey(
            .pass,
            PassConfigurationKey.softwareStatement.rawValue,
            \.pass.softwareStatement,
            .string,
            .applies,
            "the software statement from the Adobe Pass TVE Dashboard, needed to register the box; a secret: "
                + "shown only as `(redacted, N characters)`",
            secret: true
        ),
        ConfigurationKey(
            .pass,
            PassConfigurationKey.requestors.rawValue,
            \.pass.requestors,
            .strings,
            .applies,
            "the service providers this box serves; any other gets `requestor_not_configured`",
            allowed: "array of requestor ids (non-empty strings)"
        ),
        ConfigurationKey(
            .pass,
            "redirectURI",
            \.pass.redirectURI,
            .string,
            .applies,
            "`redirect_uri` sent at registration (never visited)"
        ),
        ConfigurationKey(
            .pass,
            "deviceIdentifier",
            \.pass.deviceIdentifier,
            .optionalString,
            .applies,
            "a fixed box id (a serial number); hashed before it is sent; `config show` says only whether it is "
                + "set",
            default: "none: SHA-256 of `/etc/machine-id`",
            display: { .string($0.pass.deviceIdentifier == nil ? "(machine-id)" : "(configured)") }
        ),
        ConfigurationKey(
            .pass,
            "deviceModel",
            \.pass.deviceModel,
            .string,
            .applies,
            "`model` in the `X-Device-Info` header"
        ),
        ConfigurationKey(
            .pass,
            "deviceMake",
            \.pass.deviceMake,
            .optionalString,
            .applies,
            "`make` in `X-Device-Info`",
            default: "none (not sent)"
        ),
        ConfigurationKey(
            .pass,
            "deviceVersion",
            \.pass.deviceVersion,
            .string,
            .applies,
            "hardware or firmware `version` in `X-Device-Info`"
        ),
        ConfigurationKey(
            .pass,
            "deviceOSVersion",
            \.pass.deviceOSVersion,
            .optionalString,
            .applies,
            "`osVersion` in `X-Device-Info`",
            default: "the kernel release (`uname -r`)"
        ),
        ConfigurationKey(
            .pass,
            "connectionType",
            \.pass.connectionType,
            .oneOf(["LAN", "WLAN", "WiFi", "Cellular", "Ethernet"]),
            .applies,
            "`connectionType` in `X-Device-Info`"
        ),
        ConfigurationKey(
            .pass,
            "maxResourcesPerRequest",
            \.pass.maxResourcesPerRequest,
            .integer(1...100),
            .applies,
            "most resources in one call to Adobe Pass; an app's longer list is split"
        ),
        ConfigurationKey(
            .pass,
            "decisionTTL",
            \.pass.decisionTTL,
            .seconds(1...86_400),
            .applies,
            "how long a permit decision is served from the agent's cache",
            default: "600 (10 min)"
        ),
        ConfigurationKey(
            .pass,
            "timeout",
            \.pass.timeout,
            .seconds(0.1...300),
            .applies,
            "longest wait for one Adobe Pass call"
        ),
        ConfigurationKey(
            .pass,
            "answerDeadline",
            \.pass.answerDeadline,
            .seconds(0.5...600),
            .applies,
            "longest an app waits for a `preauthorize` answer, pacing and retries included; then `network_error`"
        ),
        ConfigurationKey(
            .pass,
            "pacingInterval",
            \.pass.pacingInterval,
            .seconds(0.05...60),
            .applies,
            "spacing of Adobe Pass calls once the burst is spent (Adobe allows about 1 per second)"
        ),
        ConfigurationKey(
            .pass,
            "pacingBurst",
            \.pass.pacingBurst,
            .integer(1...100),
            .applies,
            "calls allowed at once after start (Adobe's one-time burst of 10)",
            reloadNote: "reload can only lower what is left of the burst; a higher value needs a restart"
        ),
        ConfigurationKey(
            .pass,
            "signInPollInterval",
            \.pass.signInPollInterval,
            .seconds(1...60),
            .applies,
            "how often a pending sign-in asks Adobe whether the user has signed in on the second screen",
            default: "5"
        ),
    ]
}
