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

/// Which endpoint a request arrived on; it decides which commands are permitted.
public enum EndpointRole: String, Sendable {
    case app
    case admin
}

/// Handles request bodies for the IPC server. Knows the protocol, not ZeroMQ.
public protocol RequestHandler: Sendable {
    /// Called on the I/O thread for every request body. Returns the reply body to send at once, or nil
    /// after taking `responder` to reply later from any thread (work that waits on the network); work
    /// is only deferred after `responder.admit()` said yes. Must not block: every other client waits
    /// while it runs.
    func handle(_ body: [UInt8], role: EndpointRole, responder: Responder) -> [UInt8]?

    /// Called on the I/O thread after a batch of requests was handled and before their replies are
    /// sent: work that each request queued is committed here once per batch (the notification
    /// journal's group commit).
    func endOfBatch()
}

extension RequestHandler {
    public func endOfBatch() {}
}

/// Where deferred replies go and who admits the work behind them: `IPCServer`, or an in-process stand-in
/// that tests drive a `RequestHandler` through.
public protocol ReplySink: Sendable {
    /// A place for work from `peer` waiting on the network; false when the limits are reached.
    func admit(peer: [UInt8]) -> Bool
    /// Queues the reply to admitted work (`frames`: the request's envelope and the reply body), from any
    /// thread, and releases its place.
    func deliver(role: EndpointRole, frames: [[UInt8]])
}

/// Sends one deferred reply, from any thread, to the peer that sent the request.
public struct Responder: Sendable {
    private let sink: any ReplySink
    private let role: EndpointRole
    /// The request as received: its envelope, then the body, which the reply replaces. Shared, not
    /// copied, until a deferred reply is made.
    private let frames: [[UInt8]]

    /// `frames` is the request as received: the routing id, the envelope, the body.
    public init(sink: any ReplySink, role: EndpointRole, frames: [[UInt8]]) {
        self.sink = sink
        self.role = role
        self.frames = frames
    }

    /// Reserves a place for deferred work: false when the agent as a whole, or this peer, already has
    /// as much work waiting on the network as the limits allow (the caller then answers `overloaded`).
    /// Cheap answers need no place: under overload a cache hit is still served.
    public func admit() -> Bool {
        sink.admit(peer: frames[0])
    }

    /// Queues the reply to admitted work for the I/O thread and wakes it. Call exactly once.
    public func respond(_ body: [UInt8]) {
        var reply = frames
        reply[reply.count - 1] = body
        sink.deliver(role: role, frames: reply)
    }
}

