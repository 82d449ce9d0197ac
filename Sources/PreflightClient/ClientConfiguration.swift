import PreflightProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PreflightClient {
    /// The agent's configuration file, where the app endpoint is found.
    public static let defaultConfigurationFile = ConfigurationSection.defaultFile

    /// The app endpoint when the configuration file does not name one (docs/PROTOCOL.md).
    public static let defaultAppEndpoint = AgentEndpoint.app.defaultAddress

    /// The events endpoint when the configuration file does not name one (docs/PROTOCOL.md).
    public static let defaultEventsEndpoint = AgentEndpoint.events.defaultAddress

    /// The app endpoint the agent on this box serves: `agent.appEndpoint` of `configurationFile`, or
    /// ``defaultAppEndpoint`` when the file is missing, unreadable, not JSON, or does not name one.
    ///
    /// Only that one key is read; the agent itself validates the rest of its configuration.
    public static func configuredAppEndpoint(configurationFile: String = defaultConfigurationFile) -> String {
        configuredEndpoint(.app, in: configurationFile)
    }

    /// The events endpoint the agent on this box publishes on, for ``EventSubscriber``: `agent.eventsEndpoint`
    /// of `configurationFile`, or ``defaultEventsEndpoint`` when the file is missing, unreadable, not JSON, or
    /// does not name one.
    public static func configuredEventsEndpoint(configurationFile: String = defaultConfigurationFile) -> String {
        configuredEndpoint(.events, in: configurationFile)
    }

    /// `endpoint` as the configuration file sets it, else its default; only that one key is read.
    private static func configuredEndpoint(_ endpoint: AgentEndpoint, in configurationFile: String) -> String {
        guard let bytes = readSmallFile(configurationFile), let value = try? JSONReader.read(bytes) else {
            return endpoint.defaultAddress
        }
        return endpoint.configured(in: value) ?? endpoint.defaultAddress
    }

    /// Timeouts and retries of a client. The defaults suit an app on the box; tests shorten them.
    ///
    /// Every command the client sends is safe to repeat (a prefetch replaces the cache entry it made, a load
    /// and a preauthorize only read, a clear of an empty cache clears nothing, a second `getAuthentication` joins
    /// the code of the first, a second `logout` finds nothing left to sign out of, a visitor id set again is the
    /// same id, a second `resetExperience` starts another new visitor, forgetting only what calls since the first
    /// had learned), so a request that got no reply is sent again on a new socket ("Lazy Pirate"). A call gives
    /// up after `retries + 1` attempts: at most about `(retries + 1) × timeout` plus the delays between attempts.
    public struct Configuration: Sendable, Hashable {
        /// How long one attempt of `prefetch`, `loadRequests`, `clearPrefetchCache`, `ping` or a visitor id's get
        /// or set waits for its reply. The agent answers a load within its Target timeout (`target.timeout`,
        /// default 5 s), so the default is a little longer than that.
        public var requestTimeout: Duration
        /// How long one attempt of `preauthorize`, or of an entitlement call (`checkAuthentication`,
        /// `getAuthorization`, `logout`, ...), waits: the agent answers within `pass.answerDeadline` (default 15 s),
        /// even when it must pace its calls to Adobe Pass. `resetExperience` waits as long: the agent first sends
        /// the queued display notifications to Target, which takes up to `target.timeout` per batch.
        public var preauthorizeTimeout: Duration
        /// Attempts after the first, for requests without a reply, while the agent is not listening, or when
        /// it answers `shutting_down` or `overloaded`.
        public var retries: Int
        /// Wait before another attempt when the agent is not listening or is shutting down (a restart takes
        /// about a second); doubled on each attempt. An `overloaded` reply's `retryAfterMs` is honoured instead.
        public var retryDelay: Duration
        /// The Target property (workspace) of this app's publisher, sent as `propertyToken` with its prefetches,
        /// loads, clicks and displays: AEP's `target.propertyToken` setting (or `at_property`). Apps of two
        /// publishers on one box each get their workspace's offers, and never the other's. nil: the agent's
        /// `target.propertyToken`.
        public var propertyToken: String?

        /// The defaults: 6 s per Target attempt, 20 s per preauthorize attempt, 2 retries, 100 ms apart, the
        /// agent's Target property.
        public init(
            requestTimeout: Duration = .seconds(6),
            preauthorizeTimeout: Duration = .seconds(20),
            retries: Int = 2,
            retryDelay: Duration = .milliseconds(100),
            propertyToken: String? = nil
        ) {
            self.requestTimeout = requestTimeout
            self.preauthorizeTimeout = preauthorizeTimeout
            self.retries = max(0, retries)
            self.retryDelay = retryDelay
            self.propertyToken = propertyToken
        }
    }
}

/// The contents of a file of at most 1 MiB, or nil when it cannot be read (absent, not permitted, too big).
func readSmallFile(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if count == 0 { return bytes }
        bytes.append(contentsOf: chunk[0..<count])
        if bytes.count > limit { return nil }
    }
}
