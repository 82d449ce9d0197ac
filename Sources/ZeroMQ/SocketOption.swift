import CZeroMQ

/// The libzmq socket types this wrapper supports.
public enum SocketType: Sendable {
    /// `ZMQ_REQ`: strict send, receive, send, ... client.
    case req
    /// `ZMQ_REP`: strict receive, send, receive, ... server.
    case rep
    /// `ZMQ_DEALER`: asynchronous, load-balancing client.
    case dealer
    /// `ZMQ_ROUTER`: asynchronous server; received messages start with the sender's routing id frame.
    case router
    /// `ZMQ_PUB`: publisher; drops messages for subscribers that are slow or absent.
    case pub
    /// `ZMQ_XPUB`: a publisher that also receives its subscribers' subscriptions, one message each:
    /// `1` or `0` (subscribe, unsubscribe) then the prefix; a prefix's first subscription and its last
    /// unsubscription only (a subscriber's subscriptions end when it goes).
    case xpub
    /// `ZMQ_SUB`: subscriber; receives nothing until it subscribes.
    case sub

    var cValue: CInt {
        switch self {
        case .req: ZMQ_REQ
        case .rep: ZMQ_REP
        case .dealer: ZMQ_DEALER
        case .router: ZMQ_ROUTER
        case .pub: ZMQ_PUB
        case .xpub: ZMQ_XPUB
        case .sub: ZMQ_SUB
        }
    }
}

/// A socket option to set with `ZeroMQSocket.setOption(_:)`.
public enum SocketOption: Sendable {
    /// `ZMQ_LINGER`: how long closing the socket (and so terminating its context) waits to deliver queued
    /// messages. -1 waits forever (libzmq's default), 0 discards them at once.
    case linger(milliseconds: Int32)
    /// `ZMQ_SNDHWM`: the most whole messages queued outbound per peer; 0 means no limit. Default 1000.
    case sendHighWaterMark(Int32)
    /// `ZMQ_RCVHWM`: the most whole messages queued inbound per peer; 0 means no limit. Default 1000.
    case receiveHighWaterMark(Int32)
    /// `ZMQ_MAXMSGSIZE`: the largest inbound message in bytes; a peer that sends a larger one is disconnected
    /// and the message never delivered. -1 (the default) means no limit.
    case maxMessageSize(Int64)
    /// `ZMQ_ROUTER_MANDATORY` (ROUTER only): sending to an unknown routing id throws `.hostUnreachable` instead
    /// of silently dropping the message, and a full peer queue throws `.wouldBlock` (or blocks).
    case routerMandatory(Bool)
    /// `ZMQ_SNDTIMEO`: how long a blocking send waits before throwing `.wouldBlock`; -1 (default) forever.
    case sendTimeout(milliseconds: Int32)
    /// `ZMQ_RCVTIMEO`: how long a blocking receive waits before throwing `.wouldBlock`; -1 (default) forever.
    case receiveTimeout(milliseconds: Int32)
    /// `ZMQ_IMMEDIATE`: queue messages only to peers whose connection is complete, instead of to every
    /// configured peer.
    case immediate(Bool)
    /// `ZMQ_ZAP_DOMAIN`: the ZAP authentication domain, 1 to 255 bytes of UTF-8 (libzmq 4.3 rejects an empty
    /// one with `.invalidArgument`).
    case zapDomain(String)
    /// `ZMQ_ROUTING_ID`: the identity a ROUTER peer sees for this socket; 1 to 255 bytes. Set it before
    /// `connect`. Don't start it with a zero byte: libzmq 4.3 accepts that, but reserves such ids for the ones
    /// it generates for anonymous peers.
    case routingID([UInt8])
    /// `ZMQ_SUBSCRIBE` (SUB only): receive messages whose first frame starts with these bytes; empty means all.
    case subscribe([UInt8])
    /// `ZMQ_UNSUBSCRIBE` (SUB only): remove one earlier `subscribe` of the same bytes.
    case unsubscribe([UInt8])
}

/// What a socket or file descriptor is ready for (`ZMQ_POLLIN`, `ZMQ_POLLOUT`, `ZMQ_POLLERR`).
public struct PollEvents: OptionSet, Sendable, Hashable {
    /// The `short` bit mask libzmq uses in `zmq_pollitem_t` and `ZMQ_EVENTS`.
    public let rawValue: CShort

    /// Wraps a libzmq bit mask.
    public init(rawValue: CShort) {
        self.rawValue = rawValue
    }

    /// `ZMQ_POLLIN`: at least one whole message (or, for a file descriptor, some data) can be read without
    /// blocking.
    public static let readable = PollEvents(rawValue: CShort(ZMQ_POLLIN))
    /// `ZMQ_POLLOUT`: at least one message can be sent without blocking.
    public static let writable = PollEvents(rawValue: CShort(ZMQ_POLLOUT))
    /// `ZMQ_POLLERR`: an error condition on a plain file descriptor (never set for libzmq sockets).
    public static let error = PollEvents(rawValue: CShort(ZMQ_POLLERR))
}
