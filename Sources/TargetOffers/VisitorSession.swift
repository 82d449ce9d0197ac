import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The Target visitor as the SDKs keep it: a session id renewed after inactivity, the `tntId` and
/// `edgeHost` Target hands out, and the `thirdPartyId` an app sets. The ids are kept in the state
/// directory (`target-visitor.json`) so the box stays the same visitor across restarts.
public final class VisitorSession: Sendable {
    private struct State: Sendable {
        var sessionId: String
        var lastUsed: MonotonicInstant?
        var sessionStarted: MonotonicInstant
        var tntId: String?
        var edgeHost: String?
        var thirdPartyId: String?
        var marketingCloudVisitorId: String?
        var customerIds: [CustomerId] = []
        /// Counts resets: an answer to a call made before a reset must not give the new visitor the old
        /// visitor's tntId.
        var generation = 0

        /// A new session id (and no edge host) when the last request is older than `limit`.
        mutating func renewIfIdle(now: MonotonicInstant, limit: Duration) {
            guard let last = lastUsed, now - last > limit else { return }
            sessionId = RandomUUID.make()
            edgeHost = nil
            sessionStarted = now
            lastUsed = nil
        }

        func snapshot(now: MonotonicInstant) -> Snapshot {
            Snapshot(
                sessionId: sessionId,
                tntId: tntId,
                edgeHost: edgeHost,
                thirdPartyId: thirdPartyId,
                marketingCloudVisitorId: marketingCloudVisitorId,
                customerIds: customerIds,
                sessionAge: now - sessionStarted,
                generation: generation
            )
        }

        /// What `target-visitor.json` keeps.
        var stored: JSONObject {
            var object = JSONObject()
            if let tntId { object["tntId"] = .string(tntId) }
            if let thirdPartyId { object["thirdPartyId"] = .string(thirdPartyId) }
            if let marketingCloudVisitorId { object["marketingCloudVisitorId"] = .string(marketingCloudVisitorId) }
            if !customerIds.isEmpty { object["customerIds"] = .array(customerIds.map(\.json)) }
            return object
        }
    }

    private let state: Mutex<State>
    /// Moves after every change of the ids a decision's allocation reads (tntId, thirdPartyId, Experience
    /// Cloud and customer ids), after the change: offers decided on the box for the old ids are not reused.
    private let identityChanges = Atomic<Int>(0)
    private let timeout: Mutex<Duration>
    private let clock: any AgentClock
    private let file: StateFile?
    private let saving = Mutex(())

    /// What the next request should carry.
    public struct Snapshot: Sendable, Equatable {
        public var sessionId: String
        public var tntId: String?
        public var edgeHost: String?
        public var thirdPartyId: String?
        public var marketingCloudVisitorId: String?
        public var customerIds: [CustomerId] = []
        public var sessionAge: Duration
        /// Which visitor this is (see `reset`).
        public var generation = 0
    }

