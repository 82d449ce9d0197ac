import Foundation
import Logging
import PassAuthorization
import PreflightProtocol
import Synchronization
import TargetOffers

/// What the agent knows about itself, for `ping` and `status`. Shared by the I/O thread and async code.
public final class AgentRuntime: Sendable {
    public let startedAt = ContinuousClock.now
    public let startedAtWallClock = Date()
    public let configurationPath: String?
    private let state: Mutex<State>

    private struct State: Sendable {
        var configuration: AgentConfiguration
        var server: IPCServer?
    }

    public init(configuration: AgentConfiguration, configurationPath: String?) {
        self.configurationPath = configurationPath
        self.state = Mutex(State(configuration: configuration))
    }

    public var configuration: AgentConfiguration {
        get { state.withLock { $0.configuration } }
        set { state.withLock { $0.configuration = newValue } }
    }

    var server: IPCServer? {
        get { state.withLock { $0.server } }
        set { state.withLock { $0.server = newValue } }
    }

    /// Publishes an event with the fields every event carries. Callable from any thread.
    public func publish(_ topic: String, _ fields: JSONObject) {
        var body = fields
        body["topic"] = .string(topic)
        body["uptimeMs"] = .integer(uptimeMs)
        server?.publish(topic: topic, body: JSONWriter.encode(.object(body)))
    }

    public var uptimeMs: Int64 {
        let elapsed = ContinuousClock.now - startedAt
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }
}

/// Decodes every request, enforces which endpoint may send which command, and routes it.
///
/// Runs on the I/O thread: everything here is cheap, and anything that would wait on the network is
/// handed to a task that replies through the `Responder`. Every reply is timed into `statistics`.
public struct CommandDispatcher: RequestHandler {
    let runtime: AgentRuntime
    let target: TargetService
    let pass: Preauthorizer
    let statistics: CommandStatistics
    let logger: Logger

    public init(
        runtime: AgentRuntime,
        target: TargetService,
        pass: Preauthorizer,
        statistics: CommandStatistics,
        logger: Logger
    ) {
        self.runtime = runtime
        self.target = target
        self.pass = pass
        self.statistics = statistics
        self.logger = logger
    }

    public func handle(_ body: [UInt8], role: EndpointRole, responder: Responder) -> [UInt8]? {
        let started = ContinuousClock.now
        let configuration = runtime.configuration
        let request: Request
        switch Request.decode(body, maxBodyBytes: configuration.agent.maxBodyBytes) {
        case .success(let decoded):
            request = decoded
        case .failure(let failure):
            statistics.record("(unreadable)", since: started, errorCode: failure.error.code.rawValue)
            return Reply.failure(id: failure.id, error: failure.error)
        }
        let outcome: Outcome
        do {
            outcome = try route(request, role: role, configuration: configuration)
        } catch {
            outcome = .failure(error)
        }
        // Unknown command names are counted together: an app must not grow this table without bound.
        let name =
            CommandName.app.contains(request.command) || CommandName.admin.contains(request.command)
            ? request.command : "(unknown)"
        switch outcome {
        case .success(let result):
            statistics.record(name, since: started, errorCode: nil)
            return Reply.success(id: request.id, result: result)
        case .encoded(let result):
            statistics.record(name, since: started, errorCode: nil)
            return Reply.success(id: request.id, encodedResult: result)
        case .failure(let error):
            statistics.record(name, since: started, errorCode: error.code.rawValue)
            return Reply.failure(id: request.id, error: error)
        case .later(let work):
            guard responder.admit() else {
                let error = ProtocolError.overloaded(retryAfterMs: 250)
                statistics.record(name, since: started, errorCode: error.code.rawValue)
                return Reply.failure(id: request.id, error: error)
            }
            let statistics = self.statistics
            Task {
                let reply: [UInt8]
                switch await work() {
                case .success(let result):
                    statistics.record(name, since: started, errorCode: nil)
                    reply = Reply.success(id: request.id, result: result)
                case .encoded(let result):
                    statistics.record(name, since: started, errorCode: nil)
                    reply = Reply.success(id: request.id, encodedResult: result)
                case .failure(let error):
                    statistics.record(name, since: started, errorCode: error.code.rawValue)
                    reply = Reply.failure(id: request.id, error: error)
                }
                responder.respond(reply)
            }
            return nil
        }
    }

    /// What a command produced: a result now, or work whose result comes later.
    enum Outcome: Sendable {
        case success(JSONValue)
        /// A result already encoded as JSON (the cached-load fast path).
        case encoded([UInt8])
        case failure(ProtocolError)
        case later(@Sendable () async -> Immediate)
    }

    /// The result of deferred work.
    enum Immediate: Sendable {
        case success(JSONValue)
        case encoded([UInt8])
        case failure(ProtocolError)
    }

    private func route(
        _ request: Request,
        role: EndpointRole,
        configuration: AgentConfiguration
    ) throws(ProtocolError)
        -> Outcome
    {
        if CommandName.admin.contains(request.command) {
            guard role == .admin else {
                throw .notPermitted("\(request.command) is an admin command; use the admin endpoint")
            }
            return try handleAdmin(request, arguments: ArgumentReader(request.args ?? JSONObject()))
        }
        switch try AppCommand.decode(request, limits: configuration.commandLimits) {
        case .ping?:
            return .success(["version": .string(preflightVersion), "uptimeMs": .integer(runtime.uptimeMs)])
        case .prefetch(let command)?:
            let target = self.target
            return .later { .success(await target.prefetch(command)) }
        case .loadRequests(let command)?:
            switch target.loadFromCache(command) {
            case .complete(let result):
                return .encoded(result)
            case .needsNetwork(let pending):
                let target = self.target
                return .later { .encoded(await target.completeLoad(pending)) }
            }
        case .clearPrefetchCache?:
            return .success(["cleared": .integer(Int64(target.clearCache()))])
        case .preauthorize(let command)?:
            // A complete answer from the decision cache goes out from this thread; anything else waits
            // on Adobe Pass in a task.
            if let cached = pass.cachedResponse(for: command) {
                return .success(cached)
            }
            let pass = self.pass
            return .later { .success(await pass.preauthorize(command)) }
        case nil:
            throw .unknownCommand(request.command)
        }
    }
}
