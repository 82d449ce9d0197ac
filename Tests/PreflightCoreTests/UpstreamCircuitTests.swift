import PreflightCore
import Testing

/// The circuit as a pure value: when an upstream counts as down, what is let through, when it is up.
@Suite struct UpstreamCircuitTests {
    private let start = MonotonicInstant.now
    /// No jitter, so that probe times are exact.
    private func circuit() -> UpstreamCircuit {
        UpstreamCircuit(threshold: 3, probeBackoff: Backoff(base: .seconds(1), doublings: 4, cap: .seconds(10)))
    }

    @Test func threeUnansweredCallsInARowMakeItDownAndAnAnswerResetsTheCount() {
        var circuit = circuit()
        #expect(circuit.unanswered(now: start, wasProbe: false) == nil)
        #expect(circuit.unanswered(now: start, wasProbe: false) == nil)
        #expect(circuit.answered(now: start, wasProbe: false) == nil)  // a 5xx is an answer, too
        #expect(circuit.unanswered(now: start, wasProbe: false) == nil)
        #expect(circuit.unanswered(now: start, wasProbe: false) == nil)
        #expect(circuit.permit(now: start) == .call)
        #expect(circuit.unanswered(now: start, wasProbe: false) == .wentDown(failures: 3))
        #expect(circuit.isDown && circuit.downSince == start)
    }

    @Test func whileDownCallsAreRefusedAndOneProbeAtATimeGoesOnABackoff() {
        var circuit = circuit()
        for _ in 0..<3 { _ = circuit.unanswered(now: start, wasProbe: false) }
        #expect(circuit.permit(now: start) == .refuse)
        #expect(!circuit.probeDue(now: start + .milliseconds(999)))
        let first = start + .seconds(1)
        #expect(circuit.probeDue(now: first))
        #expect(circuit.permit(now: first) == .probe)
        #expect(circuit.permit(now: first) == .refuse)  // the probe is out
        #expect(!circuit.probeDue(now: first))
        #expect(circuit.unanswered(now: first, wasProbe: true) == nil)
        #expect(circuit.nextProbeAt == first + .seconds(2))
        // 1, 2, 4, 8, then every 10 s.
        var at = first + .seconds(2)
        for wait in [4, 8, 10, 10] {
            #expect(circuit.permit(now: at) == .probe)
            _ = circuit.unanswered(now: at, wasProbe: true)
            #expect(circuit.nextProbeAt == at + .seconds(wait))
            at = at + .seconds(wait)
        }
    }

    @Test func anyAnswerBringsItUpAndSaysForHowLong() {
        var circuit = circuit()
        for _ in 0..<3 { _ = circuit.unanswered(now: start, wasProbe: false) }
        let probe = start + .seconds(1)
        #expect(circuit.permit(now: probe) == .probe)
        #expect(
            circuit.answered(now: probe + .milliseconds(20), wasProbe: true) == .cameUp(downFor: .milliseconds(1020))
        )
        #expect(!circuit.isDown && circuit.nextProbeAt == nil)
        #expect(circuit.permit(now: probe) == .call)
        // Down again later starts the probes from the first step.
        for _ in 0..<3 { _ = circuit.unanswered(now: probe, wasProbe: false) }
        #expect(circuit.nextProbeAt == probe + .seconds(1))
    }

    @Test func anAbandonedProbeFreesItsSlot() {
        var circuit = circuit()
        for _ in 0..<3 { _ = circuit.unanswered(now: start, wasProbe: false) }
        let due = start + .seconds(1)
        #expect(circuit.permit(now: due) == .probe)
        circuit.abandoned(wasProbe: true)
        #expect(circuit.permit(now: due) == .probe)
    }
}
