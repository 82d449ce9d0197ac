import ArgumentParser
import PreflightProtocol

struct TargetGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "target",
        abstract: "The box's Target visitor: its ids, a new visitor for a new household, its privacy status.",
        subcommands: [TargetVisitor.self, TargetReset.self, TargetPrivacyCommand.self, TargetPreview.self]
    )
}

struct TargetVisitor: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "visitor",
        abstract:
            "Show the Target visitor ids every app of the box shares (tntId, thirdPartyId, session, customer ids)."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions

    func run() throws {
        let options = self.options
        let endpoint = try options.appEndpoint(override: app.appEndpoint)
        let result = try options.call(Command.getVisitorIds.wireName, endpoint: endpoint)
        if options.json {
            printJSON(result)
            return
        }
        var rows: [(String, String)] = []
        for (key, value) in result.objectValue ?? JSONObject() where key != "customerIds" {
            rows.append((key, value == .null ? "-" : displayValue(value)))
        }
        for id in result["customerIds"]?.arrayValue ?? [] {
            let code = id["integrationCode"]?.stringValue ?? "?"
            let state = id["authenticatedState"]?.stringValue ?? "unknown"
            rows.append(("customerId \(code)", "\(id["id"]?.stringValue ?? "?") (\(state))"))
        }
        printRows(rows)
    }
}

struct TargetReset: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Start a new Target visitor (resetExperience), e.g. for a box handed to a new household.",
        discussion: """
            Display notifications already queued are sent first, under the old visitor; then the tntId, the \
            third-party id, the session and the edge host are forgotten, and the cached offers dropped. Every \
            app of the box is affected; needs --yes.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions

    @Flag(name: .long, help: "Confirm the reset.")
    var yes = false

    func validate() throws {
        if !yes {
            throw ValidationError("a reset makes the box a new Target visitor for every app; add --yes to confirm")
        }
    }

    func run() throws {
        var options = self.options
        // The agent first sends the queued notifications (within `target.timeout`).
        options.timeout = options.timeout ?? 20
        let result = try options.call(
            Command.resetExperience.wireName,
            endpoint: options.appEndpoint(override: app.appEndpoint)
        )
        if options.json {
            printJSON(result)
            return
        }
        print("New Target visitor: ids and session forgotten, \(counted(result["cleared"], "cached offer")) dropped.")
    }
}

struct TargetPrivacyCommand: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "privacy",
        abstract: "Show or set the box's Target privacy status: optedIn, optedOut or unknown.",
        discussion: """
            optedOut sends nothing to Target and drops the visitor ids, the cached offers and the queued \
            notifications (needs --yes); unknown sends nothing and holds notifications until optedIn. The \
            status set here is kept across restarts, until the target.privacy setting changes.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Argument(help: "optedIn, optedOut or unknown; shows the status when left out.")
    var status: String?

    @Flag(name: .long, help: "Confirm optedOut, which drops the visitor ids, cached offers and queued notifications.")
    var yes = false

    func validate() throws {
        if status == "optedOut" && !yes {
            throw ValidationError(
                "optedOut drops the box's Target visitor ids, cached offers and queued notifications; add --yes"
            )
        }
    }

    func run() throws {
        let options = self.options
        let result = try options.call(
            Command.targetPrivacy.wireName,
            args: status.map { ["status": .string($0)] }
        )
        if options.json {
            printJSON(result)
            return
        }
        let current = result["status"]?.stringValue ?? "?"
        let setBy = result["setBy"]?.stringValue ?? "?"
        if let previous = result["previous"]?.stringValue, previous != current {
            print("Target privacy: \(current) (was \(previous)).")
        } else {
            print("Target privacy: \(current) (set by \(setBy)).")
        }
    }
}
