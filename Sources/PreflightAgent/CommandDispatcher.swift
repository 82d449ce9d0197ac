import Foundation
import Logging
import PreflightProtocol
import Synchronization

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
    let logger: Logger

    public init(runtime: AgentRuntime, logger: Logger) {
        self.runtime = runtime
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
            case nil, .prefetch?, .loadRequests?, .clearPrefetchCache?, .preauthorize?:
                // Decoded and validated already; the Target and Adobe Pass services plug in here.
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
                "target": ["url": .string(configuration.target.effectiveServerURL)],
                "pass": ["url": .string(configuration.pass.effectiveServerURL)],
            ],
        ]
    }
}
