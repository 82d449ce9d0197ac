import Synchronization

/// A clock that moves only when a test says so. Sleepers wake when `advance(by:)` passes their time.
public final class ManualClock: AgentClock {
    private struct Sleeper: Sendable {
        var wakeAt: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State: Sendable {
        var elapsed: Duration = .zero
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        /// A step of the wall clock alone (`stepWallClock(by:)`), as NTP makes.
        var wallStepMs: Int64 = 0
    }

    private let state = Mutex(State())
    private let origin = MonotonicInstant.now
    /// Wall time at the start; by default 2025-10-09T10:13:20Z.
    public let epochOrigin: Int64

    public init(epochOrigin: Int64 = 1_760_004_800_000) {
        self.epochOrigin = epochOrigin
    }

    public func now() -> MonotonicInstant { origin + state.withLock { $0.elapsed } }

    public func epochMilliseconds() -> Int64 {
        state.withLock { epochOrigin + $0.wallStepMs + $0.elapsed.wholeMilliseconds }
    }

    /// Steps the wall clock alone, as NTP does when it sets a box's clock; monotonic time does not move.
    public func stepWallClock(byMilliseconds step: Int64) {
        state.withLock { $0.wallStepMs += step }
    }

    /// How many tasks sleep on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest time a sleeper waits for, as time from now.
    public var nextWakeUp: Duration? {
        state.withLock { state in state.sleepers.values.map(\.wakeAt).min().map { $0 - state.elapsed } }
    }

    /// Moves both clocks on by `duration` and wakes the sleepers whose time has come.
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.elapsed += duration
            let due = state.sleepers.filter { $0.value.wakeAt <= state.elapsed }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = state.withLock { state in
                    if Task.isCancelled { return true }
                    state.sleepers[id] = Sleeper(wakeAt: state.elapsed + duration, continuation: continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
