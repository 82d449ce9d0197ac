import Foundation
import Logging
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
/// handed to a task that replies through the `Responder`.
public struct CommandDispatcher: RequestHandler {
    let runtime: AgentRuntime
    let target: TargetService
    let logger: Logger

    public init(runtime: AgentRuntime, target: TargetService, logger: Logger) {
        self.runtime = runtime
        self.target = target
        self.logger = logger
    }

    public func handle(_ body: [UInt8], role: EndpointRole, responder: Responder) -> [UInt8]? {
        let configuration = runtime.configuration
        let request: Request
        switch Request.decode(body, maxBodyBytes: configuration.agent.maxBodyBytes) {
        case .success(let decoded):
            request = decoded
        case .failure(let failure):
            return Reply.failure(id: failure.id, error: failure.error)
        }
        if CommandName.admin.contains(request.command) {
            guard role == .admin else {
                return Reply.failure(
                    id: request.id,
                    error: .notPermitted("\(request.command) is an admin command; use the admin endpoint")
                )
            }
            return handleAdmin(request)
        }
        do {
            switch try AppCommand.decode(request, limits: configuration.commandLimits) {
            case .ping?:
                return Reply.success(
                    id: request.id,
                    result: ["version": .string(preflightVersion), "uptimeMs": .integer(runtime.uptimeMs)]
                )
            case .prefetch(let command)?:
                let target = self.target
                Task {
                    let result = await target.prefetch(command)
                    responder.respond(Reply.success(id: request.id, result: result))
                }
                return nil
            case .loadRequests(let command)?:
                switch target.loadFromCache(command) {
                case .complete(let result):
                    return Reply.success(id: request.id, encodedResult: result)
                case .needsNetwork(let pending):
                    let target = self.target
                    Task {
                        let result = await target.completeLoad(pending)
                        responder.respond(Reply.success(id: request.id, encodedResult: result))
                    }
                    return nil
                }
            case .clearPrefetchCache?:
                return Reply.success(id: request.id, result: ["cleared": .integer(Int64(target.clearCache()))])
            case nil, .preauthorize?:
                // preauthorize is decoded and validated already; the Adobe Pass service plugs in here.
                return Reply.failure(id: request.id, error: .unknownCommand(request.command))
            }
        } catch {
            return Reply.failure(id: request.id, error: error)
        }
    }

    private func handleAdmin(_ request: Request) -> [UInt8] {
        switch request.command {
        case CommandName.status:
            return Reply.success(id: request.id, result: statusResult())
        default:
            return Reply.failure(id: request.id, error: .unknownCommand(request.command))
        }
    }

    private func statusResult() -> JSONValue {
        let configuration = runtime.configuration
        let counters = runtime.server?.counters ?? IPCCounters()
        return [
            "version": .string(preflightVersion),
            "pid": .integer(Int64(ProcessInfo.processInfo.processIdentifier)),
            "uptimeMs": .integer(runtime.uptimeMs),
            "startedAt": .string(ISO8601DateFormatter().string(from: runtime.startedAtWallClock)),
            "configFile": runtime.configurationPath.map { .string($0) } ?? .null,
            "endpoints": [
                "app": .string(configuration.agent.appEndpoint),
                "admin": .string(configuration.agent.adminEndpoint),
                "events": .string(configuration.agent.eventsEndpoint),
            ],
            "ipc": [
                "requests": .integer(Int64(counters.requests)),
                "replies": .integer(Int64(counters.replies)),
                "inFlight": .integer(Int64(counters.inFlight)),
                "repliesToVanishedPeers": .integer(Int64(counters.repliesToVanishedPeers)),
                "repliesDroppedAtHighWaterMark": .integer(Int64(counters.repliesDroppedAtHighWaterMark)),
                "malformedFrames": .integer(Int64(counters.malformedFrames)),
                "eventsPublished": .integer(Int64(counters.eventsPublished)),
            ],
            "upstreams": [
                "target": targetHealth(configuration),
                "pass": ["url": .string(configuration.pass.effectiveServerURL)],
            ],
            "target": targetStatus(),
        ]
    }

    private func targetHealth(_ configuration: AgentConfiguration) -> JSONValue {
        let counters = target.counters
        var health: JSONObject = [
            "url": .string(configuration.target.effectiveServerURL),
            "calls": .integer(Int64(counters.upstreamCalls)),
            "errors": .integer(Int64(counters.upstreamErrors)),
        ]
        health["lastSuccessAtMs"] = counters.lastSuccessAtMs.map { .integer($0) } ?? .null
        health["lastErrorAtMs"] = counters.lastErrorAtMs.map { .integer($0) } ?? .null
        health["lastErrorCode"] = counters.lastErrorCode.map { .string($0) } ?? .null
        health["lastError"] = counters.lastError.map { .string($0) } ?? .null
        return .object(health)
    }

    private func targetStatus() -> JSONValue {
        let cache = target.cache.summary
        let visitor = target.visitor.current
        let queue = target.notifications.summary
        let counters = target.counters
        return [
            "cache": [
                "entries": .integer(Int64(cache.entries)), "bytes": .integer(Int64(cache.bytes)),
                "budgetBytes": .integer(Int64(cache.budget)), "evictions": .integer(Int64(cache.evictions)),
                "hits": .integer(Int64(counters.hits)), "misses": .integer(Int64(counters.misses)),
            ],
            "visitor": [
                "sessionAgeMs": .integer(visitor.sessionAge.components.seconds * 1000),
                "tntId": visitor.tntId.map { .string($0) } ?? .null,
                "edgeHost": visitor.edgeHost.map { .string($0) } ?? .null,
            ],
            "notifications": [
                "queued": .integer(Int64(queue.pending + queue.inFlight)),
                "inFlight": .integer(Int64(queue.inFlight)),
                "oldestTimestampMs": queue.oldestTimestampMs.map { .integer($0) } ?? .null,
                "sent": .integer(Int64(queue.counters.sent)),
                "failedAttempts": .integer(Int64(queue.counters.failedAttempts)),
                "droppedOverflow": .integer(Int64(queue.counters.droppedOverflow)),
                "replayedFromJournal": .integer(Int64(queue.counters.replayed)),
                "lastError": queue.counters.lastError.map { .string($0) } ?? .null,
            ],
            "loads": [
                "network": .integer(Int64(counters.networkLoads)),
                "defaultsByReason": .object(
                    JSONObject(
                        counters.defaultsByReason.sorted { $0.key < $1.key }.map {
                            (key: $0.key, value: .integer(Int64($0.value)))
                        }
                    )
                ),
                "prefetchCommands": .integer(Int64(counters.prefetchCommands)),
            ],
        ]
    }
}
