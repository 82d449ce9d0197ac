import ArgumentParser
import Logging
import PreflightAgent
import PreflightProtocol
import ServiceLifecycle

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// `preflightd`: the on-device offer and entitlement agent.
@main
struct PreflightDaemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preflightd",
        abstract: "The Preflight agent: Adobe Target offers and Adobe Pass preauthorization for apps on this box.",
        discussion: """
            Exit codes: 0 stopped cleanly, 64 usage, 69 an endpoint is already served by another process,
            71 operating-system error, 78 configuration error.
            """,
        version: preflightVersion
    )

    @Option(name: .long, help: "Configuration file.")
    var config: String = "/etc/preflight/preflight.json"

    @Flag(name: .long, help: "Validate the configuration file and exit (0 valid, 78 not).")
    var checkConfig = false

    @Option(name: .long, help: "Override agent.logLevel (trace, debug, info, notice, warning, error, critical).")
    var logLevel: String?

    func run() async throws {
        let loaded: LoadedConfiguration
        do {
            loaded = try AgentConfiguration.load(path: config)
        } catch {
            fail("\(config): \(error)", exitCode: 78)
        }
        if checkConfig {
            for warning in loaded.warnings { print("\(config): warning: \(warning)") }
            print("\(config): configuration is valid")
            return
        }
        let levelName = logLevel ?? loaded.configuration.agent.logLevel
        guard let level = Logger.Level(rawValue: levelName) else {
            fail("--log-level: unknown level \(levelName)", exitCode: 64)
        }
        LoggingSystem.bootstrap { label in AgentLogHandler(label: label, level: level) }
        let logger = Logger(label: "preflightd")
        for warning in loaded.warnings {
            logger.warning("configuration: \(warning)", metadata: ["file": "\(config)"])
        }

        let agent: Agent
        do {
            agent = try await Agent.start(
                configuration: loaded.configuration,
                configurationPath: config,
                logger: logger
            )
        } catch {
            logger.critical("cannot start: \(error)")
            fail("cannot start: \(error)", exitCode: error.exitCode)
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: agent)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }

    private func fail(_ message: String, exitCode: Int32) -> Never {
        StandardError.write("preflightd: \(message)\n")
        Glibc.exit(exitCode)
    }
}
