import ArgumentParser
import Foundation
import PreflightProtocol

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Show the agent's effective configuration, or check a configuration file.",
        subcommands: [ConfigShow.self, ConfigCheck.self]
    )
}

struct ConfigShow: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the configuration the running agent uses, defaults included (secrets redacted)."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.configShow.wireName)
        if options.json {
            printJSON(result)
        } else {
            printRows(flattenedRows(result))
        }
    }
}

struct ConfigCheck: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a configuration file exactly as the agent would, without starting it.",
        discussion: """
            Runs `preflightd --check-config --config FILE` (preflightd must be installed beside preflightctl) and \
            prints its verdict. Exits 0 when the file is valid, 1 when it is not, 3 when preflightd is not there.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Argument(
        help: "The configuration file to check (default: --config, else /etc/preflight/preflight.json).",
        completion: .file(extensions: ["json"])
    )
    var file: String?

    func run() throws {
        let file = self.file ?? options.config
        let daemon = executableDirectory().appendingPathComponent("preflightd")
        guard FileManager.default.isExecutableFile(atPath: daemon.path) else {
            throw CtlFailure(
                message: "config check needs preflightd, which is not installed at \(daemon.path)",
                exitCode: CtlExit.unreachable
            )
        }
        let process = Process()
        process.executableURL = daemon
        process.arguments = ["--check-config", "--config", file]
        // With --json: {"file", "valid", "messages"}.
        let asJSON = options.json
        let pipe = Pipe()
        if asJSON {
            process.standardOutput = pipe
            process.standardError = pipe
        }
        do {
            try process.run()
        } catch {
            throw CtlFailure(message: "cannot run \(daemon.path): \(error)", exitCode: CtlExit.unreachable)
        }
        let output = asJSON ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        let valid = process.terminationReason == .exit && process.terminationStatus == 0
        if asJSON {
            let messages = String(decoding: output, as: UTF8.self).split(separator: "\n").map {
                JSONValue.string(String($0))
            }
            printJSON(["file": .string(file), "valid": .bool(valid), "messages": .array(messages)])
        }
        if !valid { throw ExitCode(CtlExit.agentError) }
    }
}

/// The directory of the running executable (resolving symbolic links), where preflightd is installed too.
private func executableDirectory() -> URL {
    if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return URL(fileURLWithPath: path).deletingLastPathComponent()
    }
    let invoked = CommandLine.arguments.first ?? "preflightctl"
    return URL(fileURLWithPath: invoked).resolvingSymlinksInPath().deletingLastPathComponent()
}
