import ArgumentParser
import PreflightProtocol

/// `preflightctl call COMMAND [ARGS]`: any command of the protocol, as an app or script would send it,
/// for what no other subcommand shows. Its names (and their shell completion) come from the command table.
struct Call: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Send any protocol command with JSON arguments and print the agent's JSON result.",
        discussion: """
            Sent to the admin endpoint, which takes every command (docs/PROTOCOL.md, "Commands"). \
            Example: preflightctl call offers.show '{"name": "logo"}'
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Argument(
        help: ArgumentHelp("The command's wire name.", valueName: "command"),
        completion: .list(Command.allCases.map(\.wireName))
    )
    var command: String

    @Argument(help: ArgumentHelp("The command's arguments, a JSON object (default none).", valueName: "args"))
    var arguments: String?

    func validate() throws {
        guard Command(wireName: command) != nil else {
            throw ValidationError(
                "\(command) is not a command; one of: \(Command.allCases.map(\.wireName).joined(separator: ", "))"
            )
        }
        _ = try parsedArguments()
    }

    func run() throws {
        printJSON(try options.call(command, args: parsedArguments()))
    }

    private func parsedArguments() throws -> JSONObject? {
        guard let arguments else { return nil }
        guard let value = try? JSONReader.read(Array(arguments.utf8)), case .object(let object) = value else {
            throw ValidationError("the arguments must be a JSON object, such as '{\"name\": \"logo\"}'")
        }
        return object
    }
}
