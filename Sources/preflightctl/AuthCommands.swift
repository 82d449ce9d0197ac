import ArgumentParser
import PreflightProtocol

struct Auth: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Sign the box in and out of its TV provider; show and clear the Adobe Pass state; authorize as an app would.",
        subcommands: [
            AuthLogin.self, AuthStatus.self, AuthAuthorize.self, AuthLogout.self, AuthList.self, AuthClear.self,
            AuthPreauthorize.self,
        ]
    )
}

struct AuthList: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Show each requestor's authorization state (session, cached decisions, errors)."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.authList.wireName)
        if options.json {
            printJSON(result)
            return
        }
        var general = result.objectValue ?? JSONObject()
        general["requestors"] = nil
        let generalRows = flattenedRows(.object(general))
        printRows(generalRows)
        let requestors = requestorEntries(result["requestors"])
        guard !requestors.isEmpty else {
            if !generalRows.isEmpty { print() }
            print("No requestors configured (\(PassConfigurationKey.requestors.path)): no authorization state held.")
            return
        }
        for (name, requestor) in requestors {
            print()
            print("Requestor \(name)")
            printRequestor(requestor)
        }
    }

    /// Scalars and nested objects as dotted rows; arrays of objects (cached decisions) as a table each.
    private func printRequestor(_ requestor: JSONValue) {
        var scalars = JSONObject()
        var tables: [(String, [JSONValue])] = []
        for (key, value) in requestor.objectValue ?? JSONObject() {
            if let elements = value.arrayValue, let first = elements.first, first.objectValue != nil {
                tables.append((key, elements))
            } else {
                scalars[key] = value
            }
        }
        printRows(flattenedRows(.object(scalars)), indent: "  ")
        for (key, elements) in tables {
            print("  \(key):")
            var keys: [String] = []
            for element in elements {
                for member in element.objectValue ?? JSONObject() where !keys.contains(member.key) {
                    keys.append(member.key)
                }
            }
            var table = TextTable(keys.map { .left(columnTitle($0)) })
            for element in elements {
                table.append(keys.map { key in element[key].map { displayScalar($0, key: key) } ?? "-" })
            }
            for line in table.lines() { print("    " + line) }
        }
    }
}

