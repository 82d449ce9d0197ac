import Logging
import PassEntitlement
import PreflightCore
import PreflightProtocol
import ServiceLifecycle
import StateFiles
import TargetOffers
import UnixSignals
import UpstreamHTTP
import UpstreamHTTPClient

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The agent's parts, assembled but not yet serving: ``services`` are its jobs, for one `ServiceGroup`.
/// The endpoints are bound when the group runs ``IPCService``; a failure there (an endpoint in use) ends
/// the group with an ``AgentError`` before anything claims to be ready.
public final class Agent: Sendable {
    public let runtime: AgentRuntime
    public let server: IPCServer
    public let target: TargetService
    public let pass: Entitlement
    let transport: AsyncHTTPClientTransport
    /// Target's Delivery API's own connection (falls back to `transport`).
    let delivery: KeepAliveConnection
    /// systemd's notification socket, when started by systemd (`Type=notify`).
    let notifier: SystemdNotifier?
    /// SIGHUP, trapped before the endpoints are bound: a reload asked for as soon as the agent
    /// answers must not be lost (nor kill it, SIGHUP's default action).
    private let hangups: UnixSignalsSequence
    private let requestWork: RequestWorkService
    let logger: Logger

    private init(
        runtime: AgentRuntime,
        server: IPCServer,
        target: TargetService,
        pass: Entitlement,
        transport: AsyncHTTPClientTransport,
        delivery: KeepAliveConnection,
        notifier: SystemdNotifier?,
        hangups: UnixSignalsSequence,
        requestWork: RequestWorkService,
        logger: Logger
    ) {
        self.notifier = notifier
        self.hangups = hangups
        self.runtime = runtime
        self.server = server
        self.target = target
        self.pass = pass
        self.transport = transport
        self.delivery = delivery
        self.requestWork = requestWork
        self.logger = logger
    }

    /// Every job of the agent, in dependency order: a `ServiceGroup` starts them in this order and stops
    /// them in reverse, so the endpoints close before the work they hand out is cancelled, the queued
    /// notifications are flushed after the last load, and the HTTP client goes last.
    public var services: [any Service] {
        [
            UpstreamTransportService(transport: transport, delivery: delivery),
            NotificationSenderService(target: target, logger: logger),
            ArtifactPollerService(target: target),
            GeoPollerService(target: target),
            PassBackgroundService(pass: pass),
            requestWork,
            IPCService(agent: self),
            ReloadService(agent: self, hangups: hangups),
            StatusReportService(agent: self),
        ]
    }

    /// Builds every part; nothing is bound and nothing runs until the group runs ``services``.
    public static func assemble(
        configuration: AgentConfiguration,
        configurationPath: String?,
        logger: Logger
    ) async throws(AgentError) -> Agent {
        for path in FileSystem.removeStaleTemporaries(in: configuration.agent.stateDirectory) {
            logger.notice("removed a temporary file an earlier run left mid-write", metadata: ["file": "\(path)"])
        }
        let runtime = AgentRuntime(configuration: configuration, configurationPath: configurationPath)
        let transport = AsyncHTTPClientTransport()
        // Target's Delivery API is called mostly one request at a time (the notification sender's batches):
        // on a keep-alive connection of its own, a call costs a fraction of the general client's.
        let delivery = KeepAliveConnection(fallback: transport)
        // The box's clock may not be set (1970, 2000 at boot): both upstreams are called through one
        // transport that learns the real time from their Date headers, and stamp and compare with it.
        let time = UpstreamTime(SystemClock())
        let upstream = TimeLearningTransport(transport, time: time)
        // Each upstream behind its own breaker: once it stops answering, calls are refused at once
        // (default content, network_error) and it is probed in the background.
        func breaker(_ service: String, _ inner: any HTTPTransport) -> CircuitBreakingTransport {
            CircuitBreakingTransport(
                inner,
                breaker: CircuitBreaker(service: service, clock: time) { transition in
                    Self.report(transition, of: service, runtime: runtime, logger: logger)
                }
            )
        }
        let target = TargetService(
            configuration: configuration.target.serviceConfiguration,
            transport: breaker("target", TimeLearningTransport(delivery, time: time)),
            stateDirectory: configuration.agent.stateDirectory,
            // The artifact's CDN is another host than the Delivery API: its outages must not mark Target down.
            artifactTransport: upstream,
            clock: time,
            logger: logger,
            publish: runtime.events
        )
        let pass = Entitlement(
            configuration: configuration.pass.serviceConfiguration,
            transport: breaker("pass", upstream),
            stateDirectory: configuration.agent.stateDirectory,
            clock: time,
            logger: logger,
            publish: runtime.events
        )
        let requestWork = RequestWorkService()
        let dispatcher = CommandDispatcher(
            runtime: runtime,
            target: target,
            pass: pass,
            statistics: CommandStatistics(),
            work: requestWork,
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
        let server: IPCServer
        do throws(AgentError) {
            server = try IPCServer(
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
                subscriptions: runtime.subscriptions,
                tickInterval: tick,
                onTick: onTick
            )
        } catch {
            delivery.close()
            await transport.shutdown()
            throw error
        }
        runtime.server = server
        server.setLimits(configuration.admissionLimits)
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        return Agent(
            runtime: runtime,
            server: server,
            target: target,
            pass: pass,
            transport: transport,
            delivery: delivery,
            notifier: notifier,
            hangups: hangups,
            requestWork: requestWork,
            logger: logger
        )
    }

    /// An upstream that stopped or started answering: a journal line and an event.
    private static func report(
        _ transition: UpstreamCircuit.Transition,
        of service: String,
        runtime: AgentRuntime,
        logger: Logger
    ) {
        switch transition {
        case .wentDown(let failures):
            logger.error(
                "upstream not answering: calls are answered at once without it while it is probed in the background",
                metadata: ["service": "\(service)", "failuresInARow": "\(failures)"]
            )
            runtime.publish(.upstreamDown, ["service": .string(service), "failures": .integer(Int64(failures))])
        case .cameUp(let downFor):
            logger.notice(
                "upstream answering again",
                metadata: ["service": "\(service)", "downForMs": "\(downFor.wholeMilliseconds)"]
            )
            runtime.publish(
                .upstreamUp,
                ["service": .string(service), "downForMs": .integer(downFor.wholeMilliseconds)]
            )
        }
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
        let requestors = pass.snapshot().requestors
        let authenticated = requestors.filter(\.isAuthenticated).count
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
            runtime.publish(.agentReloaded, ["applied": false, "error": .string(error.description)])
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
        // A reload fetches the rules artifact at once (how a technician asks for the newest rules).
        target.requestArtifactFetch()
        // And looks the box's location up again (when the rules held target by geo).
        target.requestGeoFetch()
        pass.update(configuration: next.pass.serviceConfiguration)
        server.setLimits(next.admissionLimits)
        logger.info("configuration reloaded", metadata: ["file": "\(path)"])
        runtime.publish(.agentReloaded, ["applied": true])
        return true
    }
}
