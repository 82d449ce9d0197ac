import ArgumentParser
import Foundation
import PreflightClient
import PreflightProtocol
import QRCode

/// `--requestor`, which may be left out when the box serves exactly one requestor.
struct RequestorOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The requestor (channel) id, e.g. espn; may be left out when \(PassConfigurationKey.requestors.path) names one.",
            valueName: "requestor-id"
        )
    )
    var requestor: String?

    /// `--requestor`, else the one requestor of the configuration file (or, when the file cannot be read,
    /// of the agent's `config.show`).
    func resolve(_ options: GlobalOptions) throws -> String {
        if let requestor { return requestor }
        var configured: [JSONValue]?
        if let data = FileManager.default.contents(atPath: options.config), let json = try? JSONReader.read(Array(data))
        {
            configured = json[ConfigurationSection.pass.rawValue]?[PassConfigurationKey.requestors.rawValue]?.arrayValue
        }
        if configured == nil {
            let shown = try? options.call(Command.configShow.wireName)
            configured =
                shown?[ConfigurationSection.pass.rawValue]?[PassConfigurationKey.requestors.rawValue]?.arrayValue
        }
        let names = (configured ?? []).compactMap(\.stringValue)
        guard names.count == 1 else {
            let known = names.isEmpty ? "none is configured" : "configured: \(names.joined(separator: ", "))"
            throw CtlFailure(message: "name the requestor with --requestor (\(known))", exitCode: CtlExit.usage)
        }
        return names[0]
    }
}

extension AgentCommand {
    /// An app command of Adobe Pass on the app endpoint, waiting as long as the agent may take to answer
    /// (its `pass.answerDeadline`, 15 s by default) unless `--timeout` says otherwise.
    func passCall(_ command: Command, _ args: JSONObject, appEndpoint: String?) throws -> JSONValue {
        var options = self.options
        options.timeout = options.timeout ?? 20
        return try options.call(command.wireName, args: args, endpoint: options.appEndpoint(override: appEndpoint))
    }
}

