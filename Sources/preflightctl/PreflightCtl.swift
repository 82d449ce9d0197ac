import ArgumentParser
import PreflightClient
import PreflightProtocol

/// Exit codes of `preflightctl`, for scripts.
enum CtlExit {
    static let ok: Int32 = 0
    static let agentError: Int32 = 1
    static let usage: Int32 = 2
    static let unreachable: Int32 = 3
    static let notPermitted: Int32 = 4
}

/// A failure with the exit code it maps to; printed as `preflightctl: message`.
struct CtlFailure: Error {
    var message: String
    var exitCode: Int32

    init(message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    init(_ error: AgentConnectionError) {
        message = error.description
        switch error {
        case .unreachable: exitCode = CtlExit.unreachable
        case .permissionDenied: exitCode = CtlExit.notPermitted
        case .agent(let agentError):
            exitCode = agentError.code == .notPermitted ? CtlExit.notPermitted : CtlExit.agentError
        case .badReply: exitCode = CtlExit.agentError
        }
    }
}

struct PreflightCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "preflightctl",
        abstract: "Inspect and clear the state of the Preflight agent (preflightd).",
        discussion: """
            Start with `preflightctl status`: agent, upstream health (Target, Adobe Pass), offer cache and \
            notification queue on one screen. The admin endpoint comes from --config \
            (\(AgentEndpoint.admin.path)) or --endpoint; commands that act as an app use \(AgentEndpoint.app.path).

            Exit codes: 0 ok, 1 the agent reported an error, 2 usage, 3 agent not reachable, 4 not permitted.
            """,
        version: preflightVersion,
        subcommands: [
            Status.self, Ping.self, Stats.self, Offers.self, TargetGroup.self, Auth.self, Notifications.self,
            DecisioningGroup.self, Watch.self,
            ConfigCommand.self, Call.self,
        ]
    )

    @OptionGroup var global: GlobalOptions
}

/// A command that talks to the agent: it takes the global options before or after its name.
protocol AgentCommand: ParsableCommand {
    /// The root command, holding the options given before the subcommand.
    var root: PreflightCtl { get }
    /// The options given after the subcommand.
    var local: GlobalOptions { get }
}

extension AgentCommand {
    /// The options in effect: those after the subcommand win over those before it.
    var options: GlobalOptions { local.merged(over: root.global) }
}
