import ArgumentParser
import Foundation
import PreflightProtocol

struct TargetPreview: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "preview",
        abstract: "Show every app Target's QA mode for a while (a marketer's preview link), show it, or end it.",
        discussion: """
            With --token, every Delivery request the agent sends, for every app, carries the preview's QA mode \
            token for --minutes (default \(TargetPreviewCommand.defaultMinutes)), then the box goes back to the \
            live activities by itself. The cached offers are dropped at the start and at the end: apps get the \
            preview's offers on their next prefetch or load, and never keep them after. Without options, shows \
            the preview; --end ends it now; a restart of the agent ends it too. A token Target refuses ends the \
            preview at the next request (see `preflightctl watch --topic target.`).
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Option(
        help: ArgumentHelp(
            "The preview link's at_preview_token, or the whole link (the token is taken from it).",
            valueName: "token"
        )
    )
    var token: String?

    @Option(
        help: ArgumentHelp(
            "How long the preview lasts, 1 to 1440 (default \(TargetPreviewCommand.defaultMinutes)).",
            valueName: "minutes"
        )
    )
    var minutes: Int?

    @Flag(help: "End the preview now.")
    var end = false

    func validate() throws {
        if end, token != nil || minutes != nil { throw ValidationError("--end takes no --token or --minutes") }
        if token == nil, minutes != nil { throw ValidationError("--minutes needs --token: the preview to show") }
        if let minutes, !TargetPreviewCommand.minutes.contains(Int64(minutes)) {
            throw ValidationError("--minutes must be 1 to 1440 (a day)")
        }
    }

    func run() throws {
        var args: JSONObject?
        if end {
            args = ["end": true]
        } else if let token {
            args = ["token": .string(Self.previewToken(from: token))]
            if let minutes { args?["minutes"] = .integer(Int64(minutes)) }
        }
        let result = try options.call(Command.targetPreview.wireName, args: args)
        if options.json {
            printJSON(result)
            return
        }
        let dropped = "\(counted(result["cleared"], "cached offer")) dropped"
        if end {
            print(result["ended"] == .bool(true) ? "Preview ended; \(dropped)." : "No preview was on.")
        } else if let summary = previewSummary(result) {
            let effect = "every app gets Target's QA mode offers"
            print(token == nil ? "Preview \(summary): \(effect)." : "Preview \(summary): \(effect); \(dropped).")
        } else {
            print("No preview: apps get Target's live activities.")
        }
    }

    /// The token of a preview link (`...?at_preview_token=...`), percent-decoded; a bare token as it is.
    static func previewToken(from argument: String) -> String {
        if argument.contains("at_preview_token="),
            let value = URLComponents(string: argument)?.queryItems?.first(where: { $0.name == "at_preview_token" })?
                .value, !value.isEmpty
        {
            return value
        }
        return argument.contains("%") ? argument.removingPercentEncoding ?? argument : argument
    }
}

/// "on, token Xk3p…, ends in 29m 12s (2026-11-22 04:46:00)" for a preview that is on, else nil.
func previewSummary(_ preview: JSONValue?) -> String? {
    guard preview?["active"] == .bool(true) else { return nil }
    var text = "on, token \(preview?["token"].map(displayValue) ?? "?")"
    if let left = preview?["expiresInMs"]?.doubleValue {
        text += ", ends in \(formatDuration(milliseconds: left))"
    }
    if let at = preview?["expiresAtMs"]?.doubleValue { text += " (\(timestamp(epochMs: at)))" }
    return text
}
