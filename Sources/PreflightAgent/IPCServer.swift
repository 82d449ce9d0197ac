import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization
import ZeroMQ

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Owns every ZeroMQ socket of the agent on one thread (libzmq sockets are not thread-safe).
///
/// The thread polls the app and admin ROUTER sockets and a wake-up eventfd in one `zmq_poll`. Cheap
/// requests are answered right there; replies from async work and events to publish arrive through a
/// mutex-protected queue plus a write to the eventfd, so nothing waiting on the network delays an
/// unrelated reply.
public final class IPCServer: ReplySink {
    public struct Endpoints: Sendable, Equatable {
        public var app: String
        public var admin: String
        public var events: String
        /// Group given to the app and events socket files (PROTOCOL.md: `preflight`); nil leaves the
        /// agent's own group.
        public var appGroup: String?
        /// Group given to the admin socket file (PROTOCOL.md: `preflight-admin`).
        public var adminGroup: String?

        /// Groups whose members may send admin commands (`agent.allowedAdminGroups`); empty leaves the
        /// socket file's mode as the only check.
        public var allowedAdminGroups: [String]

        public init(
            app: String,
            admin: String,
            events: String,
            appGroup: String? = nil,
            adminGroup: String? = nil,
            allowedAdminGroups: [String] = []
        ) {
            self.app = app
            self.admin = admin
            self.events = events
            self.appGroup = appGroup
            self.adminGroup = adminGroup
            self.allowedAdminGroups = allowedAdminGroups
        }
    }

    enum Outgoing: Sendable {
        case reply(role: EndpointRole, message: RouterMessage, deferred: Bool)
        case event(topic: String, body: [UInt8])
    }

    struct Shared: Sendable {
        var outgoing: [Outgoing] = []
        var admission = IPCAdmission()
        var counters = IPCCounters()
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    public let endpoints: Endpoints
    let handler: any RequestHandler
    let logger: Logger
    let maxBodyBytes: Int
    let wakeUp: WakeUpSignal
    let shared = Mutex(Shared())
    /// Whether `Shared.outgoing` may hold anything: set under the lock when an item is queued, cleared under it
    /// when the loop takes them. The loop looks at it on every turn and takes the lock only when it is set
    /// (taking it each turn cost a request answered alone about 60 instructions).
    let outgoingQueued = Atomic<Bool>(false)
    /// Set, under the lock, once a stop has put the admission in its draining phase (never cleared): the loop
    /// looks at the phase only after this says there may be one, not under the lock on every turn.
    let stopAsked = Atomic<Bool>(false)
    /// Counted on every message, outside the mutex.
    let requestCount = Atomic<Int>(0)
    let replyCount = Atomic<Int>(0)
    /// Called on the I/O thread once per loop turn (and at least every `tickInterval`), for work that
    /// must prove the loop is alive, such as the systemd watchdog.
    let onTick: (@Sendable () -> Void)?
    let tickInterval: Duration
    /// The topics some subscriber receives, kept up to date by the I/O thread.
    public let subscriptions: EventSubscriptions

    public init(
        endpoints: Endpoints,
        handler: any RequestHandler,
        maxBodyBytes: Int,
        logger: Logger,
        subscriptions: EventSubscriptions = EventSubscriptions(),
        tickInterval: Duration = .seconds(1),
        onTick: (@Sendable () -> Void)? = nil
    ) throws(AgentError) {
        self.endpoints = endpoints
        self.subscriptions = subscriptions
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
        self.wakeUp = try WakeUpSignal()
        self.tickInterval = tickInterval
        self.onTick = onTick
    }

    public var counters: IPCCounters {
        var counters = shared.withLock { state in
            var counters = state.counters
            counters.inFlight = state.admission.inFlight
            counters.refusedOverloaded = state.admission.refusedOverloaded
            return counters
        }
        counters.requests = requestCount.load(ordering: .relaxed)
        counters.replies = replyCount.load(ordering: .relaxed)
        return counters
    }

    /// Applies new admission limits (configuration reload).
    public func setLimits(_ limits: AdmissionLimits) {
        shared.withLock { $0.admission.limits = limits }
    }

    public func admit(peer: [UInt8]) -> Bool {
        shared.withLock { $0.admission.admit(peer: peer) }
    }

    public func deliver(role: EndpointRole, reply: RouterMessage) {
        enqueue(.reply(role: role, message: reply, deferred: true))
    }

    /// Starts the I/O thread and returns once every endpoint is bound (or throws why not).
    public func start() async throws(AgentError) {
        let result: Result<Void, AgentError> = await withCheckedContinuation { continuation in
            do throws(NativeThread.StartError) {
                try NativeThread.startDetached(name: "preflight-io") { [self] in
                    self.runThread(started: continuation)
                }
            } catch {
                continuation.resume(returning: .failure(.system("pthread_create", errno: error.code)))
            }
        }
        try result.get()
    }

    /// Publishes an event on the events endpoint. Callable from any thread.
    public func publish(topic: String, body: [UInt8]) {
        enqueue(.event(topic: topic, body: body))
    }

    /// Stops taking requests, lets in-flight work reply until `grace` has passed, then closes the
    /// sockets and removes the socket files. Returns when the I/O thread has finished.
    ///
    /// `announcement` (the `agent.stopping` event) is queued in the same step that begins the drain: a
    /// request its subscriber sends once it has the event is refused with `shutting_down`, as PROTOCOL.md
    /// says, and the event is queued before the loop can take its last turn. Published before the stop, a
    /// request sent in answer could still be served; published after, the loop could already have ended.
    public func stop(
        grace: Duration = .milliseconds(500),
        announcing announcement: (topic: String, body: [UInt8])? = nil
    ) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = shared.withLock { state -> Bool in
                let wasDraining = state.admission.isDraining
                switch state.admission.stop(now: .now, grace: grace) {
                case .returnNow:
                    return true
                case .waitForTheLoop:
                    state.stopWaiters.append(continuation)
                    if !wasDraining, let announcement {
                        queue(.event(topic: announcement.topic, body: announcement.body), in: &state)
                    }
                    stopAsked.store(true, ordering: .releasing)
                    return false
                }
            }
            if resumeNow {
                continuation.resume()
            } else {
                wakeUp.signal()
            }
        }
    }

    func enqueue(_ item: Outgoing) {
        shared.withLock { queue(item, in: &$0) }
        wakeUp.signal()
    }

    /// Appends to the outgoing queue, under the lock, and raises the flag the loop looks at: every item queued
    /// goes through here, so none waits unseen behind a flag left down.
    private func queue(_ item: Outgoing, in state: inout Shared) {
        state.outgoing.append(item)
        outgoingQueued.store(true, ordering: .releasing)
    }
}
