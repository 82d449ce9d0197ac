import PreflightCore
import StateFiles
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Target visitor as the SDKs keep it: a session id renewed after inactivity, and the `tntId` and
/// `edgeHost` Target hands out. The `tntId` is kept in the state directory so the box stays the same
/// visitor across restarts.
public final class VisitorSession: Sendable {
    private struct State: Sendable {
        var sessionId: String
        var lastUsed: ContinuousClock.Instant?
        var sessionStarted: ContinuousClock.Instant
        var tntId: String?
        var edgeHost: String?
    }

    private let state: Mutex<State>
    private let timeout: Mutex<Duration>
    private let clock: any AgentClock
    private let file: StateFile?

    /// What the next request should carry.
    public struct Snapshot: Sendable, Equatable {
        public var sessionId: String
        public var tntId: String?
        public var edgeHost: String?
        public var sessionAge: Duration
    }

    public init(timeout: Duration, clock: any AgentClock, stateFile: StateFile?) {
        self.clock = clock
        self.file = stateFile
        self.timeout = Mutex(timeout)
        let stored = stateFile?.read()
        let tntId = stored?["tntId"]?.stringValue
        state = Mutex(State(sessionId: RandomUUID.make(), sessionStarted: clock.now(), tntId: tntId))
    }

    public func setTimeout(_ duration: Duration) {
        timeout.withLock { $0 = duration }
    }

    /// The identity for a request made now: renews the session id (and forgets the edge host) when the
    /// last request is older than the session timeout.
    public func begin() -> Snapshot {
        let now = clock.now()
        let limit = timeout.withLock { $0 }
        return state.withLock { state in
            if let last = state.lastUsed, now - last > limit {
                state.sessionId = RandomUUID.make()
                state.edgeHost = nil
                state.sessionStarted = now
            }
            state.lastUsed = now
            return Snapshot(
                sessionId: state.sessionId,
                tntId: state.tntId,
                edgeHost: state.edgeHost,
                sessionAge: now - state.sessionStarted
            )
        }
    }

    /// The identity without touching the session (for status).
    public var current: Snapshot {
        let now = clock.now()
        return state.withLock {
            Snapshot(
                sessionId: $0.sessionId,
                tntId: $0.tntId,
                edgeHost: $0.edgeHost,
                sessionAge: now - $0.sessionStarted
            )
        }
    }

    /// Forgets the edge host, keeping the session and the tntId: the next request goes to the configured
    /// server, whose answer names the edge host again.
    public func forgetEdgeHost() {
        state.withLock { $0.edgeHost = nil }
    }

    /// Takes `tntId` and `edgeHost` from a response; a new tntId is written to the state directory. An
    /// `edgeHost` that is not a plain host name (a scheme, port, path or user part; anything a URL's host
    /// cannot be) is not used; the return value is that refused value, for the caller's log line.
    @discardableResult
    public func learn(tntId: String?, edgeHost: String?) -> String? {
        var refused: String?
        let changedTntId = state.withLock { state -> String? in
            if let edgeHost, !edgeHost.isEmpty {
                if Self.isPlainHostName(edgeHost) {
                    state.edgeHost = edgeHost
                } else {
                    refused = edgeHost
                }
            }
            guard let tntId, !tntId.isEmpty, tntId != state.tntId else { return nil }
            state.tntId = tntId
            return tntId
        }
        if let changedTntId {
            file?.write(["tntId": .string(changedTntId)])
        }
        return refused
    }

    /// A DNS name or an IPv4 address: dot-separated labels of letters, digits and inner hyphens, 1 to 63
    /// characters each, 253 in all.
    public static func isPlainHostName(_ host: String) -> Bool {
        let bytes = Array(host.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return false }
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count), label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-"),
                label.allSatisfy({ byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                })
            else { return false }
        }
        return true
    }
}
