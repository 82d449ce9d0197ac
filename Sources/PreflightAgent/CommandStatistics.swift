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
///
/// One entry per command of the table, in an array indexed by the command's place (`Command.ordinal`): this
/// runs for every reply, and a dictionary keyed by the command's name hashed the name each time (about 700
/// instructions of a cached load's I/O thread with the lock, against about 200).
public final class CommandStatistics: Sendable {
    /// What a reply is counted under.
    public enum Key: Sendable {
        case command(Command)
        /// A body that is not a readable request.
        case unreadable
        /// A command name the table does not have: counted together, so that an app cannot grow the table.
        case unknown

        /// The name `stats` shows.
        var name: String {
            switch self {
            case .command(let command): command.wireName
            case .unreadable: "(unreadable)"
            case .unknown: "(unknown)"
            }
        }

        /// The entry's place: the commands in the table's order, then the two others.
        var slot: Int {
            switch self {
            case .command(let command): command.ordinal
            case .unreadable: CommandStatistics.commandCount
            case .unknown: CommandStatistics.commandCount + 1
            }
        }
    }

    private struct Entry: Sendable {
        let key: Key
        var latency = LatencyRing()
        var errors: [String: Int] = [:]
    }

    private static let commandCount = Command.allCases.count

    /// Every key's entry, in slot order; one that has counted no reply (since the start or `reset`) is not shown.
    /// Made whole up front (an empty ring holds no samples) so that a reply's record is one entry updated in place:
    /// an optional entry made on first use cost every record a check and two unwraps.
    private static var emptyEntries: [Entry] {
        Command.allCases.map { Entry(key: .command($0)) } + [Entry(key: .unreadable), Entry(key: .unknown)]
    }

    private let entries = Mutex(CommandStatistics.emptyEntries)
    /// Plain loads answered in the I/O thread's current batch, recorded at its end (`recordPlainLoads`).
    private let plainLoads = Atomic<Int>(0)

    public init() {}

    /// Records one reply; `errorCode` is nil for a success.
    /// `started`: when the request was received.
    public func record(_ key: Key, since started: MonotonicInstant, errorCode: String?) {
        let milliseconds = Double(MonotonicInstant.now.nanoseconds &- started.nanoseconds) / 1e6
        let slot = key.slot
        entries.withLock { entries in
            entries[slot].latency.record(milliseconds: milliseconds)
            if let errorCode { entries[slot].errors[errorCode, default: 0] += 1 }
        }
    }

    /// Counts a plain load answered at once (`FastRequest.readPlainLoad`), to be recorded with the rest of its batch
    /// by `recordPlainLoads`: one clock reading and one lock for the batch. Each load's own record was about 3% of
    /// the I/O thread's cycles in a flood (`perf record`: the clock's vDSO call and the lock).
    public func countPlainLoad() {
        plainLoads.add(1, ordering: .relaxed)
    }

    /// Records the plain loads counted since the last call, as replies to requests received at `started`: each
    /// with the batch's time so far, which is when its reply leaves (the replies go once the batch is done).
    public func recordPlainLoads(since started: MonotonicInstant) {
        let count = plainLoads.exchange(0, ordering: .relaxed)
        guard count > 0 else { return }
        let milliseconds = Double(MonotonicInstant.now.nanoseconds &- started.nanoseconds) / 1e6
        let slot = Key.command(.loadRequests).slot
        entries.withLock { entries in
            for _ in 0..<count { entries[slot].latency.record(milliseconds: milliseconds) }
        }
    }

    public func reset() {
        entries.withLock { $0 = Self.emptyEntries }
    }

    /// `{"ping": {"count": …, "p50Ms": …, "errors": {"invalid_argument": 1}}, …}` sorted by command.
    public var json: JSONValue {
        let snapshot = entries.withLock { $0 }.filter { $0.latency.count > 0 }
        return .object(
            JSONObject(
                snapshot.map { (name: $0.key.name, entry: $0) }.sorted { $0.name < $1.name }.map { name, entry in
                    var object = entry.latency.json.objectValue ?? JSONObject()
                    object["errors"] = .object(
                        JSONObject(
                            entry.errors.sorted { $0.key < $1.key }.map {
                                (key: $0.key, value: .integer(Int64($0.value)))
                            }
                        )
                    )
                    return (key: name, value: .object(object))
                }
            )
        )
    }
}
