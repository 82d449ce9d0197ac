import Foundation
import Logging
import Testing

@testable import PreflightAgent

@Suite struct AgentLogHandlerTests {
    private func event(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata? = nil) -> LogEvent {
        LogEvent(
            level: level,
            message: "\(message)",
            metadata: metadata,
            source: nil,
            file: #fileID,
            function: #function,
            line: #line
        )
    }

    @Test func underJournaldLinesCarryThePriorityAndNoTimestamp() {
        let handler = AgentLogHandler(label: "preflightd", level: .info, environment: ["JOURNAL_STREAM": "8:1234"])
        #expect(handler.format(event(.warning, "upstream slow"), timestamp: Date()) == "<4>preflightd: upstream slow\n")
        #expect(handler.format(event(.error, "x"), timestamp: Date()).hasPrefix("<3>"))
        #expect(handler.format(event(.info, "x"), timestamp: Date()).hasPrefix("<6>"))
        #expect(handler.format(event(.debug, "x"), timestamp: Date()).hasPrefix("<7>"))
        #expect(handler.format(event(.critical, "x"), timestamp: Date()).hasPrefix("<2>"))
    }

    @Test func atATerminalLinesCarryATimestampAndTheLevel() {
        let handler = AgentLogHandler(label: "preflightd", level: .info, environment: [:])
        let line = handler.format(event(.info, "ready"), timestamp: Date(timeIntervalSince1970: 0))
        #expect(line == "1970-01-01T00:00:00.000Z info preflightd: ready\n")
    }

    @Test func metadataIsSortedAndQuotedAndOneEventIsOneLine() {
        let handler = AgentLogHandler(label: "preflightd", level: .info, environment: ["JOURNAL_STREAM": "1:1"])
        let line = handler.format(
            event(.info, "two\nlines", ["b": "x y", "a": "1"]),
            timestamp: Date()
        )
        #expect(line == "<6>preflightd: two\\nlines a=1 b=\"x y\"\n")
    }
}

@Suite struct UTCTimestampTests {
    @Test func formatsRFC3339InUTC() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.25)
        #expect(UTCTimestamp.string(from: date, fractionalSeconds: true) == "2026-11-18T11:06:40.250Z")
        #expect(UTCTimestamp.string(from: date, fractionalSeconds: false) == "2026-11-18T11:06:40Z")
        #expect(
            UTCTimestamp.string(from: Date(timeIntervalSince1970: 0.9999), fractionalSeconds: true)
                == "1970-01-01T00:00:00.999Z"
        )
    }
}
