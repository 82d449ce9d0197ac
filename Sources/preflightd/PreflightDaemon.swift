import ArgumentParser
import Dispatch
import Logging
import PreflightAgent
import PreflightProtocol
import ServiceLifecycle
import UnixSignals

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

    /// The entry point: crash reports without memory contents first (see `PrivateCrashReports`), then the
    /// command line, run as a task while the main thread waits for it.
    ///
    /// Not an `async` main: that one ends the main thread through `dispatch_main`, whose `pthread_exit` unwinds
    /// the thread's stack through the binary's unwind tables, about 1 MiB of `.eh_frame` read at start and
    /// resident from then on (docs/BENCHMARKS.md, idle memory).
    static func main() {
        PrivateCrashReports.ensure()
        let finished = DispatchSemaphore(value: 0)
        // Detached: a task started here would inherit the main actor, whose queue this thread, waiting, never
        // drains.
        Task.detached {
            await main(nil)
            finished.signal()
        }
        finished.wait()
    }

    @Option(name: .long, help: "Configuration file.")
    var config: String = ConfigurationSection.defaultFile

    @Flag(name: .long, help: "Validate the configuration file and exit (0 valid, 78 not).")
    var checkConfig = false

    @Option(
        name: .long,
        help:
            "Override \(AgentConfiguration.path(of: \.agent.logLevel)) (trace, debug, info, notice, warning, error, critical)."
    )
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
            agent = try await Agent.assemble(
                configuration: loaded.configuration,
                configurationPath: config,
                logger: logger
            )
        } catch {
            logger.critical("cannot start: \(error)")
            fail("cannot start: \(error)", exitCode: error.exitCode)
        }
        // The group traps SIGTERM and SIGINT before it starts any service, and the endpoints are bound by
        // one of its services: from the moment an app or systemd can reach the agent, a stop request ends
        // in the graceful shutdown (drain, notification flush, socket files removed), never in the
        // signal's default action.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: agent.services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
        } catch let error as AgentError {
            logger.critical("cannot start: \(error)")
            fail("cannot start: \(error)", exitCode: error.exitCode)
        }
    }

    private func fail(_ message: String, exitCode: Int32) -> Never {
        StandardError.write("preflightd: \(message)\n")
        Glibc.exit(exitCode)
    }
}

/// What Swift's crash reporter prints when the agent crashes.
///
/// Its default away from a terminal (journald, a log file) is the `full` preset, which prints every register
/// with the 16 bytes of memory it points at: a register pointing at the client secret or an access token
/// would put part of it in the journal. The agent's reports keep every thread's backtrace and the images
/// they mention, and leave registers and memory out. The runtime reads `SWIFT_BACKTRACE` once, when the
/// process starts, so unless an operator set it (to debug with a full report, say), the agent execs itself
/// again at once with these settings: the same process id, before anything else has happened.
enum PrivateCrashReports {
    static let settings = "interactive=no,color=no,threads=all,registers=none,images=mentioned,sanitize=yes"

    static func ensure() {
        guard getenv("SWIFT_BACKTRACE") == nil, let executable = executablePath() else { return }
        setenv("SWIFT_BACKTRACE", settings, 1)
        execv(executable, CommandLine.unsafeArgv)
        // exec failed: carry on; the report then has the runtime's defaults.
    }

    /// This program's file, as the kernel knows it (not `argv[0]`, which may be a bare name or relative).
    /// Under valgrind it is the program valgrind runs; the exec then leaves valgrind, so profiling runs
    /// set `SWIFT_BACKTRACE` themselves (tools/bench --profile).
    private static func executablePath() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let length = buffer.withUnsafeMutableBufferPointer { bytes in
            bytes.baseAddress.map { readlink("/proc/self/exe", $0, bytes.count - 1) } ?? -1
        }
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length], as: UTF8.self)
    }
}
