import PreflightProtocol
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// One event the agent published on its events endpoint: `[topic][JSON body]`.
public struct AgentEvent: Sendable, Hashable {
    /// The topic frame, e.g. `offers.cleared`.
    public var topic: String
    /// The body exactly as published (JSON text, UTF-8), for relaying it unchanged.
    public var body: [UInt8]

    /// Wraps one received event.
    public init(topic: String, body: [UInt8]) {
        self.topic = topic
        self.body = body
    }

    /// The body parsed, or nil when it is not valid JSON.
    public var json: JSONValue? {
        try? JSONReader.read(body)
    }
}

/// A blocking subscription to the agent's events (a SUB socket), for tools such as `preflightctl watch`.
///
/// PUB does not replay: events published before the subscription reached the agent (a few milliseconds after
/// `init`) are not seen. Not thread-safe: one thread owns it, as with every ZeroMQ socket.
public final class EventSubscriber {
    /// The events endpoint, e.g. `ipc:///run/preflight/events.sock`.
    public let endpoint: String
    private let context: ZeroMQContext
    private let socket: ZeroMQSocket

    /// Connects to `endpoint` and subscribes to the topics starting with any of `topicPrefixes`; an empty list
    /// subscribes to every topic.
    ///
    /// - Throws: `.unreachable` when an `ipc://` endpoint has no socket file (the agent is not running) or the
    ///   endpoint is malformed; `.permissionDenied` when this user may not connect to the socket file.
    public init(endpoint: String, topicPrefixes: [String] = []) throws(AgentConnectionError) {
        self.endpoint = endpoint
        try checkEndpointAccess(endpoint)
        do {
            context = try ZeroMQContext(ioThreads: 1)
            socket = try context.makeSocket(.sub)
            try socket.setOption(.linger(milliseconds: 0))
            for prefix in topicPrefixes.isEmpty ? [""] : topicPrefixes {
                try socket.setOption(.subscribe(Array(prefix.utf8)))
            }
            try socket.connect(endpoint)
        } catch {
            throw .unreachable(endpoint: endpoint, reason: "\(error)")
        }
    }

    deinit {
        socket.close()
    }

    /// Waits up to `timeout` for the next event (nil: for ever). Returns nil when the time passed first.
    ///
    /// A message without a body frame is returned with an empty body; extra frames are ignored.
    public func next(timeout: Duration?) throws(AgentConnectionError) -> AgentEvent? {
        var items = [PollItem(socket: socket, events: .readable)]
        let frames: [[UInt8]]
        do {
            guard try poll(&items, timeout: timeout) > 0 else { return nil }
            frames = try socket.receive()
        } catch {
            throw .unreachable(endpoint: endpoint, reason: "\(error)")
        }
        let topic = String(decoding: frames.first ?? [], as: UTF8.self)
        return AgentEvent(topic: topic, body: frames.count > 1 ? frames[1] : [])
    }
}

/// For an `ipc://` endpoint with a path: the socket file must exist and be readable and writable by this user.
/// ZeroMQ itself would wait silently for a file that never appears.
func checkEndpointAccess(_ endpoint: String) throws(AgentConnectionError) {
    guard endpoint.hasPrefix("ipc://") else { return }
    let path = String(endpoint.dropFirst("ipc://".count))
    // An abstract socket (`ipc://@name`) has no file to check.
    guard !path.hasPrefix("@") else { return }
    guard access(path, F_OK) == 0 else {
        throw .unreachable(endpoint: endpoint, reason: "no socket file at \(path); is preflightd running?")
    }
    guard access(path, R_OK | W_OK) == 0 else {
        throw .permissionDenied(endpoint: endpoint)
    }
}
