import PreflightCore
import PreflightProtocol
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension LatencyRing {
    /// `{"count": n, "p50Ms": …, "p90Ms": …, "p99Ms": …}`.
    public var json: JSONValue {
        var object: JSONObject = ["count": .integer(Int64(count))]
        if let values = percentiles([50, 90, 99]) {
            object["p50Ms"] = .number((values[0] * 1000).rounded() / 1000)
            object["p90Ms"] = .number((values[1] * 1000).rounded() / 1000)
            object["p99Ms"] = .number((values[2] * 1000).rounded() / 1000)
        }
        return .object(object)
    }
}

/// Per-command counters and latency of IPC requests, from receipt to reply, for `stats`.
public final class CommandStatistics: Sendable {
    private struct Entry: Sendable {
        var latency = LatencyRing()
        var errors: [String: Int] = [:]
    }

    private let entries = Mutex([String: Entry]())

    public init() {}

    /// Records one reply; `errorCode` is nil for a success.
    /// `started` is a `SystemClock.monotonicNanoseconds()` reading.
    public func record(_ command: String, since started: UInt64, errorCode: String?) {
        let milliseconds = Double(SystemClock.monotonicNanoseconds() &- started) / 1e6
        entries.withLock { entries in
            entries[command, default: Entry()].latency.record(milliseconds: milliseconds)
            if let errorCode { entries[command, default: Entry()].errors[errorCode, default: 0] += 1 }
        }
    }

    public func reset() {
        entries.withLock { $0 = [:] }
    }

    /// `{"ping": {"count": …, "p50Ms": …, "errors": {"invalid_argument": 1}}, …}` sorted by command.
    public var json: JSONValue {
        let snapshot = entries.withLock { $0 }
        return .object(
            JSONObject(
                snapshot.sorted { $0.key < $1.key }.map { command, entry in
                    var object = entry.latency.json.objectValue ?? JSONObject()
                    object["errors"] = .object(
                        JSONObject(
                            entry.errors.sorted { $0.key < $1.key }.map {
                                (key: $0.key, value: .integer(Int64($0.value)))
                            }
                        )
                    )
                    return (key: command, value: .object(object))
                }
            )
        )
    }
}
