import Logging
import PassAuthorization
import PreflightProtocol
import ServiceLifecycle
import StateFiles
import TargetOffers
import UnixSignals
import UpstreamHTTPClient

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The running agent: its sockets are bound before it is handed to a `ServiceGroup`, so that start-up
/// failures (an endpoint in use) surface as an exit code before anything claims to be ready.
public final class Agent: Service {
    public let runtime: AgentRuntime
    public let server: IPCServer
    public let target: TargetService
    public let pass: Preauthorizer
    private let transport: AsyncHTTPClientTransport
    /// systemd's notification socket, when started by systemd (`Type=notify`).
    private let notifier: SystemdNotifier?
    /// SIGHUP, trapped before the endpoints are bound: a reload asked for as soon as the agent
    /// answers must not be lost (nor kill it, SIGHUP's default action).
    private let hangups: UnixSignalsSequence
    private let logger: Logger

    private init(
        runtime: AgentRuntime,
        server: IPCServer,
        target: TargetService,
        pass: Preauthorizer,
        transport: AsyncHTTPClientTransport,
        notifier: SystemdNotifier?,
        hangups: UnixSignalsSequence,
        logger: Logger
    ) {
        self.notifier = notifier
        self.hangups = hangups
        self.runtime = runtime
        self.server = server
        self.target = target
        self.pass = pass
        self.transport = transport
        self.logger = logger
    }

    /// Binds every endpoint and starts the I/O thread.
    public static func start(
        configuration: AgentConfiguration,
        configurationPath: String?,
        logger: Logger
    ) async throws(AgentError) -> Agent {
        for path in FileSystem.removeStaleTemporaries(in: configuration.agent.stateDirectory) {
            logger.notice("removed a temporary file an earlier run left mid-write", metadata: ["file": "\(path)"])
        }
        let runtime = AgentRuntime(configuration: configuration, configurationPath: configurationPath)
        let transport = AsyncHTTPClientTransport()
        let target = TargetService(
            configuration: configuration.target.serviceConfiguration,
            transport: transport,
            stateDirectory: configuration.agent.stateDirectory,
            logger: logger,
            publish: { topic, body in runtime.publish(topic, body) }
        )
        let pass = Preauthorizer(
            configuration: configuration.pass.serviceConfiguration,
            transport: transport,
            stateDirectory: configuration.agent.stateDirectory,
            logger: logger,
            publish: { topic, body in runtime.publish(topic, body) }
        )
        let dispatcher = CommandDispatcher(
            runtime: runtime,
            target: target,
            pass: pass,
            statistics: CommandStatistics(),
            logger: logger
        )
        let notifier = SystemdNotifier.fromEnvironment()
        // WATCHDOG=1 goes out from the I/O loop's own tick: a wedged loop stops the pings and systemd
        // restarts the agent. The loop turns at least twice per ping interval.
        let watchdog = SystemdWatchdog.fromEnvironment(notifier: notifier)
        let pingInterval = SystemdNotifier.watchdogInterval(ProcessInfo.processInfo.environment)
        let tick = pingInterval.map { min(.seconds(1), $0 / 2) } ?? .seconds(1)
        var onTick: (@Sendable () -> Void)?
        if let watchdog {
            onTick = { watchdog.tick() }
        }
        let server = try IPCServer(
            endpoints: IPCServer.Endpoints(
                app: configuration.agent.appEndpoint,
                admin: configuration.agent.adminEndpoint,
                events: configuration.agent.eventsEndpoint,
                appGroup: configuration.agent.appSocketGroup,
                adminGroup: configuration.agent.adminSocketGroup,
                allowedAdminGroups: configuration.agent.allowedAdminGroups
            ),
            handler: dispatcher,
            maxBodyBytes: configuration.agent.maxBodyBytes,
            logger: logger,
            tickInterval: tick,
            onTick: onTick
        )
        runtime.server = server
        server.setLimits(configuration.admissionLimits)
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        do throws(AgentError) {
            try await server.start()
        } catch {
            await transport.shutdown()
            throw error
        }
        return Agent(
            runtime: runtime,
            server: server,
            target: target,
            pass: pass,
            transport: transport,
            notifier: notifier,
            hangups: hangups,
            logger: logger
        )
    }

