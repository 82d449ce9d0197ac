import Synchronization

/// Whether an upstream service is answering at all, as a pure value: after `threshold` calls in a row
/// that got no answer (timeouts, refused or reset connections, unresolvable hosts), the upstream is
/// *down*: calls are refused at once instead of each waiting its whole timeout, and one probe at a time
/// is let through on a backoff. Any answer, whatever its status, means the upstream is reachable again:
/// it is *up*, and calls flow.
///
/// An HTTP error status is an answer: a 5xx or a 429 is the service speaking, handled by its caller.
public struct UpstreamCircuit: Sendable, Equatable {
    public enum Permission: Sendable, Equatable {
        /// Up: call.
        case call
        /// Down, and a probe is due: call, and the outcome decides.
        case probe
        /// Down: do not call; answer at once as the upstream being unreachable.
        case refuse
    }

    /// A change the caller reports (a log line, an event).
    public enum Transition: Sendable, Equatable {
        case wentDown(failures: Int)
        case cameUp(downFor: Duration)
    }

    public private(set) var consecutiveFailures = 0
    /// Since when the upstream is down; nil while up.
    public private(set) var downSince: MonotonicInstant?
    /// When the next probe may go, while down.
    public private(set) var nextProbeAt: MonotonicInstant?
    private var probeInFlight = false
    private var probes = 0
    public let threshold: Int
    public let probeBackoff: Backoff

    /// Three calls in a row without an answer; probes 1 s, 2 s, 4 s, 8 s, then every 10 s (equal jitter),
    /// so that an upstream coming back is used again within seconds.
    public init(
        threshold: Int = 3,
        probeBackoff: Backoff = Backoff(base: .seconds(1), doublings: 4, cap: .seconds(10), jitter: .equal)
    ) {
        self.threshold = threshold
        self.probeBackoff = probeBackoff
    }

    public var isDown: Bool { downSince != nil }

    /// Whether a call may go now.
    public mutating func permit(now: MonotonicInstant) -> Permission {
        guard isDown else { return .call }
        guard !probeInFlight, let nextProbeAt, now >= nextProbeAt else { return .refuse }
        probeInFlight = true
        return .probe
    }

    /// Whether a probe is due and none is out: the background prober's cue when no call comes.
    public func probeDue(now: MonotonicInstant) -> Bool {
        isDown && !probeInFlight && nextProbeAt.map { now >= $0 } == true
    }

    /// The upstream answered (any status).
    public mutating func answered(now: MonotonicInstant, wasProbe: Bool) -> Transition? {
        consecutiveFailures = 0
        if wasProbe { probeInFlight = false }
        guard let downSince else { return nil }
        self.downSince = nil
        nextProbeAt = nil
        probeInFlight = false
        probes = 0
        return .cameUp(downFor: now - downSince)
    }

    /// The call got no answer.
    public mutating func unanswered(now: MonotonicInstant, wasProbe: Bool) -> Transition? {
        consecutiveFailures += 1
        if isDown {
            if wasProbe {
                probeInFlight = false
                probes += 1
                nextProbeAt = now + probeBackoff.delay(attempt: probes + 1)
            }
            return nil
        }
        guard consecutiveFailures >= threshold else { return nil }
        downSince = now
        probes = 0
        nextProbeAt = now + probeBackoff.delay(attempt: 1)
        return .wentDown(failures: consecutiveFailures)
    }

    /// A call given up without an outcome (the agent is stopping): a probe slot it held is free again.
    public mutating func abandoned(wasProbe: Bool) {
        if wasProbe { probeInFlight = false }
    }
}

/// One upstream's circuit behind a lock, with its clock and a callback for transitions; shared by the
/// transport that calls the upstream and the loop that probes it.
public final class CircuitBreaker: Sendable {
    /// The service's name in logs, events and status (`target`, `pass`).
    public let service: String
    private let clock: any AgentClock
    private let circuit: Mutex<UpstreamCircuit>
    private let onTransition: @Sendable (UpstreamCircuit.Transition) -> Void

    public init(
        service: String,
        clock: any AgentClock,
        circuit: UpstreamCircuit = UpstreamCircuit(),
        onTransition: @escaping @Sendable (UpstreamCircuit.Transition) -> Void = { _ in }
    ) {
        self.service = service
        self.clock = clock
        self.circuit = Mutex(circuit)
        self.onTransition = onTransition
    }

    /// The circuit as it is now (for status).
    public var state: UpstreamCircuit { circuit.withLock { $0 } }

    public func permit() -> UpstreamCircuit.Permission {
        let now = clock.now()
        return circuit.withLock { $0.permit(now: now) }
    }

    public var probeDue: Bool {
        let now = clock.now()
        return circuit.withLock { $0.probeDue(now: now) }
    }

    public func answered(wasProbe: Bool) {
        let now = clock.now()
        if let transition = circuit.withLock({ $0.answered(now: now, wasProbe: wasProbe) }) { onTransition(transition) }
    }

    public func unanswered(wasProbe: Bool) {
        let now = clock.now()
        if let transition = circuit.withLock({ $0.unanswered(now: now, wasProbe: wasProbe) }) {
            onTransition(transition)
        }
    }

    public func abandoned(wasProbe: Bool) {
        circuit.withLock { $0.abandoned(wasProbe: wasProbe) }
    }
}