struct AuthLogin: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign the box in with a TV provider: shows a code, its URL and a QR code, and waits.",
        discussion: """
            As an app's getAuthentication: the agent asks Adobe Pass for a registration code. Open the URL on a \
            phone or computer (or scan the QR code), sign in with the TV provider account, and this command \
            returns once the agent saw the sign-in (exit 0), or when the code expired or was cancelled (exit 1). \
            Ctrl-C stops waiting; the code stays valid and the agent keeps watching it. Already signed in: says \
            so and exits 0.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var requestorOption: RequestorOption

    @Option(name: .long, help: ArgumentHelp("The TV provider (MVPD) id, e.g. Cablevision.", valueName: "mvpd"))
    var mvpd: String?

    @Flag(name: .long, help: "Print the code and return without waiting.")
    var noWait = false

    @Flag(name: .long, help: "Do not print the QR code.")
    var noQR = false

    @OptionGroup var events: EventsEndpointOptions

    func run() throws {
        let options = self.options
        let requestor = try requestorOption.resolve(options)
        // Subscribed before asking: an event published before a subscriber joins is not delivered.
        let subscriber: EventSubscriber?
        if noWait {
            subscriber = nil
        } else {
            let endpoint = try options.eventsEndpoint(override: events.eventsEndpoint)
            do {
                subscriber = try EventSubscriber(endpoint: endpoint, topicPrefixes: ["auth."])
            } catch {
                throw CtlFailure(error)
            }
        }
        var args: JSONObject = ["requestor": .string(requestor)]
        if let mvpd { args["mvpd"] = .string(mvpd) }
        let result = try passCall(.getAuthentication, args, appEndpoint: app.appEndpoint)
        if options.json { printJSON(result) }
        if let status = result["status"], status != .null {
            throw CtlFailure(message: "cannot start a sign-in: " + describeStatus(status), exitCode: CtlExit.agentError)
        }
        if result["authenticated"] == .bool(true) {
            if !options.json {
                print(
                    "Already signed in to \(requestor) with \(displayMvpd(result["mvpd"])) until \(until(result["notAfter"]))."
                )
            }
            return
        }
        guard let code = result["code"]?.stringValue, let url = result["url"]?.stringValue else {
            throw CtlFailure(message: "the agent's answer has no code", exitCode: CtlExit.agentError)
        }
        if !options.json { printCode(requestor: requestor, code: code, url: url, result) }
        guard let subscriber else { return }
        try wait(for: requestor, code: code, subscriber, options: options)
    }

    private func printCode(requestor: String, code: String, url: String, _ result: JSONValue) {
        let provider = result["mvpd"]?.stringValue.map { " with \($0)" } ?? " (the provider is chosen on that page)"
        print("Sign in to \(requestor)\(provider):")
        print("  1. On a phone or computer, open \(url)")
        print("  2. Sign in with the TV provider account.")
        var validity = ""
        if let notBefore = result["notBefore"]?.doubleValue, let notAfter = result["notAfter"]?.doubleValue {
            validity = " (valid for \(formatDuration(milliseconds: notAfter - notBefore)))"
        }
        print("  Code: \(code)\(validity)")
        if !noQR, let qr = try? QRCode(encoding: url) {
            print()
            // Dark modules must be dark on paper and screen alike: a dark terminal prints the light ones.
            for line in qr.terminalLines(quietZone: 2, inverted: true) { print("  " + line) }
        }
        print()
        fflush(nil)
    }

    /// Until `auth.authenticated` or `auth.failed` for this requestor; the agent is also asked now and
    /// then, so a missed event cannot leave this waiting.
    private func wait(for requestor: String, code: String, _ subscriber: EventSubscriber, options: GlobalOptions) throws
    {
        Interruption.install()
        if isatty(STDOUT_FILENO) == 1 {
            writeStandardError("Waiting for the sign-in (Ctrl-C stops waiting; the code stays valid)…\n")
        }
        var lastCheck = ContinuousClock.now
        while !Interruption.happened {
            let event: AgentEvent?
            do {
                event = try subscriber.next(timeout: .milliseconds(200))
            } catch {
                throw CtlFailure(error)
            }
            if let event, let body = event.json, body["requestor"]?.stringValue == requestor {
                if event.topic == EventTopic.authAuthenticated.topic {
                    return finished(body, options: options)
                }
                if event.topic == EventTopic.authFailed.topic {
                    if options.json { printJSON(body) }
                    throw CtlFailure(
                        message: "the sign-in ended: \(body["reason"]?.stringValue ?? "unknown")"
                            + (body["code"]?.stringValue.map { " (\($0))" } ?? ""),
                        exitCode: CtlExit.agentError
                    )
                }
            }
            if ContinuousClock.now - lastCheck > .seconds(5) {
                lastCheck = .now
                let status = try passCall(
                    .checkAuthentication,
                    ["requestor": .string(requestor)],
                    appEndpoint: app.appEndpoint
                )
                if status["authenticated"] == .bool(true) { return finished(status, options: options) }
                if status["pending"]?["code"]?.stringValue != code {
                    throw CtlFailure(
                        message: "the sign-in ended (the code is no longer pending)",
                        exitCode: CtlExit.agentError
                    )
                }
            }
        }
        throw CtlFailure(
            message: "stopped waiting; the code stays valid until it expires",
            exitCode: CtlExit.agentError
        )
    }

    private func finished(_ body: JSONValue, options: GlobalOptions) {
        if options.json {
            printJSON(body)
        } else {
            print("Signed in with \(displayMvpd(body["mvpd"])) until \(until(body["notAfter"])).")
        }
    }
}

struct AuthStatus: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Whether the box is signed in with a TV provider (checkAuthentication), and a pending code.",
        discussion: "Exit 0 when signed in, 1 when not (or the agent could not tell)."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var requestorOption: RequestorOption

    @Flag(name: .long, help: "Ask Adobe Pass even when the agent holds a valid profile.")
    var fresh = false

    func run() throws {
        let requestor = try requestorOption.resolve(options)
        var args: JSONObject = ["requestor": .string(requestor)]
        if fresh { args["fresh"] = true }
        var result = try passCall(.checkAuthentication, args, appEndpoint: app.appEndpoint)
        // The code is shown by `auth login` (which the user acts on), not in a status screen or its JSON.
        if var object = result.objectValue, var pending = object["pending"]?.objectValue {
            pending["code"] = nil
            pending["url"] = nil
            object["pending"] = .object(pending)
            result = .object(object)
        }
        let provider = try? passCall(
            .getSelectedProvider,
            ["requestor": .string(requestor)],
            appEndpoint: app.appEndpoint
        )
        if options.json {
            printJSON(result)
        } else {
            var rows: [(String, String)] = [("Requestor", requestor)]
            if result["authenticated"] == .bool(true) {
                rows.append(("Signed in", "yes, with \(displayMvpd(result["mvpd"]))"))
                rows.append(("Until", until(result["notAfter"])))
                rows.append(("Profile type", result["type"]?.stringValue ?? "-"))
            } else {
                rows.append(("Signed in", "no: " + describeStatus(result["status"])))
            }
            if let pending = result["pending"], pending != .null {
                let provider =
                    pending["mvpd"]?.stringValue.map { "with \($0)" } ?? "provider chosen on the second screen"
                rows.append(("Sign-in pending", "\(provider); `preflightctl auth login` shows the code"))
                rows.append(("Code valid until", until(pending["notAfter"])))
            }
            if let selected = provider?["selected"]?.stringValue { rows.append(("Selected provider", selected)) }
            printRows(rows)
        }
        if result["authenticated"] != .bool(true) {
            throw CtlFailure(message: "not signed in", exitCode: CtlExit.agentError)
        }
    }
}

struct AuthAuthorize: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize",
        abstract: "Ask for playback of a resource with a media token, as a player would (getAuthorization).",
        discussion: """
            The media token is a secret of the player: it is shown masked (its length and last four \
            characters) unless --show-token. Exit 1 when not authorized.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var requestorOption: RequestorOption

    @Flag(name: .long, help: "Print the whole media token.")
    var showToken = false

    @Argument(help: ArgumentHelp("The resource id (or MRSS fragment).", valueName: "resource"))
    var resource: String

    func run() throws {
        let requestor = try requestorOption.resolve(options)
        var result = try passCall(
            .getAuthorization,
            ["requestor": .string(requestor), "resource": .string(resource)],
            appEndpoint: app.appEndpoint
        )
        if !showToken, var object = result.objectValue, var token = object["mediaToken"]?.objectValue,
            let serialized = token["serializedToken"]?.stringValue
        {
            token["serializedToken"] = .string(maskedToken(serialized))
            object["mediaToken"] = .object(token)
            result = .object(object)
        }
        if options.json {
            printJSON(result)
        } else {
            let authorized = result["authorized"] == .bool(true)
            var rows: [(String, String)] = [("Resource", resource), ("Authorized", authorized ? "yes" : "no")]
            if let source = result["source"]?.stringValue { rows.append(("Source", source)) }
            if let mvpd = result["mvpd"]?.stringValue { rows.append(("Provider", mvpd)) }
            if let token = result["mediaToken"], token != .null {
                rows.append(("Media token", token["serializedToken"]?.stringValue ?? "-"))
                rows.append(("Token valid until", until(token["notAfter"])))
            }
            if let error = result["error"], error != .null { rows.append(("Adobe Pass", describeStatus(error))) }
            if let status = result["status"], status != .null { rows.append(("Status", describeStatus(status))) }
            printRows(rows)
        }
        if result["authorized"] != .bool(true) {
            throw CtlFailure(message: "not authorized", exitCode: CtlExit.agentError)
        }
    }
}