/// Counters of the IPC layer, read by `status`/`stats`.
public struct IPCCounters: Sendable, Equatable {
    public var requests = 0
    public var replies = 0
    /// Replies dropped because the peer had gone (EHOSTUNREACH).
    public var repliesToVanishedPeers = 0
    /// Replies dropped because the peer did not read (its queue was at the high-water mark).
    public var repliesDroppedAtHighWaterMark = 0
    public var malformedFrames = 0
    public var eventsPublished = 0
    public var inFlight = 0
    /// Deferred work refused because the limits were reached.
    public var refusedOverloaded = 0
}

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

    fileprivate enum Outgoing: Sendable {
        case reply(role: EndpointRole, frames: [[UInt8]], deferred: Bool)
        case event(topic: String, body: [UInt8])
    }

    private struct Shared: Sendable {
        var outgoing: [Outgoing] = []
        var admission = IPCAdmission()
        var counters = IPCCounters()
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    public let endpoints: Endpoints
    private let handler: any RequestHandler
    let logger: Logger
    let maxBodyBytes: Int
    private let wakeUp: WakeUpSignal
    private let shared = Mutex(Shared())
    /// Counted on every message, outside the mutex.
    private let requestCount = Atomic<Int>(0)
    private let replyCount = Atomic<Int>(0)
    /// Called on the I/O thread once per loop turn (and at least every `tickInterval`), for work that
    /// must prove the loop is alive, such as the systemd watchdog.
    private let onTick: (@Sendable () -> Void)?
    private let tickInterval: Duration

    public init(
        endpoints: Endpoints,
        handler: any RequestHandler,
        maxBodyBytes: Int,
        logger: Logger,
        tickInterval: Duration = .seconds(1),
        onTick: (@Sendable () -> Void)? = nil
    ) throws(AgentError) {
        self.endpoints = endpoints
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

    public func deliver(role: EndpointRole, frames: [[UInt8]]) {
        enqueue(.reply(role: role, frames: frames, deferred: true))
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
    public func stop(grace: Duration = .milliseconds(500)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = shared.withLock { state -> Bool in
                switch state.admission.stop(now: .now, grace: grace) {
                case .returnNow:
                    return true
                case .waitForTheLoop:
                    state.stopWaiters.append(continuation)
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

    fileprivate func enqueue(_ item: Outgoing) {
        shared.withLock { $0.outgoing.append(item) }
        wakeUp.signal()
    }

    // MARK: - The I/O thread

    private func runThread(started: CheckedContinuation<Result<Void, AgentError>, Never>) {
        let sockets: Sockets
        do {
            sockets = try bindSockets()
        } catch {
            shared.withLock { $0.admission.finished() }
            started.resume(returning: .failure(error))
            return
        }
        shared.withLock { $0.admission.started() }
        started.resume(returning: .success(()))
        logger.info(
            "listening",
            metadata: ["app": "\(endpoints.app)", "admin": "\(endpoints.admin)", "events": "\(endpoints.events)"]
        )
        runLoop(sockets)
        sockets.closeAll()
        removeSocketFiles()
        let waiters = shared.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.admission.finished()
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func runLoop(_ sockets: Sockets) {
        var items = [
            PollItem(socket: sockets.app, events: .readable),
            PollItem(socket: sockets.admin, events: .readable),
            PollItem(fileDescriptor: wakeUp.fileDescriptor, events: .readable),
        ]
        let peerCheck = sockets.zap.map { _ in AdminPeerCheck(allowedGroups: endpoints.allowedAdminGroups) }
        if let zap = sockets.zap {
            items.append(PollItem(socket: zap, events: .readable))
        }
        while true {
            do {
                _ = try poll(&items, timeout: tickInterval)
            } catch {
                logger.critical("zmq_poll failed; stopping the I/O loop", metadata: ["error": "\(error)"])
                return
            }
            onTick?()
            if items[2].returnedEvents.contains(.readable) {
                wakeUp.drain()
            }
            if let zap = sockets.zap, let peerCheck, items[3].returnedEvents.contains(.readable) {
                answerHandshakes(on: zap, peerCheck)
            }
            flushOutgoing(sockets)
            // The clock is read only while draining: this runs on every turn of the loop.
            let draining = shared.withLock { $0.admission.isDraining }
            if draining, shared.withLock({ $0.admission.drainIsOver(now: .now) }) {
                flushOutgoing(sockets)
                return
            }
            // A bounded batch per socket per turn: the admin endpoint stays responsive under an app flood.
            for (index, role) in [(0, EndpointRole.app), (1, EndpointRole.admin)]
            where items[index].returnedEvents.contains(.readable) {
                receiveBatch(
                    from: sockets.socket(for: role),
                    role: role,
                    checkPeers: role == .admin && sockets.zap != nil,
                    draining: draining
                )
            }
        }
    }

    /// Handles up to 256 waiting requests, then lets the handler commit what they queued, then sends
    /// their replies: a reply never leaves before the work it reports is durable.
    private func receiveBatch(from socket: ZeroMQSocket, role: EndpointRole, checkPeers: Bool, draining: Bool) {
        var replies: [[[UInt8]]] = []
        for _ in 0..<256 {
            let frames: [[UInt8]]
            do {
                if checkPeers {
                    let received = try socket.receive(dontWait: true, property: "User-Id")
                    frames = received.frames
                    if received.property != AdminPeerCheck.allowedUserId {
                        refuseAdminPeer(frames, on: socket)
                        continue
                    }
                } else {
                    frames = try socket.receive(dontWait: true)
                }
            } catch {
                if error != .wouldBlock {
                    logger.error("receive failed", metadata: ["endpoint": "\(role)", "error": "\(error)"])
                }
                break
            }
            if let reply = handleMessage(frames, role: role, draining: draining) {
                replies.append(reply)
            }
        }
        guard !replies.isEmpty else { return }
        handler.endOfBatch()
        for reply in replies {
            send(reply, on: socket, role: role)
        }
    }

    /// Answers every waiting ZAP handshake (admin connections only: no other socket has a domain).
    private func answerHandshakes(on zap: ZeroMQSocket, _ peerCheck: AdminPeerCheck) {
        while let request = try? zap.receive(dontWait: true) {
            let reply = peerCheck.reply(to: request)
            if reply.count > 4, reply[4] != Array(AdminPeerCheck.allowedUserId.utf8) {
                let address = request.count > 3 ? String(decoding: request[3], as: UTF8.self) : "?"
                logger.notice(
                    "admin connection from a user outside \(AgentConfiguration.path(of: \.agent.allowedAdminGroups)); its commands get not_permitted",
                    metadata: ["peer": "\(address)"]
                )
            }
            do {
                try zap.send(reply)
            } catch {
                logger.error("cannot answer a ZAP handshake", metadata: ["error": "\(error)"])
            }
        }
    }

    /// `not_permitted` to an admin request from a connection the peer check refused.
    private func refuseAdminPeer(_ frames: [[UInt8]], on socket: ZeroMQSocket) {
        requestCount.add(1, ordering: .relaxed)
        guard frames.count >= 3, let delimiter = frames[1...].firstIndex(where: { $0.isEmpty }),
            delimiter + 1 < frames.count
        else { return }
        let id: String?
        switch Request.decode(frames[delimiter + 1]) {
        case .success(let request): id = request.id
        case .failure(let failure): id = failure.id
        }
        var reply = Array(frames[...delimiter])
        reply.append(
            Reply.failure(
                id: id,
                error: .notPermitted(
                    "this user may not send admin commands: it is in none of \(AgentConfiguration.path(of: \.agent.allowedAdminGroups)) (\(endpoints.allowedAdminGroups.joined(separator: ", ")))"
                )
            )
        )
        send(reply, on: socket, role: .admin)
    }

    /// The reply to send for one message, or nil when there is none (yet: deferred work replies later).
    private func handleMessage(_ frames: [[UInt8]], role: EndpointRole, draining: Bool) -> [[UInt8]]? {
        guard frames.count >= 2 else { return nil }  // a ROUTER always prepends the routing id
        requestCount.add(1, ordering: .relaxed)
        // [routing id][delimiter][body]: everything up to the first empty frame is echoed back.
        guard let delimiter = frames[1...].firstIndex(where: { $0.isEmpty }) else {
            shared.withLock { $0.counters.malformedFrames += 1 }
            let error = ProtocolErrorReply.malformed("missing the empty delimiter frame before the body")
            return [frames[0], error]
        }
        guard frames.count - delimiter - 1 == 1 else {
            shared.withLock { $0.counters.malformedFrames += 1 }
            let error = ProtocolErrorReply.malformed(
                "expected exactly one body frame after the delimiter; got \(frames.count - delimiter - 1)"
            )
            return Array(frames[...delimiter]) + [error]
        }
        // From here the message is envelope + one body; a reply is the same frames with the body replaced.
        var frames = frames
        let body = frames[delimiter + 1]
        if draining {
            frames[delimiter + 1] = ProtocolErrorReply.shuttingDown(body)
            return frames
        }
        let responder = Responder(sink: self, role: role, frames: frames)
        guard let reply = handler.handle(body, role: role, responder: responder) else { return nil }
        frames[delimiter + 1] = reply
        return frames
    }

    private func flushOutgoing(_ sockets: Sockets) {
        let batch = shared.withLock { state -> [Outgoing] in
            defer { state.outgoing = [] }
            return state.outgoing
        }
        for item in batch {
            switch item {
            case .reply(let role, let frames, let deferred):
                if deferred { shared.withLock { $0.admission.release(peer: frames[0]) } }
                send(frames, on: sockets.socket(for: role), role: role)
            case .event(let topic, let body):
                do {
                    try sockets.events.send([Array(topic.utf8), body], dontWait: true)
                    shared.withLock { $0.counters.eventsPublished += 1 }
                } catch {
                    // PUB drops at the high-water mark by design; a slow subscriber must not stall the agent.
                }
            }
        }
    }

    private func send(_ frames: [[UInt8]], on socket: ZeroMQSocket, role: EndpointRole) {
        do {
            try socket.send(frames, dontWait: true)
            replyCount.add(1, ordering: .relaxed)
        } catch {
            shared.withLock { state in
                if error == .hostUnreachable {
                    state.counters.repliesToVanishedPeers += 1
                } else {
                    state.counters.repliesDroppedAtHighWaterMark += 1
                }
            }
        }
    }
}

/// Replies the IPC layer makes itself, before a body reaches the handler.
private enum ProtocolErrorReply {
    static func malformed(_ message: String) -> [UInt8] {
        Reply.failure(id: nil, error: .malformed(message))
    }

    /// `shutting_down`, correlated by the request's id when it has a readable one.
    static func shuttingDown(_ body: [UInt8]) -> [UInt8] {
        let id: String?
        switch Request.decode(body) {
        case .success(let request): id = request.id
        case .failure(let failure): id = failure.id
        }
        return Reply.failure(id: id, error: .shuttingDown())
    }
}
