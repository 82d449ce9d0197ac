import PreflightProtocol

/// How the clock enters the decisions of one mbox: the instants at which one of its rules' conditions on
/// `current_timestamp` can change its answer, whether a rule reads `current_time` or `current_day`, and
/// whether a rule reads the time in a way these cannot bound.
///
/// Everything else a decision reads (the request, the visitor's allocation, geo) is fixed for a given
/// request and visitor, so the same request decided again within the span `stableSpan` gives is decided the
/// same way: a caller may keep the answer for that long.
struct TimeDependence: Sendable, Equatable {
    /// Sorted, without repeats.
    var boundaries: [Int64] = []
    var byMinute = false
    var unbounded = false

    static let independent = TimeDependence()

    init() {}

    /// What `rules`' conditions need of the clock.
    init(rules: [Rule]) {
        var boundaries = Set<Int64>()
        for rule in rules {
            collect(rule.condition, into: &boundaries)
        }
        self.boundaries = boundaries.sorted()
    }

    private mutating func collect(_ logic: JsonLogic, into boundaries: inout Set<Int64>) {
        switch logic {
        case .literal, .unrecognized:
            return
        case .array(let items):
            for item in items { collect(item, into: &boundaries) }
        case .variable(let path, let fallback):
            note(path)
            if let fallback { collect(fallback, into: &boundaries) }
        case .computedVariable:
            // A path computed from the data may name the time.
            unbounded = true
        case .operation(let op, let arguments):
            switch op {
            case .filter, .map, .reduce, .all, .none, .some:
                // Past the first argument, `var` reads the array's elements, never the context.
                if let source = arguments.first { collect(source, into: &boundaries) }
            case .equals, .strictEquals, .notEquals, .strictNotEquals, .greater, .greaterOrEqual, .less,
                .lessOrEqual:
                compare(arguments, into: &boundaries)
            default:
                for argument in arguments { collect(argument, into: &boundaries) }
            }
        }
    }

    /// A comparison of `current_timestamp` with number literals changes its answer only where the time
    /// reaches a literal or passes it: at `c` and at `c + 1` for each literal `c`. Compared with anything
    /// else, the time is unbounded.
    private mutating func compare(_ arguments: [JsonLogic], into boundaries: inout Set<Int64>) {
        let readsTimestamp = arguments.contains { argument in
            if case .variable(let path, _) = argument, path.isTimestamp { return true }
            return false
        }
        guard readsTimestamp else {
            for argument in arguments { collect(argument, into: &boundaries) }
            return
        }
        for argument in arguments {
            switch argument {
            case .variable(let path, let fallback) where path.isTimestamp:
                if let fallback { collect(fallback, into: &boundaries) }
            case .literal(.integer(let value)):
                boundaries.insert(value)
                if value < .max { boundaries.insert(value + 1) }
            case .literal(.number(let value)) where value.isFinite && abs(value) < 9e18:
                let floor = Int64(value.rounded(.down))
                boundaries.insert(floor)
                boundaries.insert(floor + 1)
            default:
                unbounded = true
            }
        }
    }

    private mutating func note(_ path: VariablePath) {
        guard let segments = path.segments else {
            unbounded = true  // the whole context, time included
            return
        }
        switch path.contextKey {
        case .currentTimestamp where segments.count == 1: unbounded = true  // outside a comparison
        case .currentTime, .currentDay: byMinute = true
        default: break
        }
    }

    /// The instants around `nowMs` within which these rules decide as they do at `nowMs`: empty when
    /// they cannot be bounded.
    func stableSpan(at nowMs: Int64) -> Range<Int64> {
        guard !unbounded else { return nowMs..<nowMs }
        var lower = Int64.min
        var upper = Int64.max
        // The first boundary after now, and the last at or before it.
        var low = 0
        var high = boundaries.count
        while low < high {
            let middle = (low + high) / 2
            if boundaries[middle] <= nowMs { low = middle + 1 } else { high = middle }
        }
        if low > 0 { lower = boundaries[low - 1] }
        if low < boundaries.count { upper = boundaries[low] }
        if byMinute {
            let minute: Int64 = 60_000
            let start = nowMs >= 0 ? nowMs / minute * minute : (nowMs - minute + 1) / minute * minute
            lower = max(lower, start)
            upper = min(upper, start + minute)
        }
        return lower..<upper
    }
}

extension VariablePath {
    /// `current_timestamp` itself.
    fileprivate var isTimestamp: Bool {
        contextKey == .currentTimestamp && segments?.count == 1
    }
}

extension DecisioningEngine {
    /// The span of time around `nowMs` within which a request for mbox `name` (the same request, for the
    /// same visitor, geo and artifact) is decided the same way: rules read the time only as their
    /// conditions say, and everything else a decision reads is in the request. Empty when the rules read
    /// the time in a way that cannot be bounded, and for the global mbox (page load rules).
    public func stableSpan(mbox name: String, nowMs: Int64) -> Range<Int64> {
        guard name != artifact.globalMbox else { return nowMs..<nowMs }
        return (artifact.mboxTimeDependence[name] ?? .independent).stableSpan(at: nowMs)
    }
}
