import PreflightProtocol
import ZeroMQ

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
    /// Queues the reply to admitted work (the request's envelope and the reply body), from any thread, and
    /// releases its place.
    func deliver(role: EndpointRole, reply: RouterMessage)
}

/// Sends one deferred reply, from any thread, to the peer that sent the request.
public struct Responder: Sendable {
    private let sink: any ReplySink
    private let role: EndpointRole
    /// The request as received; the reply replaces its body. Shared, not copied, until a deferred reply is
    /// made.
    private let request: RouterMessage

    /// `request` is the message as received: the routing id, the envelope, the body.
    public init(sink: any ReplySink, role: EndpointRole, request: RouterMessage) {
        self.sink = sink
        self.role = role
        self.request = request
    }

    /// Reserves a place for deferred work: false when the agent as a whole, or this peer, already has
    /// as much work waiting on the network as the limits allow (the caller then answers `overloaded`).
    /// Cheap answers need no place: under overload a cache hit is still served.
    public func admit() -> Bool {
        sink.admit(peer: request.routingID)
    }

    /// Queues the reply to admitted work for the I/O thread and wakes it. Call exactly once.
    public func respond(_ body: [UInt8]) {
        sink.deliver(role: role, reply: request.replacingBody(with: body))
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