    public init(timeout: Duration, clock: any AgentClock, stateFile: StateFile?) {
        self.clock = clock
        self.file = stateFile
        self.timeout = Mutex(timeout)
        let stored = stateFile?.read()
        state = Mutex(
            State(
                sessionId: RandomUUID.make(),
                sessionStarted: clock.now(),
                tntId: stored?["tntId"]?.stringValue,
                thirdPartyId: stored?["thirdPartyId"]?.stringValue,
                marketingCloudVisitorId: stored?["marketingCloudVisitorId"]?.stringValue,
                customerIds: (stored?["customerIds"]?.arrayValue ?? []).compactMap(CustomerId.init(json:))
            )
        )
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
            state.renewIfIdle(now: now, limit: limit)
            state.lastUsed = now
            return state.snapshot(now: now)
        }
    }

    /// The session id the next request will carry: a new one when the session timed out (without
    /// counting as a use of it), as AEP's `getSessionId` does.
    public var sessionId: String {
        let now = clock.now()
        let limit = timeout.withLock { $0 }
        return state.withLock { state in
            state.renewIfIdle(now: now, limit: limit)
            return state.sessionId
        }
    }

    /// Where the ids stand: a decision made after reading it holds the ids as of then or later.
    public var identityVersion: Int {
        identityChanges.load(ordering: .acquiring)
    }

    private func identityChanged() {
        identityChanges.add(1, ordering: .releasing)
    }

    /// The identity without touching the session (for status).
    public var current: Snapshot {
        let now = clock.now()
        return state.withLock { $0.snapshot(now: now) }
    }

    /// Forgets the edge host, keeping the session and the tntId: the next request goes to the configured
    /// server, whose answer names the edge host again.
    public func forgetEdgeHost() {
        state.withLock { $0.edgeHost = nil }
    }

    /// Takes `tntId` and `edgeHost` from a response; a new tntId is written to the state directory. An
    /// `edgeHost` that is not a plain host name (a scheme, port, path or user part; anything a URL's host
    /// cannot be) is not used; the return value is that refused value, for the caller's log line.
    /// An answer to a call made for an earlier visitor (`generation`, before a `reset`) teaches nothing.
    @discardableResult
    public func learn(tntId: String?, edgeHost: String?, generation: Int? = nil) -> String? {
        var refused: String?
        let changedTntId = state.withLock { state -> String? in
            if let generation, generation != state.generation { return nil }
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
        if changedTntId != nil {
            identityChanged()
            save()
        }
        return refused
    }

    /// Takes the tntId on-device decisioning gave a visitor with none (`generation`'s, still without one).
    /// Returns the identity version a decision made with it holds under: nil when it was not taken, or when
    /// another change of the ids came after `version` was read (a decision made then may be stale).
    public func adopt(tntId: String, generation: Int, since version: Int?) -> Int? {
        let adopted = state.withLock { state -> Bool in
            guard generation == state.generation, state.tntId == nil, !tntId.isEmpty else { return false }
            state.tntId = tntId
            return true
        }
        guard adopted else { return nil }
        let moved = identityChanges.add(1, ordering: .acquiringAndReleasing)
        save()
        return moved.oldValue == version ? moved.newValue : nil
    }

    // MARK: Set by apps (AEP's setThirdPartyId, setTntId, setSessionId, resetExperience)

    /// Sets (nil: clears) the third-party id sent as `id.thirdPartyId`, and keeps it.
    public func setThirdPartyId(_ thirdPartyId: String?, saving: Bool = true) {
        state.withLock { $0.thirdPartyId = thirdPartyId }
        identityChanged()
        if saving { save() }
    }

    /// Sets (nil: clears) the tntId, and keeps it. The edge host is forgotten: the next answer names the
    /// one for this visitor. (AEP derives it from the tntId's location hint, `….35_0`; the agent does not,
    /// because with `target.serverURL` set that host would replace the configured one.)
    public func setTntId(_ tntId: String?, saving: Bool = true) {
        state.withLock { state in
            state.tntId = tntId
            state.edgeHost = nil
        }
        identityChanged()
        if saving { save() }
    }

    /// Sets (nil: clears) the Experience Cloud visitor id; clearing it clears the customer ids too, which
    /// Target takes only along with it.
    public func setMarketingCloudVisitorId(_ id: String?, saving: Bool = true) {
        state.withLock { state in
            state.marketingCloudVisitorId = id
            if id == nil { state.customerIds = [] }
        }
        identityChanged()
        if saving { save() }
    }

    /// Replaces the customer ids; false (nothing changed) without a marketingCloudVisitorId, as Target
    /// takes customer ids only along with one.
    public func setCustomerIds(_ ids: [CustomerId], saving: Bool = true) -> Bool {
        let done = state.withLock { state in
            guard state.marketingCloudVisitorId != nil || ids.isEmpty else { return false }
            state.customerIds = ids
            return true
        }
        if done { identityChanged() }
        if done && saving { save() }
        return done
    }

    /// Uses `sessionId` from now on, as a session that began now.
    public func setSessionId(_ sessionId: String) {
        let now = clock.now()
        state.withLock { state in
            state.sessionId = sessionId
            state.sessionStarted = now
            state.lastUsed = now
        }
    }

    /// A new visitor: tntId and thirdPartyId cleared (and forgotten on disk), a new session, no edge host.
    public func reset() {
        let now = clock.now()
        state.withLock { state in
            state = State(sessionId: RandomUUID.make(), sessionStarted: now, generation: state.generation + 1)
        }
        identityChanged()
        save()
    }

    /// Writes the ids (a setter told `saving: false` leaves this to its caller, to do off the I/O thread).
    /// The snapshot is taken under the save lock, so the last write holds the latest ids.
    public func save() {
        saving.withLock { _ in file?.write(state.withLock { $0.stored }) }
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
