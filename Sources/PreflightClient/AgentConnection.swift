import PreflightProtocol
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// Why a request to the agent did not produce a result.
public enum AgentConnectionError: Error, Sendable, CustomStringConvertible {
    /// Nothing answered at the endpoint within the timeout (or its socket file does not exist).
    case unreachable(endpoint: String, reason: String)
    /// The socket file exists but this user may not connect to it.
    case permissionDenied(endpoint: String)
    /// The agent answered with an error reply.
    case agent(ProtocolError)
    /// The agent answered with something that is not a reply of this protocol.
    case badReply(String)

    public var description: String {
        switch self {
        case .unreachable(let endpoint, let reason): "agent not reachable at \(endpoint): \(reason)"
        case .permissionDenied(let endpoint):
            "not permitted to connect to \(endpoint) (the admin socket is for group preflight-admin)"
        case .agent(let error): "agent error: \(error)"
        case .badReply(let message): "unexpected reply from the agent: \(message)"
        }
    }
}

/// A blocking request/reply connection to one agent endpoint, for tools such as `preflightctl`.
///
/// Uses a DEALER socket with the protocol's empty delimiter frame, correlates replies by `id`, and
/// gives up after `timeout`. Not thread-safe: one thread owns it, as with every ZeroMQ socket.
public final class AgentConnection {
    public let endpoint: String
    public let timeout: Duration
    private let context: ZeroMQContext
    private let socket: ZeroMQSocket
    private var nextID = 1

    public init(endpoint: String, timeout: Duration = .seconds(2)) throws(AgentConnectionError) {
        self.endpoint = endpoint
        self.timeout = timeout
        if endpoint.hasPrefix("ipc://") {
            let path = String(endpoint.dropFirst("ipc://".count))
            if !path.hasPrefix("@") {
                guard access(path, F_OK) == 0 else {
                    throw .unreachable(endpoint: endpoint, reason: "no socket file at \(path); is preflightd running?")
                }
                guard access(path, R_OK | W_OK) == 0 else {
                    throw .permissionDenied(endpoint: endpoint)
                }
            }
        }
        do {
            context = try ZeroMQContext(ioThreads: 1)
            socket = try context.makeSocket(.dealer)
            try socket.setOption(.linger(milliseconds: 0))
            try socket.connect(endpoint)
        } catch {
            throw .unreachable(endpoint: endpoint, reason: "\(error)")
        }
    }

    deinit {
        socket.close()
    }

    /// Sends one command and waits for its reply. Returns the `result` of a success reply.
    public func request(_ command: String, args: JSONObject? = nil) throws(AgentConnectionError) -> JSONValue {
        let id = String(nextID)
        nextID += 1
        let body = Request(id: id, command: command, args: args).encoded()
        do {
            try socket.send([[], body])
        } catch {
            throw .unreachable(endpoint: endpoint, reason: "\(error)")
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - .now
            guard remaining > .zero else {
                throw .unreachable(endpoint: endpoint, reason: "no reply within \(timeout)")
            }
            var items = [PollItem(socket: socket, events: .readable)]
            let frames: [[UInt8]]
            do {
                guard try poll(&items, timeout: remaining) > 0 else { continue }
                frames = try socket.receive()
            } catch {
                throw .unreachable(endpoint: endpoint, reason: "\(error)")
            }
            guard let replyBody = frames.last, frames.count == 2, frames[0].isEmpty else {
                throw .badReply("expected [delimiter][body], got \(frames.count) frames")
            }
            let reply: Reply.Decoded
            do {
                reply = try Reply.decode(replyBody)
            } catch {
                throw .badReply(error.message)
            }
            // A late reply to an earlier, abandoned request is skipped.
            guard reply.id == id || reply.id == nil else { continue }
            switch reply.outcome {
            case .success(let result): return result
            case .failure(let error): throw .agent(error)
            }
        }
    }
}
