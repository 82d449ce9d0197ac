import ArgumentParser
import PreflightClient
import PreflightProtocol

struct Offers: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, show and clear the prefetched Target offers; prefetch and load offers as an app would.",
        subcommands: [OffersList.self, OffersShow.self, OffersClear.self, OffersPrefetch.self, OffersLoad.self]
    )
}

struct OffersList: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the cached offers, most recently used first."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.offersList.wireName)
        if options.json {
            printJSON(result)
            return
        }
        let offers = result["offers"]?.arrayValue ?? []
        guard !offers.isEmpty else {
            print("No offers cached.")
            return
        }
        var table = TextTable([.left("NAME"), .right("SIZE"), .right("HITS"), .right("TOKENS"), .left("AGE")])
        var total = 0.0
        for offer in offers {
            total += offer["bytes"]?.doubleValue ?? 0
            table.append([
                offer["name"].map(displayValue) ?? "?", bytes(offer["bytes"]), number(offer["hits"]),
                number(offer["tokens"]), age(milliseconds: offer["ageMs"]),
            ])
        }
        table.print()
        print("\(counted(.integer(Int64(offers.count)), "offer")), \(bytes(.number(total)))")
    }
}

struct OffersShow: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one cached offer: its content, options, event tokens and state."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Argument(
        help: ArgumentHelp("The mbox name (see offers list).", valueName: "name"),
        completion: .custom(cachedOfferNames)
    )
    var name: String

    func run() throws {
        let result = try options.call(Command.offersShow.wireName, args: ["name": .string(name)])
        if options.json {
            printJSON(result)
            return
        }
        var rows: [(String, String)] = [
            ("Name", result["name"].map(displayValue) ?? name),
            ("Size", bytes(result["bytes"])),
            ("Cached", age(milliseconds: result["ageMs"])),
            ("Hits", number(result["hits"])),
            ("Event tokens", number(result["tokens"])),
            ("State", result["state"].map(displayValue) ?? "-"),
            ("Content", escapedForOneLine(result["content"].map(displayValue) ?? "")),
        ]
        for (index, option) in (result["options"]?.arrayValue ?? []).enumerated() {
            let content = option["content"].map { value in value.stringValue ?? JSONWriter.string(value) }
            var summary = option["type"].map(displayValue) ?? "?"
            if let token = option["eventToken"]?.stringValue { summary += ", event token \(token)" }
            rows.append(("Option \(index + 1)", summary))
            rows.append(("", escapedForOneLine(content ?? "")))
        }
        printRows(rows)
    }
}

struct OffersClear: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Clear the offer cache, or one offer; apps then get fresh offers on their next prefetch."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Argument(
        help: ArgumentHelp("Clear only this mbox (default: all).", valueName: "name"),
        completion: .custom(cachedOfferNames)
    )
    var name: String?

    func run() throws {
        let result = try options.call(Command.offersClear.wireName, args: name.map { ["name": .string($0)] })
        if options.json {
            printJSON(result)
            return
        }
        let cleared = result["cleared"]
        if let name, cleared?.doubleValue == 0 {
            print("No cached offer named \"\(name)\"; nothing cleared.")
        } else {
            print("Cleared \(counted(cleared, "offer")).")
        }
    }
}

/// Options of the commands that ask for offers as an app does.
struct MboxParameterOptions: ParsableArguments {
    @Option(
        name: .customLong("param"),
        help: ArgumentHelp("An mbox parameter for every mbox named (repeatable).", valueName: "key=value")
    )
    var parameters: [KeyValue] = []

    @Option(
        name: .customLong("profile"),
        help: ArgumentHelp("A profile parameter (repeatable).", valueName: "key=value")
    )
    var profile: [KeyValue] = []

    /// Adds `mboxParameters` to one mbox or request object when any were given.
    func decorate(_ mbox: JSONObject) -> JSONObject {
        var mbox = mbox
        if !parameters.isEmpty { mbox["mboxParameters"] = .object(parameters.jsonObject) }
        return mbox
    }

    /// Adds `profileParameters` to the command's arguments when any were given.
    func decorateArguments(_ args: JSONObject) -> JSONObject {
        var args = args
        if !profile.isEmpty { args["profileParameters"] = .object(profile.jsonObject) }
        return args
    }
}

