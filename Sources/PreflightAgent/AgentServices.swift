import Logging
import PassEntitlement
import PreflightProtocol
import ServiceLifecycle
import TargetOffers
import UnixSignals
import UpstreamHTTPClient

/// The agent's long-lived jobs, each a `Service` of the one `ServiceGroup` (``Agent/services`` lists
/// them in dependency order: started in that order, stopped in reverse, each waiting for the one after
/// it to finish). Nothing in the agent runs outside them.

/// A job of the agent, under the name the service group logs it by.
protocol AgentService: Service, CustomStringConvertible {
    static var name: String { get }
}

extension AgentService {
    var description: String { Self.name }
}

/// The HTTP clients every upstream call uses (the general one, Target's Delivery connection): shut down last, after everything that calls upstream.
struct UpstreamTransportService: AgentService {
    static let name = "upstream HTTP client"

    let transport: AsyncHTTPClientTransport
    let delivery: KeepAliveConnection

    func run() async {
        try? await gracefulShutdown()
        delivery.close()
        await transport.shutdown()
    }
}

/// Sends display notifications to Target by count and age; at stop, flushes what is queued for up to
/// `flushLimit` (what Target does not confirm by then stays in the journal for the next start).
struct NotificationSenderService: AgentService {
    static let name = "notification sender"

    let target: TargetService
    let logger: Logger
    var flushLimit: Duration = .seconds(2)

    func run() async {
        let target = self.target
        await cancelWhenGracefulShutdown { await target.run() }
        guard target.notifications.summary.pending > 0 else { return }
        let confirmed = await withTaskGroup(of: Int?.self) { group in
            group.addTask { await target.flushNotifications() }
            group.addTask { [flushLimit] in
                try? await Task.sleep(for: flushLimit)
                return nil
            }
            // The limit cancels the flush, which then returns what Target confirmed so far.
            var confirmed = 0
            for await result in group {
                group.cancelAll()
                if let count = result {
                    confirmed = count
                    break
                }
            }
            return confirmed
        }
        logger.info(
            "notifications flushed",
            metadata: ["confirmed": "\(confirmed)", "journaled": "\(target.notifications.summary.pending)"]
        )
    }
}

/// Target's rules artifact for on-device decisioning: read from the state directory, fetched at start,
/// every `target.artifactPollingInterval` and on reload, with back-off after failures. A service of its
/// own rather than a turn of the notification sender: a download of megabytes must not hold up sending.
struct ArtifactPollerService: AgentService {
    static let name = "Target artifact poller"

    let target: TargetService

    func run() async {
        await cancelWhenGracefulShutdown { await target.runArtifactPolling() }
    }
}

/// Where Target's geo service locates the box, for rules artifacts that target by geo: read from the state
/// directory, looked up when such an artifact is adopted, every `target.artifactPollingInterval` and on
/// reload, with back-off after failures. A service of its own: a slow geo service must not hold up the
/// artifact's polling.
struct GeoPollerService: AgentService {
    static let name = "Target geo poller"

    let target: TargetService

    func run() async {
        await cancelWhenGracefulShutdown { await target.runGeoPolling() }
    }
}

/// Adobe Pass's background work: registration, token and each requestor's configuration, retried
/// until they succeed, and token refresh.
struct PassBackgroundService: AgentService {
    static let name = "Adobe Pass background"

    let pass: Entitlement

    func run() async {
        await cancelWhenGracefulShutdown { await pass.run() }
    }
}

/// The task group that runs every request waiting on the network (a `loadRequests` miss, a `prefetch`,
/// a `preauthorize` the decision cache cannot answer). The I/O thread hands work in with ``submit(_:)``;
/// at stop, after the IPC service has drained and closed its sockets (so no reply could still be sent),
/// whatever is left is cancelled.
public final class RequestWorkService: Service, CustomStringConvertible, Sendable {
    public var description: String { "request work" }

    private let jobs: AsyncStream<@Sendable () async -> Void>
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation

    public init() {
        (jobs, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Runs `job` in the group; false when the service has stopped (the job is not run).
    public func submit(_ job: @escaping @Sendable () async -> Void) -> Bool {
        if case .terminated = continuation.yield(job) { return false }
        return true
    }

    /// Takes no more work: what is submitted from now on is refused (the agent is stopping).
    public func stopTakingWork() {
        continuation.finish()
    }

    public func run() async {
        await withDiscardingTaskGroup { group in
            await withGracefulShutdownHandler {
                for await job in jobs {
                    group.addTask { await job() }
                }
            } onGracefulShutdown: {
                self.stopTakingWork()
            }
            group.cancelAll()
        }
    }
}

/// The IPC endpoints: binds them (a failure ends the group with the error, and preflightd exits with
/// its code), says ready, and at stop refuses new requests, lets in-flight ones reply within the grace,
/// and removes the socket files.
struct IPCService: AgentService {
    static let name = "IPC endpoints"

    let agent: Agent

    func run() async throws(AgentError) {
        try await agent.server.start()
        // Every endpoint is bound: only now may systemd consider us started.
        agent.notifier?.ready(status: agent.statusLine())
        agent.runtime.publish(.agentReady, ["version": .string(preflightVersion)])
        agent.logger.info("ready", metadata: ["version": "\(preflightVersion)"])
        try? await gracefulShutdown()
        agent.notifier?.stopping()
        agent.logger.info("stopping")
        await agent.server.stop(announcing: agent.runtime.event(.agentStopping, ["reason": "signal"]))
    }
}

/// SIGHUP: re-reads the configuration file. The signal is trapped before the endpoints are bound, so a
/// reload asked for as soon as the agent answers is not lost.
struct ReloadService: AgentService {
    static let name = "reloader (SIGHUP)"

    let agent: Agent
    let hangups: UnixSignalsSequence

    func run() async {
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                agent.reload()
            }
        }
    }
}

/// systemd's status line (`systemctl status`), refreshed every `interval`.
struct StatusReportService: AgentService {
    static let name = "systemd status"

    let agent: Agent
    var interval: Duration = .seconds(10)

    func run() async {
        guard let notifier = agent.notifier else {
            // Not started by systemd: nothing to report to, and a service must not end before the group.
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                notifier.status(agent.statusLine())
            }
        }
    }
}
