import ArgumentParser
import PreflightProtocol

struct Notifications: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or flush the display notifications waiting for Target (default: status).",
        subcommands: [NotificationsStatus.self, NotificationsFlush.self],
        defaultSubcommand: NotificationsStatus.self
    )
}

struct NotificationsStatus: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the notification queue: queued, in flight, sent, the oldest waiting, the last error."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.notificationsStatus.wireName)
        if options.json {
            printJSON(result)
            return
        }
        var lastError = result["lastError"]?.stringValue ?? "none"
        if let at = result["lastErrorAtMs"]?.doubleValue, result["lastError"]?.stringValue != nil {
            lastError += " (\(age(sinceEpochMs: at)))"
        }
        var rows = [
            ("Queued", number(result["queued"])),
            ("In flight", number(result["inFlight"])),
            ("Oldest queued", result["oldestTimestampMs"]?.doubleValue.map { age(sinceEpochMs: $0) } ?? "-"),
            ("Sent", number(result["sent"])),
            ("Failed attempts", number(result["failedAttempts"])),
            ("Dropped (full)", number(result["droppedOverflow"])),
            ("Refused", refusal(result)),
            ("Replayed", number(result["replayedFromJournal"])),
            ("Last error", lastError),
        ]
        // Only when the disk refused a journal write: a full state directory is what a technician must see.
        if let failures = result["journalWriteFailures"]?.doubleValue, failures > 0 {
            let now = result["journalFailing"] == .bool(true) ? "failing now" : "writing again"
            rows.append(("Journal", "\(number(result["journalWriteFailures"])) writes refused by the disk, \(now)"))
        }
        printRows(rows)
    }
}

/// "0", or "2 (last: HTTP 400: …, 3m ago)": notifications Target refused as invalid, dropped, never retried.
private func refusal(_ result: JSONValue) -> String {
    var text = number(result["refused"])
    if let last = result["lastRefusal"]?.stringValue {
        text += " (last: \(last)"
        if let at = result["lastRefusalAtMs"]?.doubleValue { text += ", \(age(sinceEpochMs: at))" }
        text += ")"
    }
    return text
}

struct NotificationsFlush: AgentCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the queued notifications now, without waiting for the retry backoff."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.notificationsFlush.wireName)
        if options.json {
            printJSON(result)
            return
        }
        let confirmed = result["confirmed"]?.doubleValue ?? 0
        let queued = result["queued"]?.doubleValue ?? 0
        var text =
            "Target confirmed \(counted(result["confirmed"], "notification")); \(number(result["queued"])) still queued"
        if confirmed == 0 && queued == 0 { text = "Nothing to flush: no notifications were queued" }
        if let error = result["lastError"]?.stringValue, queued > 0 { text += "; last error: \(error)" }
        print(text + ".")
    }
}
