import ArgumentParser
import Foundation
import PreflightClient
import PreflightProtocol

/// Options every command takes, before or after the subcommand's name
/// (`preflightctl --json status` and `preflightctl status --json` are the same).
struct GlobalOptions: ParsableArguments {
    static let defaultConfig = ConfigurationSection.defaultFile

    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "Agent configuration file, to find the agent's endpoints (default /etc/preflight/preflight.json).",
            valueName: "file"
        ),
        completion: .file(extensions: ["json"])
    )
    var configFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Admin endpoint (overrides --config), e.g. ipc:///run/preflight/admin.sock.",
            valueName: "endpoint"
        )
    )
    var endpoint: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds to wait for the agent's reply (default 2); for watch, how long to watch.",
            valueName: "seconds"
        )
    )
    var timeout: Double?

    @Flag(name: .long, help: "Print the agent's JSON for scripts instead of text.")
    var json = false

    var config: String { configFile ?? Self.defaultConfig }
    var timeoutSeconds: Double { timeout ?? 2 }

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds above 0 (at most 86400)")
        }
    }

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
        return try endpointFromConfig(.admin)
    }

    /// The app endpoint: `override` (`--app-endpoint`), else `agent.appEndpoint` of the config file, else the
    /// default.
    func appEndpoint(override: String?) throws -> String {
        if let override { return override }
        return try endpointFromConfig(.app)
    }

    /// The events endpoint: `override` (`--events-endpoint`), else `agent.eventsEndpoint` of the config file,
    /// else the default.
    func eventsEndpoint(override: String?) throws -> String {
        if let override { return override }
        return try endpointFromConfig(.events)
    }

    /// `endpoint` as the config file sets it, else its default. A missing default config file means the
    /// defaults; a missing or unreadable file named with `--config` is a usage error.
    private func endpointFromConfig(_ endpoint: AgentEndpoint) throws -> String {
        guard let data = FileManager.default.contents(atPath: config) else {
            // The default file may be absent (or readable by root only): the default endpoints then apply.
            if config == Self.defaultConfig { return endpoint.defaultAddress }
            throw CtlFailure(message: "cannot read \(config)", exitCode: CtlExit.usage)
        }
        guard let value = try? JSONReader.read(Array(data)) else {
            throw CtlFailure(message: "\(config) is not valid JSON", exitCode: CtlExit.usage)
        }
        return endpoint.configured(in: value) ?? endpoint.defaultAddress
    }

    /// The reply timeout as a `Duration`.
    var replyTimeout: Duration { .milliseconds(Int64(timeoutSeconds * 1000)) }

    /// Sends one command to `endpoint` and returns its result, mapping failures to exit codes.
    func call(_ command: String, args: JSONObject? = nil, endpoint: String) throws -> JSONValue {
        do {
            let connection = try AgentConnection(endpoint: endpoint, timeout: replyTimeout)
            return try connection.request(command, args: args)
        } catch {
            throw CtlFailure(error)
        }
    }

    /// Sends one admin command to the admin endpoint and returns its result.
    func call(_ command: String, args: JSONObject? = nil) throws -> JSONValue {
        try call(command, args: args, endpoint: adminEndpoint())
    }
}

/// `--app-endpoint`, for the commands that act as an app (`offers prefetch`, `offers load`,
/// `auth preauthorize`).
struct AppEndpointOptions: ParsableArguments {
    @Option(
        name: .customLong("app-endpoint"),
        help: ArgumentHelp(
            "App endpoint (overrides \(AgentEndpoint.app.path) of --config), e.g. \(AgentEndpoint.app.defaultAddress).",
            valueName: "endpoint"
        )
    )
    var appEndpoint: String?
}

/// `--events-endpoint`, for the commands that listen to events (`watch`, `auth login`).
struct EventsEndpointOptions: ParsableArguments {
    @Option(
        name: .customLong("events-endpoint"),
        help: ArgumentHelp(
            "Events endpoint (overrides \(AgentEndpoint.events.path) of --config), e.g. \(AgentEndpoint.events.defaultAddress).",
            valueName: "endpoint"
        )
    )
    var eventsEndpoint: String?
}

/// A `key=value` argument (`--param status=platinum`).
struct KeyValue: ExpressibleByArgument {
    var key: String
    var value: String

    init?(argument: String) {
        guard let separator = argument.firstIndex(of: "="), separator != argument.startIndex else { return nil }
        key = String(argument[..<separator])
        value = String(argument[argument.index(after: separator)...])
    }

    static var defaultCompletionKind: CompletionKind { .list([]) }
}

extension [KeyValue] {
    /// The pairs as a JSON object of strings; a key given twice keeps its last value.
    var jsonObject: JSONObject {
        var object = JSONObject()
        for pair in self { object[pair.key] = .string(pair.value) }
        return object
    }
}
