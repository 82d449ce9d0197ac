/// How long to wait before the next attempt after failures: exponential from `base`, doubling at most
/// `doublings` times, never past `cap`, optionally with jitter. Every retry site in the agent and the
/// client library takes its delays from one of these, each with its own parameters.
public struct Backoff: Sendable, Hashable {
    /// How the computed delay is spread.
    public enum Jitter: Sendable, Hashable {
        /// The delay itself.
        case none
        /// Half the delay, plus a uniformly random part of up to the other half ("equal jitter"), so that
        /// many boxes failing together do not retry together.
        case equal
    }

    public var base: Duration
    public var doublings: Int
    public var cap: Duration?
    public var jitter: Jitter

    public init(base: Duration, doublings: Int, cap: Duration? = nil, jitter: Jitter = .none) {
        self.base = base
        self.doublings = doublings
        self.cap = cap
        self.jitter = jitter
    }

    /// The delay after the `attempt`th failure (1-based: the first failure waits `base`).
    public func delay(attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(attempt: attempt, using: &generator)
    }

    /// The delay after the `attempt`th failure, drawing any jitter from `generator`.
    public func delay<Generator: RandomNumberGenerator>(attempt: Int, using generator: inout Generator) -> Duration {
        var delay = base * (1 << min(max(attempt - 1, 0), max(doublings, 0)))
        if let cap { delay = min(delay, cap) }
        switch jitter {
        case .none:
            return delay
        case .equal:
            // One draw, reduced modulo the range: the bias is below 1e-8 for any delay under a day, and a
            // test's generator decides the result exactly.
            let half = max(delay.saturatingNanoseconds / 2, 0)
            return .nanoseconds(half + Int64(generator.next() % UInt64(half + 1)))
        }
    }
}
