import ArgumentParser
import Foundation
import PreflightProtocol

struct DecisioningGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decisioning",
        abstract: "Target on-device decisioning: what a box would get from a rules artifact.",
        subcommands: [DecisioningEvaluate.self]
    )
}

struct DecisioningEvaluate: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Decide a Delivery API request from a rules artifact, as the box would, and print the result.",
        discussion: """
            Sends the artifact (rules.json) and the request to the agent's decisioning.evaluate, which decides \
            them with the agent's on-device engine and changes nothing on the box. Prints {"response", \
            "notifications", "notificationRequest"} (and "geoLookup" when the artifact targets by geo and the \
            request has only an IP address: pass the geo service's answer with --geo) as JSON with sorted keys \
            and two-space indents, so two runs can be diffed. --client defaults to the agent's \
            target.clientCode, --now to the agent's clock. The whole command must fit in the agent's \
            agent.maxBodyBytes (1 MiB by default). With --json, the agent's JSON on one line.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Option(help: ArgumentHelp("The rules artifact (rules.json).", valueName: "file"))
    var artifact: String

    @Option(help: ArgumentHelp("The Delivery API request (JSON).", valueName: "file"))
    var request: String

    @Option(help: ArgumentHelp("The Target client code (default: the agent's target.clientCode).", valueName: "code"))
    var client: String?

    @Option(
        name: .customLong("organization-id"),
        help: ArgumentHelp("The Experience Cloud organization id.", valueName: "id")
    )
    var organizationId: String?

    @Option(
        help: ArgumentHelp("The time to decide at, ISO-8601 such as 2026-11-26T01:00:00Z.", valueName: "time")
    )
    var now: String?

    @Option(help: ArgumentHelp("The geo service's x-geo-* answer (JSON object).", valueName: "file"))
    var geo: String?

    func validate() throws {
        if let now, Self.epochMilliseconds(iso8601: now) == nil {
            throw ValidationError("--now must be an ISO-8601 time such as 2026-11-26T01:00:00Z; got \(now)")
        }
    }

    func run() throws {
        var args: JSONObject = [
            "artifact": try Self.readJSON(artifact, option: "--artifact"),
            "request": try Self.readJSON(request, option: "--request"),
        ]
        var conf = JSONObject()
        if let client { conf["client"] = .string(client) }
        if let organizationId { conf["organizationId"] = .string(organizationId) }
        if !conf.isEmpty { args["conf"] = .object(conf) }
        if let now, let milliseconds = Self.epochMilliseconds(iso8601: now) { args["now"] = .integer(milliseconds) }
        if let geo { args["geo"] = try Self.readJSON(geo, option: "--geo") }
        let result: JSONValue
        do {
            result = try options.call(Command.decisioningEvaluate.wireName, args: args)
        } catch var failure as CtlFailure where failure.message.contains("payload_too_large") {
            failure.message +=
                "; the artifact and request together exceed the agent's agent.maxBodyBytes"
                + " (1 MiB unless configured; preflightctl config show)"
            throw failure
        }
        if options.json {
            printJSON(result)
            return
        }
        print(sortedPrettyJSON(result))
    }

    /// A file's JSON, or a usage failure naming the option.
    static func readJSON(_ path: String, option: String) throws -> JSONValue {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CtlFailure(message: "\(option): cannot read \(path)", exitCode: CtlExit.usage)
        }
        do {
            return try JSONReader.read(Array(data), maxDepth: 512)
        } catch {
            throw CtlFailure(message: "\(option): \(path) is not valid JSON: \(error)", exitCode: CtlExit.usage)
        }
    }

    /// `2026-11-26T01:00:00Z` (fractional seconds and offsets allowed) in milliseconds since the epoch.
    static func epochMilliseconds(iso8601 text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970 * 1000) }
    }
}

/// A value as JSON with members sorted by name and two-space indents, for diffing.
func sortedPrettyJSON(_ value: JSONValue, indent: String = "") -> String {
    let inner = indent + "  "
    switch value {
    case .object(let object) where !object.isEmpty:
        let members = object.sorted { $0.key.unicodeScalars.lexicographicallyPrecedes($1.key.unicodeScalars) }.map {
            "\(inner)\(JSONWriter.string(.string($0.key))): \(sortedPrettyJSON($0.value, indent: inner))"
        }
        return "{\n" + members.joined(separator: ",\n") + "\n\(indent)}"
    case .array(let elements) where !elements.isEmpty:
        return "[\n" + elements.map { inner + sortedPrettyJSON($0, indent: inner) }.joined(separator: ",\n")
            + "\n\(indent)]"
    default:
        return JSONWriter.string(value)
    }
}