struct AuthLogout: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Sign the box out of its TV provider (logout), for every app of the requestor.",
        discussion: "When Adobe Pass asks for a browser step, its URL is printed: open it to finish at the provider."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    @OptionGroup var app: AppEndpointOptions
    @OptionGroup var requestorOption: RequestorOption

    @Option(
        name: .long,
        help: ArgumentHelp("The TV provider (MVPD) id, when not the signed-in one.", valueName: "mvpd")
    )
    var mvpd: String?

    func run() throws {
        let requestor = try requestorOption.resolve(options)
        var args: JSONObject = ["requestor": .string(requestor)]
        if let mvpd { args["mvpd"] = .string(mvpd) }
        let result = try passCall(.logout, args, appEndpoint: app.appEndpoint)
        if options.json {
            printJSON(result)
        } else if result["mvpd"] == .null || result["mvpd"] == nil {
            print("Signed out of \(requestor) (no TV provider was signed in).")
        } else {
            print("Signed out of \(requestor) (\(displayMvpd(result["mvpd"]))).")
            if let url = result["url"]?.stringValue { print("To finish at the provider, open \(url)") }
            if let status = result["status"], status != .null {
                print("Adobe Pass could not be told: \(describeStatus(status)); the box's state is cleared.")
            }
        }
        if result["loggedOut"] != .bool(true) {
            throw CtlFailure(
                message: "not signed out: " + describeStatus(result["status"]),
                exitCode: CtlExit.agentError
            )
        }
    }
}

/// "…Xy9= (312 characters)": enough to tell two tokens apart, never enough to use one.
func maskedToken(_ token: String) -> String {
    "…\(token.suffix(4)) (\(token.count) characters; --show-token prints it)"
}

private func displayMvpd(_ value: JSONValue?) -> String {
    value?.stringValue ?? "an unnamed provider"
}

/// "2026-11-26 03:19:01 (in 59 min)" for an epoch-milliseconds value.
private func until(_ value: JSONValue?) -> String {
    guard let epochMs = value?.doubleValue else { return "-" }
    let remaining = epochMs - Date().timeIntervalSince1970 * 1000
    let relative =
        remaining >= 0
        ? "in \(formatDuration(milliseconds: remaining))" : "\(formatDuration(milliseconds: -remaining)) ago"
    return "\(timestamp(epochMs: epochMs)) (\(relative))"
}
