import PreflightCore

/// Bounds on work waiting on the network, so a flood cannot grow memory or tasks without bound, and
/// one app cannot take every place.
public struct AdmissionLimits: Sendable, Equatable {
    public var maxInFlight: Int
    public var maxInFlightPerPeer: Int

    public init(maxInFlight: Int = 1024, maxInFlightPerPeer: Int = 128) {
        self.maxInFlight = maxInFlight
        self.maxInFlightPerPeer = maxInFlightPerPeer
    }
}

/// The IPC server's phase and the places it gives to work waiting on the network, as a value: no
/// locks, no sockets, no clock of its own. `IPCServer` keeps one behind its mutex and does what its
/// answers say; tests drive it directly.
///
/// Phases: `idle` → `running` (every endpoint bound) → `draining` (stop asked: new requests get
/// `shutting_down`, in-flight work may still reply) → `stopped` (sockets closed).
public struct IPCAdmission: Sendable {
    public enum Phase: Sendable, Equatable {
        case idle
        case running
        /// New requests get `shutting_down`; the loop ends once in-flight work has replied or at the deadline.
        case draining(deadline: MonotonicInstant)
        case stopped
    }

    /// What `stop` must do with its caller.
    public enum StopAction: Sendable, Equatable {
        /// Nothing runs (never started, or already stopped): return at once.
        case returnNow
        /// Wait until the I/O thread has finished draining and closed the sockets.
        case waitForTheLoop
    }

    public private(set) var phase: Phase = .idle
    public var limits: AdmissionLimits
    /// Admitted work that has not replied yet.
    public private(set) var inFlight = 0
    /// Work refused because a limit was reached.
    public private(set) var refusedOverloaded = 0
    private var inFlightByPeer: [[UInt8]: Int] = [:]

    public init(limits: AdmissionLimits = AdmissionLimits()) {
        self.limits = limits
    }

    /// Every endpoint is bound.
    public mutating func started() {
        if phase == .idle { phase = .running }
    }

    /// A place for work from `peer`, unless the agent or that peer already has as much waiting as the
    /// limits allow (the caller then answers `overloaded`).
    public mutating func admit(peer: [UInt8]) -> Bool {
        let peerCount = inFlightByPeer[peer, default: 0]
        guard inFlight < limits.maxInFlight, peerCount < limits.maxInFlightPerPeer else {
            refusedOverloaded += 1
            return false
        }
        inFlight += 1
        inFlightByPeer[peer] = peerCount + 1
        return true
    }

    /// Admitted work from `peer` has replied.
    public mutating func release(peer: [UInt8]) {
        inFlight = max(0, inFlight - 1)
        if let count = inFlightByPeer[peer] {
            inFlightByPeer[peer] = count > 1 ? count - 1 : nil
        }
    }

    /// A stop was asked for at `now`: a running server drains until `grace` has passed.
    public mutating func stop(now: MonotonicInstant, grace: Duration) -> StopAction {
        switch phase {
        case .idle, .stopped:
            return .returnNow
        case .running:
            phase = .draining(deadline: now + grace)
            return .waitForTheLoop
        case .draining:
            return .waitForTheLoop
        }
    }

    /// Whether a request that arrives now is refused with `shutting_down`.
    public var isDraining: Bool {
        if case .draining = phase { return true }
        return false
    }

    /// Whether the I/O loop may end now: draining, and every admitted work has replied or the grace is over.
    public func drainIsOver(now: MonotonicInstant) -> Bool {
        guard case .draining(let deadline) = phase else { return false }
        return inFlight == 0 || now >= deadline
    }

    /// The sockets are closed (or could not be bound).
    public mutating func finished() {
        phase = .stopped
    }
}
