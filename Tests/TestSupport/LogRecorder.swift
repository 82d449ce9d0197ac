import Logging
import Synchronization

/// Log lines (message and metadata) at every level.
public final class LogRecorder: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    public var logger: Logger {
        var logger = Logger(label: "test") { _ in RecordingLogHandler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    public var all: [String] { lines.withLock { $0 } }

    public func append(_ line: String) {
        lines.withLock { $0.append(line) }
    }
}

public struct RecordingLogHandler: LogHandler {
    public let recorder: LogRecorder
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    public init(recorder: LogRecorder) {
        self.recorder = recorder
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var line = "\(event.level) \(event.message)"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        for key in merged.keys.sorted() {
            line += " \(key)=\(merged[key]!)"
        }
        if let error = event.error { line += " error=\(error)" }
        recorder.append(line)
    }
}
