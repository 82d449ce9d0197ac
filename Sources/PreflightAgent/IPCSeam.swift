import PreflightCore
import PreflightProtocol
import ZeroMQ

/// Which endpoint a request arrived on; it decides which commands are permitted.
public enum EndpointRole: String, Sendable {
    case app
    case admin
}

/// Handles request bodies for the IPC server. Knows the protocol, not ZeroMQ.
public protocol RequestHandler: Sendable {
    /// Called on the I/O thread for every request body, lent in place: `body` and `request` are valid only
    /// during the call. Appends the reply to send at once to `reply` and returns true; or returns false, with
    /// nothing appended, after taking a `Responder` from `request.admit()` to reply later from any thread
    /// (work that waits on the network). Must not block: every other client waits while it runs.
    func handle(
        _ body: UnsafeBufferPointer<UInt8>,
        role: EndpointRole,
        request: IncomingRequest,
        reply: inout JSONWriter
    ) -> Bool

    /// Called on the I/O thread after a batch of requests was handled and before their replies are
    /// sent: work that each request queued is committed here once per batch (the notification
    /// journal's group commit), and what each counted is recorded. `receivedAt`: the batch's requests'
    /// (`IncomingRequest.receivedAt`).
    func endOfBatch(receivedAt: MonotonicInstant)
}

extension RequestHandler {
    public func endOfBatch(receivedAt: MonotonicInstant) {}
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

/// The request a handler is answering, as far as a deferred reply needs it: where it came from. Lent for the
/// length of `RequestHandler.handle` only, since it may point into the message as received; `admit()` makes
/// the `Responder` that outlives it. A request answered at once (a cache hit) copies nothing.
public struct IncomingRequest {
    private enum Envelope {
        /// A plain request's routing id, in the received message.
        case routingID(UnsafeRawBufferPointer)
        /// The request as received, of any shape; the reply replaces its body.
        case message(RouterMessage)
    }

    private let sink: any ReplySink
    private let role: EndpointRole
    private let envelope: Envelope
    /// When its batch was taken off the socket (one clock reading for the whole batch): where its latency is
    /// counted from, and the time a cached load is answered at.
    public let receivedAt: MonotonicInstant

    /// A request of any shape, as received: the routing id, the envelope, the body.
    public init(sink: any ReplySink, role: EndpointRole, message: RouterMessage, receivedAt: MonotonicInstant = .now) {
        self.sink = sink
        self.role = role
        self.envelope = .message(message)
        self.receivedAt = receivedAt
    }

    /// A plain `[routing id][empty][body]` request, its routing id lent in place.
    init(sink: any ReplySink, role: EndpointRole, routingID: UnsafeRawBufferPointer, receivedAt: MonotonicInstant) {
        self.sink = sink
        self.role = role
        self.envelope = .routingID(routingID)
        self.receivedAt = receivedAt
    }

    /// Reserves a place for deferred work and returns the responder that replies when it is done; nil when
    /// the agent as a whole, or this peer, already has as much work waiting on the network as the limits
    /// allow (the caller then answers `overloaded`). Cheap answers need no place: under overload a cache hit
    /// is still served.
    public func admit() -> Responder? {
        let request: RouterMessage
        switch envelope {
        case .routingID(let routingID): request = .plain(routingID: [UInt8](routingID), body: [])
        case .message(let message): request = message
        }
        guard sink.admit(peer: request.routingID) else { return nil }
        return Responder(sink: sink, role: role, request: request)
    }
}

// It may point into a message the I/O thread is about to close.
@available(*, unavailable)
extension IncomingRequest: Sendable {}

/// Sends one deferred reply, from any thread, to the peer that sent the request.
public struct Responder: Sendable {
    private let sink: any ReplySink
    private let role: EndpointRole
    /// The request's envelope; the reply replaces its body.
    private let request: RouterMessage

    fileprivate init(sink: any ReplySink, role: EndpointRole, request: RouterMessage) {
        self.sink = sink
        self.role = role
        self.request = request
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
