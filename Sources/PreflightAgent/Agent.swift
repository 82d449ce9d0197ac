import Logging
import PreflightProtocol
import ServiceLifecycle

/// The running agent: its sockets are bound before it is handed to a `ServiceGroup`, so that start-up
/// failures (an endpoint in use) surface as an exit code before anything claims to be ready.
public final class Agent: Service {
    public let runtime: AgentRuntime
    public let server: IPCServer
    private let logger: Logger

    private init(runtime: AgentRuntime, server: IPCServer, logger: Logger) {
        self.runtime = runtime
        self.server = server
        self.logger = logger
    }

    /// Binds every endpoint and starts the I/O thread.
    public static func start(
        configuration: AgentConfiguration,
        configurationPath: String?,
        logger: Logger
    ) async throws(AgentError) -> Agent {
        let runtime = AgentRuntime(configuration: configuration, configurationPath: configurationPath)
        let dispatcher = CommandDispatcher(runtime: runtime, logger: logger)
        let server = try IPCServer(
            endpoints: IPCServer.Endpoints(
                app: configuration.agent.appEndpoint,
                admin: configuration.agent.adminEndpoint,
                events: configuration.agent.eventsEndpoint
            ),
            handler: dispatcher,
            maxBodyBytes: configuration.agent.maxBodyBytes,
            logger: logger
        )
        runtime.server = server
        try await server.start()
        return Agent(runtime: runtime, server: server, logger: logger)
    }

    /// Serves until graceful shutdown (SIGTERM, SIGINT), then stops taking requests, lets in-flight
    /// work reply, and removes the socket files.
    public func run() async throws {
        publish("agent.ready", ["version": .string(preflightVersion)])
        logger.info("ready", metadata: ["version": "\(preflightVersion)"])
        try? await gracefulShutdown()
        logger.info("stopping")
        publish("agent.stopping", ["reason": "signal"])
        await server.stop()
        logger.info("stopped")
    }

    /// Publishes an event with the common fields every event carries.
    public func publish(_ topic: String, _ fields: JSONObject) {
        var body = fields
        body["topic"] = .string(topic)
        body["uptimeMs"] = .integer(runtime.uptimeMs)
        server.publish(topic: topic, body: JSONWriter.encode(.object(body)))
    }
}