struct OffersPrefetch: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Prefetch offers from Target into the cache, as an app does (app endpoint, `prefetch`).",
        discussion: """
            One Target call for all the mboxes named. Exits 1 when that call failed (nothing is cached then; \
            see Upstream target in `preflightctl status`).
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var parameters: MboxParameterOptions

    @Argument(help: ArgumentHelp("The mbox names to prefetch.", valueName: "name"))
    var names: [String]

    func validate() throws {
        if names.isEmpty { throw ValidationError("name at least one mbox to prefetch") }
    }

    func run() throws {
        let mboxes = names.map { JSONValue.object(parameters.decorate(["name": .string($0)])) }
        let args = parameters.decorateArguments(["mboxes": .array(mboxes)])
        let result = try options.call(
            Command.prefetch.wireName,
            args: args,
            endpoint: options.appEndpoint(override: app.appEndpoint)
        )
        let succeeded = result["success"] != .bool(false)
        if options.json {
            printJSON(result)
        } else {
            var table = TextTable([.left("NAME"), .left("CACHED")])
            for mbox in result["mboxes"]?.arrayValue ?? [] {
                let cached = mbox["cached"] == .bool(true)
                table.append([
                    mbox["name"].map(displayValue) ?? "?",
                    cached ? "yes" : (succeeded ? "no (Target has no content for it)" : "no"),
                ])
            }
            table.print()
        }
        if !succeeded {
            throw CtlFailure(
                message: "the Target call failed; nothing was cached (see Upstream target in preflightctl status)",
                exitCode: CtlExit.agentError
            )
        }
    }
}

struct OffersLoad: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load offers as an app does (app endpoint, `loadRequests`) and show where each came from.",
        discussion: """
            SOURCE is cache (from the prefetch cache, no network), network (fetched from Target now) or default \
            (your --default text, because Target failed, timed out or had no content). Like an app's load, a \
            cached offer served here sends Target a display notification.

            With --trace, the load goes to Target in a call of its own (never from the cache) with Target's \
            trace asked for, and each mbox's trace is printed after the table as Target sent it.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var parameters: MboxParameterOptions

    @Option(
        name: .customLong("default"),
        help: ArgumentHelp("The default content an app would show when Target has nothing.", valueName: "text")
    )
    var defaultContent: String

    @Option(
        help: ArgumentHelp(
            "Ask Target for its trace with this authorization token (made for the account in Target's UI).",
            valueName: "token"
        )
    )
    var trace: String?

    @Argument(help: ArgumentHelp("The mbox names to load.", valueName: "name"), completion: .custom(cachedOfferNames))
    var names: [String]

    func validate() throws {
        if names.isEmpty { throw ValidationError("name at least one mbox to load") }
        if trace?.isEmpty == true { throw ValidationError("--trace needs Target's authorization token") }
    }

    func run() throws {
        let requests = names.map {
            JSONValue.object(parameters.decorate(["name": .string($0), "defaultContent": .string(defaultContent)]))
        }
        var args = parameters.decorateArguments(["requests": .array(requests)])
        if let trace { args["trace"] = ["authorizationToken": .string(trace)] }
        let result = try options.call(
            Command.loadRequests.wireName,
            args: args,
            endpoint: options.appEndpoint(override: app.appEndpoint)
        )
        if options.json {
            printJSON(result)
            return
        }
        var table = TextTable([.left("NAME"), .left("SOURCE"), .left("CONTENT")])
        for content in result["contents"]?.arrayValue ?? [] {
            table.append([
                content["name"].map(displayValue) ?? "?", content["source"].map(displayValue) ?? "?",
                escapedForOneLine(content["content"]?.stringValue ?? ""),
            ])
        }
        table.print()
        guard trace != nil else { return }
        for content in result["contents"]?.arrayValue ?? [] {
            let name = content["name"].map(displayValue) ?? "?"
            if let trace = content["trace"], trace != .null {
                print("\nTrace of \(name), as Target sent it:\n\(prettyJSON(trace))")
            } else {
                // A token Target does not accept gets an answer without a trace; a default may be no answer.
                let upstream = content["source"] == .string("default") ? " and Upstream target in `status`" : ""
                print("\nTrace of \(name): none; Target sent no trace (check the authorization token\(upstream))")
            }
        }
    }
}

/// Content on one line: newlines, tabs and other control characters escaped as in JSON.
func escapedForOneLine(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return text }
    var escaped = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\n": escaped += "\\n"
        case "\r": escaped += "\\r"
        case "\t": escaped += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            escaped +=
                "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                + String(scalar.value, radix: 16)
        default: escaped.unicodeScalars.append(scalar)
        }
    }
    return escaped
}

/// Shell completion for offer names: asks the running agent (`offers.list`), briefly, using the `--config`
/// or `--endpoint` already typed. Offers nothing when the agent does not answer within half a second.
@Sendable
func cachedOfferNames(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
    var arguments = ["--timeout", "0.5"]
    for (position, word) in words.enumerated()
    where ["--config", "--endpoint"].contains(word) && position + 1 < words.count && position + 1 != index {
        arguments += [word, words[position + 1]]
    }
    guard let options = try? GlobalOptions.parse(arguments), let result = try? options.call(Command.offersList.wireName)
    else { return [] }
    return (result["offers"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }.filter {
        $0.hasPrefix(prefix)
    }
}
