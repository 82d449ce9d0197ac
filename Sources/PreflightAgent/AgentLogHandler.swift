import Logging
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Writes log lines to standard error, one line per event.
///
/// Under journald (`JOURNAL_STREAM` set) each line starts with a `<N>` syslog priority so the journal
/// records the level, and carries no timestamp of its own (the journal adds one). Otherwise lines are
/// `2026-11-22T02:14:11.123Z warning preflightd: message key=value` for a person at a terminal.
public struct AgentLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let journald: Bool

    /// One lock for every handler so concurrent lines from different threads never interleave.
    private static let output = Mutex(())

    public init(label: String, level: Logger.Level, environment: [String: String] = ProcessInfo.processInfo.environment)
    {
        self.label = label
        self.logLevel = level
        self.journald = environment["JOURNAL_STREAM"] != nil
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let line = format(event, timestamp: Date())
        Self.output.withLock { _ in
            StandardError.write(line)
        }
    }

    /// The line for one event, newline included (separate for tests).
    public func format(_ event: LogEvent, timestamp: Date) -> String {
        var merged = metadata
        if let extra = event.metadata {
            merged.merge(extra) { _, new in new }
        }
        var line = ""
        if journald {
            line += "<\(Self.syslogPriority(event.level))>"
        } else {
            line += UTCTimestamp.string(from: timestamp, fractionalSeconds: true) + " " + event.level.rawValue + " "
        }
        line += "\(label): \(event.message)"
        if let error = event.error {
            line += " error=\"\(error)\""
        }
        for key in merged.keys.sorted() {
            line += " \(key)=\(Self.quoted("\(merged[key]!)"))"
        }
        // One event is one line: a newline inside a message must not forge a second journal entry.
        line = line.replacing("\n", with: "\\n")
        return line + "\n"
    }

    /// sd-daemon(3) priorities: 7 debug ... 2 critical.
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    private static func quoted(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty
            ? "\"" + value.replacing("\"", with: "\\\"") + "\"" : value
    }
}

/// Writes to file descriptor 2 directly (no Foundation `FileHandle`), retrying short writes.
public enum StandardError {
    public static func write(_ text: String) {
        var remaining = Array(text.utf8)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return  // stderr is gone; nothing else can be told
            }
            remaining = remaining.dropFirst(written)
        }
    }
}