struct AuthClear: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Forget cached authorization decisions (of one requestor, or all); optionally the registration.",
        discussion: """
            With --registration the agent also forgets the box's Adobe Pass client registration and registers \
            anew on the next request; that needs --yes.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Clear only this requestor's state.", valueName: "requestor-id"))
    var requestor: String?

    @Flag(name: .long, help: "Also forget the Adobe Pass registration (needs --yes).")
    var registration = false

    @Flag(name: .long, help: "Confirm --registration.")
    var yes = false

    func validate() throws {
        if registration && !yes {
            throw ValidationError(
                "--registration makes the agent register with Adobe Pass anew; add --yes to confirm"
            )
        }
    }

    func run() throws {
        var args = JSONObject()
        if let requestor { args["requestor"] = .string(requestor) }
        if registration { args["registration"] = .bool(true) }
        let result = try options.call(Command.authClear.wireName, args: args.isEmpty ? nil : args)
        if options.json {
            printJSON(result)
            return
        }
        guard let decisions = result["decisions"]?.doubleValue, let profiles = result["profiles"]?.doubleValue else {
            let rows = flattenedRows(result)
            if rows.isEmpty { print("Cleared.") } else { printRows(rows) }
            return
        }
        var text =
            "Cleared \(counted(.number(decisions), "cached decision")) and \(counted(.number(profiles), "profile"))"
        text += requestor.map { " of requestor \($0)" } ?? " of all requestors"
        text += result["registration"] == .bool(true) ? "; the registration is forgotten." : "."
        print(text)
    }
}

struct AuthPreauthorize: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "preauthorize",
        abstract: "Ask whether the signed-in user may watch resources, as an app does (app endpoint).",
        discussion: """
            Prints one line per resource: authorized yes or no, and Adobe Pass's error code and message for a \
            no. Exits 1 when the agent could not answer at all (e.g. authentication_session_missing: the user \
            must sign in again with their TV provider).
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions

    @OptionGroup var requestorOption: RequestorOption

    @Flag(name: .long, help: "Bypass the agent's decision cache (LOCAL_CACHE).")
    var noLocalCache = false

    @Flag(name: .long, help: "Ask Adobe Pass to bypass its server cache (REMOTE_CACHE).")
    var noRemoteCache = false

    @Argument(help: ArgumentHelp("The resource ids (or MRSS fragments).", valueName: "resource"))
    var resources: [String]

    func validate() throws {
        if resources.isEmpty { throw ValidationError("name at least one resource") }
    }

    func run() throws {
        let requestor = try requestorOption.resolve(options)
        var args: JSONObject = [
            "requestor": .string(requestor), "resources": .array(resources.map { .string($0) }),
        ]
        var disabled: [JSONValue] = []
        if noLocalCache { disabled.append(.string(PreauthorizeFeature.localCache.rawValue)) }
        if noRemoteCache { disabled.append(.string(PreauthorizeFeature.remoteCache.rawValue)) }
        if !disabled.isEmpty { args["disabledFeatures"] = .array(disabled) }
        let result = try options.call(
            Command.preauthorize.wireName,
            args: args,
            endpoint: options.appEndpoint(override: app.appEndpoint)
        )
        if options.json { printJSON(result) }
        if result["outcome"]?.stringValue == "failure" {
            throw CtlFailure(
                message: "preauthorization failed: " + describeStatus(result["status"]),
                exitCode: CtlExit.agentError
            )
        }
        if options.json { return }
        let decisions = result["resources"]?.arrayValue ?? []
        if decisions.isEmpty { print("No decisions.") }
        var table = TextTable([.left("RESOURCE"), .left("AUTHORIZED"), .left("ERROR")])
        for decision in decisions {
            let authorized = decision["authorized"] == .bool(true)
            table.append([
                decision["id"].map(displayValue) ?? "?", authorized ? "yes" : "no",
                decision["error"].map(describeStatus) ?? "",
            ])
        }
        if !decisions.isEmpty { table.print() }
        if let status = result["status"], status != .null {
            print("Adobe Pass: \(describeStatus(status))")
        }
    }
}

/// "403 preauthorization_denied_by_mvpd: message (action authentication: the user must ...)".
func describeStatus(_ status: JSONValue?) -> String {
    guard let status, status != .null else { return "no details" }
    var parts: [String] = []
    if let code = status["status"], code != .integer(0) { parts.append(displayValue(code)) }
    if let code = status["code"]?.stringValue { parts.append(code) }
    var text = parts.joined(separator: " ")
    if let message = status["message"]?.stringValue { text += (text.isEmpty ? "" : ": ") + message }
    if let action = status["action"]?.stringValue, action != "none" {
        text += " (action \(action)"
        if let hint = actionHints[action] { text += ": \(hint)" }
        text += ")"
    }
    return text
}

/// What a technician does about each error `action`.
private let actionHints: [String: String] = [
    "authentication": "the user must sign in again with their TV provider",
    "authorization": "the user's TV package does not include this; nothing to fix on the box",
    "configuration": "check the pass section of the configuration",
    "application-registration":
        "the agent's Adobe Pass registration was refused; check \(PassConfigurationKey.softwareStatement.path)",
    "retry": "retry shortly; if it persists, check the requestor id and the network",
    "retry-after": "retry later",
    "degradation": "Adobe Pass is degraded; decisions may be permissive for a while",
]

/// "AGE" for `ageMs`, "CONFIGURED AT" for `configuredAtMs`, "RESOURCE" for `resource`.
func columnTitle(_ key: String) -> String {
    var name = key
    if name.hasSuffix("Ms") { name.removeLast(2) }
    return words(name).uppercased()
}

/// "cached decisions" for `cachedDecisions`.
func words(_ camelCase: String) -> String {
    var text = ""
    for character in camelCase {
        if character.isUppercase && !text.isEmpty { text += " " }
        text += character.lowercased()
    }
    return text
}
