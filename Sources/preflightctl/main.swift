import ArgumentParser
import Foundation
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

/// Options every command takes, before or after the subcommand's name
/// (`preflightctl --json status` and `preflightctl status --json` are the same).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: "Agent configuration file, to find the admin endpoint (default /etc/preflight/preflight.json)."
    )
    var configFile: String?

    @Option(name: .long, help: "Admin endpoint (overrides --config), e.g. ipc:///run/preflight/admin.sock.")
    var endpoint: String?

    @Option(name: .long, help: "Seconds to wait for the agent (default 2).")
    var timeout: Double?

    @Flag(name: .long, help: "Print JSON for scripts instead of text.")
    var json = false

    var config: String { configFile ?? "/etc/preflight/preflight.json" }
    var timeoutSeconds: Double { timeout ?? 2 }

    /// These options as given after the subcommand, falling back to those given before it.
    func merged(over parent: GlobalOptions) -> GlobalOptions {
        var merged = self
        merged.configFile = configFile ?? parent.configFile
        merged.endpoint = endpoint ?? parent.endpoint
        merged.timeout = timeout ?? parent.timeout
        merged.json = json || parent.json
        return merged
    }

    /// The admin endpoint: `--endpoint`, else `agent.adminEndpoint` of the config file, else the default.
    func adminEndpoint() throws -> String {
        if let endpoint { return endpoint }
        let fallback = "ipc:///run/preflight/admin.sock"
        guard let data = FileManager.default.contents(atPath: config) else {
            if config == "/etc/preflight/preflight.json" { return fallback }
            throw CtlFailure(message: "cannot read \(config)", exitCode: CtlExit.usage)
        }
        guard let value = try? JSONReader.read(Array(data)) else {
            throw CtlFailure(message: "\(config) is not valid JSON", exitCode: CtlExit.usage)
        }
        return value["agent"]?["adminEndpoint"]?.stringValue ?? fallback
    }

    func connect() throws -> AgentConnection {
        let endpoint = try adminEndpoint()
        do {
            return try AgentConnection(endpoint: endpoint, timeout: .milliseconds(Int64(timeoutSeconds * 1000)))
        } catch {
            throw CtlFailure(error)
        }
    }

    /// Sends one admin command and returns its result, mapping failures to exit codes.
    func call(_ command: String, args: JSONObject? = nil) throws -> JSONValue {
        let connection = try connect()
        do {
            return try connection.request(command, args: args)
        } catch {
            throw CtlFailure(error)
        }
    }
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
            Exit codes: 0 ok, 1 the agent reported an error, 2 usage, 3 agent not reachable, 4 not permitted.
            """,
        version: preflightVersion,
        subcommands: [Ping.self, Status.self]
    )

    @OptionGroup var global: GlobalOptions
}

struct Ping: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check that the agent answers.")

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    var options: GlobalOptions { local.merged(over: root.global) }

    func run() throws {
        let started = ContinuousClock.now
        let result = try options.call(CommandName.ping)
        let elapsed = ContinuousClock.now - started
        if options.json {
            printJSON(result)
        } else {
            let version = result["version"]?.stringValue ?? "?"
            let uptime = result["uptimeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "?"
            print("preflightd \(version) answered in \(formatRoundTrip(elapsed)), up \(uptime)")
        }
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show what the agent holds and how its upstreams are.")

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions
    var options: GlobalOptions { local.merged(over: root.global) }

    func run() throws {
        let result = try options.call(CommandName.status)
        if options.json {
            printJSON(result)
            return
        }
        var rows: [(String, String)] = []
        rows.append(("Version", result["version"]?.stringValue ?? "?"))
        rows.append(("PID", result["pid"].map(displayValue) ?? "?"))
        rows.append(("Uptime", result["uptimeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "?"))
        rows.append(("Config file", result["configFile"]?.stringValue ?? "-"))
        for role in ["app", "admin", "events"] {
            rows.append(("Endpoint \(role)", result["endpoints"]?[role]?.stringValue ?? "?"))
        }
        for upstream in ["target", "pass"] {
            rows.append(("Upstream \(upstream)", upstreamHealth(result["upstreams"]?[upstream])))
        }
        if let target = result["target"] {
            let cache = target["cache"]
            rows.append(
                (
                    "Offers cached",
                    "\(number(cache?["entries"])) entries, \(bytes(cache?["bytes"])) of \(bytes(cache?["budgetBytes"])), "
                        + "\(number(cache?["hits"])) hits, \(number(cache?["misses"])) misses, \(number(cache?["evictions"])) evicted"
                )
            )
            let visitor = target["visitor"]
            rows.append(
                (
                    "Target visitor",
                    "tntId \(visitor?["tntId"]?.stringValue ?? "-"), edge \(visitor?["edgeHost"]?.stringValue ?? "-"), "
                        + "session \(visitor?["sessionAgeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "-") old"
                )
            )
            let queue = target["notifications"]
            var notifications = "\(number(queue?["queued"])) queued, \(number(queue?["sent"])) sent"
            if let oldest = queue?["oldestTimestampMs"]?.doubleValue {
                notifications += ", oldest \(age(sinceEpochMs: oldest))"
            }
            if let error = queue?["lastError"]?.stringValue { notifications += ", last error: \(error)" }
            rows.append(("Notifications", notifications))
        }
        if let ipc = result["ipc"]?.objectValue {
            rows.append(("Requests", ipc["requests"].map(displayValue) ?? "0"))
            rows.append(("In flight", ipc["inFlight"].map(displayValue) ?? "0"))
        }
        printTable(rows)
    }
}

/// "https://acme.tt.omtrdc.net  ok 3m ago" or "... last error timeout 12s ago: detail".
func upstreamHealth(_ health: JSONValue?) -> String {
    var text = health?["url"]?.stringValue ?? "?"
    let success = health?["lastSuccessAtMs"]?.doubleValue
    let failure = health?["lastErrorAtMs"]?.doubleValue
    switch (success, failure) {
    case (nil, nil):
        text += "  (no calls yet)"
    case (let success?, let failure) where failure == nil || success >= failure!:
        text += "  ok, last success \(age(sinceEpochMs: success))"
    default:
        let code = health?["lastErrorCode"]?.stringValue ?? "error"
        text += "  FAILING: \(code) \(age(sinceEpochMs: failure ?? 0))"
        if let detail = health?["lastError"]?.stringValue { text += " (\(detail))" }
    }
    return text
}

func age(sinceEpochMs epochMs: Double) -> String {
    let now = Date().timeIntervalSince1970 * 1000
    return formatDuration(milliseconds: max(0, now - epochMs)) + " ago"
}

func number(_ value: JSONValue?) -> String {
    value.map(displayValue) ?? "0"
}

/// "12.5 KiB", "32 MiB".
func bytes(_ value: JSONValue?) -> String {
    let count = value?.doubleValue ?? 0
    if count < 1024 { return "\(Int(count)) B" }
    if count < 1_048_576 { return String(format: "%.1f KiB", count / 1024) }
    return String(format: "%.1f MiB", count / 1_048_576)
}

func printJSON(_ value: JSONValue) {
    print(JSONWriter.string(value))
}

func displayValue(_ value: JSONValue) -> String {
    switch value {
    case .string(let text): text
    case .integer(let number): String(number)
    default: JSONWriter.string(value)
    }
}

func printTable(_ rows: [(String, String)]) {
    let width = rows.map(\.0.count).max() ?? 0
    for (key, value) in rows {
        print(key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
    }
}

/// "3d 4h", "2h 5m", "4m 10s", "12s", "850ms".
func formatDuration(milliseconds: Double) -> String {
    let seconds = Int(milliseconds / 1000)
    if seconds < 1 { return "\(Int(milliseconds))ms" }
    let (days, hours, minutes) = (seconds / 86_400, seconds % 86_400 / 3600, seconds % 3600 / 60)
    if days > 0 { return "\(days)d \(hours)h" }
    if hours > 0 { return "\(hours)h \(minutes)m" }
    if minutes > 0 { return "\(minutes)m \(seconds % 60)s" }
    return "\(seconds)s"
}

func formatRoundTrip(_ duration: Duration) -> String {
    let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    return microseconds < 10_000 ? "\(microseconds) µs" : "\(microseconds / 1000) ms"
}

/// Runs the command tree with this tool's exit codes (ArgumentParser's own usage code is 64; ours is 2).
func runMain() -> Never {
    do {
        var command = try PreflightCtl.parseAsRoot()
        try command.run()
        exit(CtlExit.ok)
    } catch let failure as CtlFailure {
        writeStandardError("preflightctl: \(failure.message)\n")
        exit(failure.exitCode)
    } catch {
        let code = PreflightCtl.exitCode(for: error)
        if code == .success {
            PreflightCtl.exit(withError: error)
        }
        writeStandardError(PreflightCtl.fullMessage(for: error) + "\n")
        exit(code == .validationFailure ? CtlExit.usage : code.rawValue)
    }
}

func writeStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

runMain()