    /// Serves until graceful shutdown (SIGTERM, SIGINT), then stops taking requests, lets in-flight
    /// work reply, and removes the socket files.
    public func run() async throws {
        let notificationSender = Task { await target.run() }
        // Registration, token and each requestor's configuration, retried until they succeed.
        let passStartup = Task { await pass.run() }
        defer { passStartup.cancel() }
        let reloader = Task {
            for await _ in hangups {
                reload()
            }
        }
        defer { reloader.cancel() }
        // Every endpoint is bound (start() returned): only now may systemd consider us started.
        notifier?.ready(status: statusLine())
        let statusUpdates = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(10))
                notifier?.status(statusLine())
            }
        }
        defer { statusUpdates.cancel() }
        runtime.publish("agent.ready", ["version": .string(preflightVersion)])
        logger.info("ready", metadata: ["version": "\(preflightVersion)"])
        try? await gracefulShutdown()
        notifier?.stopping()
        logger.info("stopping")
        runtime.publish("agent.stopping", ["reason": "signal"])
        // Stop taking requests first, so nothing new is queued behind the flush.
        await server.stop()
        if target.notifications.summary.pending > 0 {
            // Bounded: what Target does not confirm in time stays in the journal for the next start.
            let flush = Task { await target.flushNotifications() }
            let watchdog = Task {
                try? await Task.sleep(for: .seconds(2))
                flush.cancel()
            }
            let confirmed = await flush.value
            watchdog.cancel()
            logger.info(
                "notifications flushed",
                metadata: ["confirmed": "\(confirmed)", "journaled": "\(target.notifications.summary.pending)"]
            )
        }
        notificationSender.cancel()
        await notificationSender.value
        await transport.shutdown()
        logger.info("stopped")
    }

    /// One line for `systemctl status`: `serving; 12 offers cached; target ok; pass: 1 of 1 requestors authenticated`.
    public func statusLine() -> String {
        let cached = target.cache.summary.entries
        let counters = target.counters
        let targetHealth: String
        switch (counters.lastSuccessAtMs, counters.lastErrorAtMs) {
        case (nil, nil): targetHealth = "target idle"
        case (let success?, let failure) where failure.map({ success >= $0 }) ?? true: targetHealth = "target ok"
        default: targetHealth = "target failing (\(counters.lastErrorCode ?? "error"))"
        }
        let requestors = pass.snapshot()["requestors"]?.objectValue ?? JSONObject()
        let authenticated = requestors.filter { $0.value["session"]?["state"]?.stringValue == "authenticated" }.count
        var line = "serving; \(cached) offers cached; \(targetHealth)"
        if !requestors.isEmpty {
            line += "; pass: \(authenticated) of \(requestors.count) requestors authenticated"
        }
        let queued = target.notifications.summary.pending
        if queued > 0 { line += "; \(queued) notifications queued" }
        return line
    }

    /// Re-reads the configuration file (SIGHUP). Upstream settings, limits, requestors and timeouts
    /// apply at once; the cache, the session and the queue are kept. Endpoint and state-directory
    /// changes need a restart and are refused with a log line; a broken file keeps the running
    /// configuration. Returns whether a new configuration was applied.
    @discardableResult
    public func reload() -> Bool {
        guard let path = runtime.configurationPath else { return false }
        notifier?.reloading()
        // READY=1 again whatever the outcome: systemd waits for it after RELOADING=1.
        defer { notifier?.ready(status: statusLine()) }
        let loaded: LoadedConfiguration
        do {
            loaded = try AgentConfiguration.load(path: path)
        } catch {
            logger.error(
                "reload refused; the running configuration is kept",
                metadata: ["file": "\(path)", "error": "\(error)"]
            )
            runtime.publish("agent.reloaded", ["applied": false, "error": .string(error.description)])
            return false
        }
        for warning in loaded.warnings {
            logger.warning("configuration: \(warning)", metadata: ["file": "\(path)"])
        }
        let (next, refused) = AgentConfiguration.reloaded(loaded.configuration, running: runtime.configuration)
        for change in refused {
            logger.warning(
                "\(change.key.path) changed; that needs a restart (systemctl restart preflightd), keeping \(JSONWriter.string(change.running))",
                metadata: ["requested": "\(JSONWriter.string(change.requested))"]
            )
        }
        runtime.configuration = next
        target.update(configuration: next.target.serviceConfiguration)
        pass.update(configuration: next.pass.serviceConfiguration)
        server.setLimits(next.admissionLimits)
        logger.info("configuration reloaded", metadata: ["file": "\(path)"])
        runtime.publish("agent.reloaded", ["applied": true])
        return true
    }
}
