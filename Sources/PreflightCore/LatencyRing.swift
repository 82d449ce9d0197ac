/// The most recent latency samples of one kind of work, in a fixed-size ring so memory stays bounded on
/// a box that runs for months; percentiles are computed on demand from the samples held.
public struct LatencyRing: Sendable, Equatable {
    public let capacity: Int
    private var samples: [Double] = []
    private var next = 0
    /// Every sample ever recorded, including those the ring has since dropped.
    public private(set) var count = 0

    public init(capacity: Int = 2048) {
        precondition(capacity > 0, "a latency ring holds at least one sample")
        self.capacity = capacity
    }

    public mutating func record(milliseconds: Double) {
        count += 1
        if samples.count < capacity {
            samples.append(milliseconds)
        } else {
            samples[next] = milliseconds
            next = next + 1 == capacity ? 0 : next + 1
        }
    }

    /// The samples held, oldest first.
    public var recent: [Double] {
        Array(samples[next...] + samples[..<next])
    }

    /// Equal when they hold the same samples in the same order and have counted as many.
    public static func == (lhs: LatencyRing, rhs: LatencyRing) -> Bool {
        lhs.capacity == rhs.capacity && lhs.count == rhs.count && lhs.recent == rhs.recent
    }

    /// Nearest-rank percentiles (0...100) of the samples held, or nil when there are none.
    public func percentiles(_ ranks: [Double]) -> [Double]? {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        return ranks.map { rank in
            let index = Int((rank / 100 * Double(sorted.count)).rounded(.up)) - 1
            return sorted[min(max(index, 0), sorted.count - 1)]
        }
    }
}
