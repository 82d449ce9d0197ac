import CZeroMQ
import PreflightCore

/// One entry for `poll(_:timeout:)`: a socket or a plain file descriptor (e.g. an eventfd or a pipe).
///
/// Holds a strong reference to its socket, and so, like the socket, is not `Sendable`.
public struct PollItem {
    /// The socket polled, or nil for a file descriptor item.
    public let socket: ZeroMQSocket?
    /// The file descriptor polled, or nil for a socket item.
    public let fileDescriptor: CInt?
    /// The events asked about.
    public let events: PollEvents
    /// The events found by the last `poll` call: a subset of `events`, plus `.error` for a file descriptor.
    public internal(set) var returnedEvents: PollEvents = []

    /// Polls a libzmq socket; `.readable` means a whole message can be received without blocking.
    public init(socket: ZeroMQSocket, events: PollEvents) {
        self.socket = socket
        self.fileDescriptor = nil
        self.events = events
    }

    /// Polls a plain file descriptor, as `poll(2)` would.
    public init(fileDescriptor: CInt, events: PollEvents) {
        self.socket = nil
        self.fileDescriptor = fileDescriptor
        self.events = events
    }
}

@available(*, unavailable)
extension PollItem: Sendable {}

/// Waits until any of `items` has one of its events (`zmq_poll`), and sets each item's `returnedEvents`.
///
/// - Parameters:
///   - items: The sockets (of any contexts) and file descriptors to watch.
///   - timeout: nil waits forever; `.zero` checks without waiting. Millisecond resolution.
/// - Returns: How many items have events; 0 only once the whole timeout has passed.
/// - Throws: `.notSocket` if a socket is closed, `.contextTerminated` if a socket's context was shut down.
///   A signal (`EINTR`) does not end the wait: it resumes with the time remaining.
public func poll(_ items: inout [PollItem], timeout: Duration?) throws(ZeroMQError) -> Int {
    // The libzmq items on the stack: this runs on every turn of the agent's I/O loop, and an array here was a
    // heap allocation and a copy per turn.
    let result: Result<Int, ZeroMQError> = withUnsafeTemporaryAllocation(
        of: zmq_pollitem_t.self,
        capacity: items.count
    ) { pollItems in
        do throws(ZeroMQError) {
            for index in items.indices {
                pollItems[index] = zmq_pollitem_t(
                    socket: try items[index].socket?.liveHandle(),
                    fd: items[index].fileDescriptor ?? -1,
                    events: items[index].events.rawValue,
                    revents: 0
                )
            }
            let count = try wait(pollItems, timeout: timeout)
            for index in items.indices {
                items[index].returnedEvents = PollEvents(rawValue: pollItems[index].revents)
            }
            return .success(count)
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}

/// `zmq_poll` until an item has events or the whole timeout has passed. The sockets in `pollItems` stay open
/// and alive during the call: the caller's `items` array, which holds them, is `inout` and cannot be released
/// or changed until `poll` returns.
private func wait(
    _ pollItems: UnsafeMutableBufferPointer<zmq_pollitem_t>,
    timeout: Duration?
) throws(ZeroMQError)
    -> Int
{
    try pollRetrying(timeout: timeout, started: .now, milliseconds: nil) { milliseconds in
        let count = zmq_poll(pollItems.baseAddress, CInt(pollItems.count), Int(milliseconds))
        return (count, count < 0 ? zmq_errno() : 0)  // errno read straight after the call
    }
}

/// Calls `poll` (a `zmq_poll` or a `poll(2)`, given its timeout in milliseconds, -1 for none) until it reports
/// something (a positive count, returned) or the whole `timeout` has passed (0). A signal (`EINTR`) does not end
/// the wait, nor does a wake-up a little early (both calls measure in truncated milliseconds, and a very long
/// timeout is capped per call): each call sleeps for what remains. Any other failure is thrown with its errno.
///
/// The one place for that rule, for `poll(_:timeout:)` and `MessageWaiter.wait`.
///
/// - Parameters:
///   - timeout: nil waits forever.
///   - started: When the wait began.
///   - first: The first call's milliseconds, when the caller has them converted already; nil: from `timeout`.
///   - poll: Makes one call; returns its result and, when negative, the errno read straight after it.
@inline(__always)
func pollRetrying(
    timeout: Duration?,
    started: MonotonicInstant,
    milliseconds first: Int?,
    _ poll: (CInt) -> (count: CInt, errno: CInt)
) throws(ZeroMQError) -> Int {
    // The end is worked out only when a call returns without anything: most return with something.
    var end: MonotonicInstant? { timeout.map { started.advanced(by: max($0, .zero)) } }
    var milliseconds = first ?? end.map { pollMilliseconds(until: $0, now: started) } ?? -1
    while true {
        let (count, code) = poll(CInt(milliseconds))
        if count > 0 { return Int(count) }
        if count < 0, code != EINTR { throw ZeroMQError(code: code) }
        guard let end else { continue }
        let now = MonotonicInstant.now
        if now >= end { return 0 }
        milliseconds = pollMilliseconds(until: end, now: now)
    }
}

/// The time from `now` to `deadline` in whole milliseconds, rounded up so that a sub-millisecond remainder still
/// waits instead of spinning, and capped at `Int32.max` because zmq_poll hands it on to poll(2) as a C `int`.
func pollMilliseconds(until deadline: MonotonicInstant, now: MonotonicInstant) -> Int {
    let (remaining, overflow) = deadline.nanoseconds.subtractingReportingOverflow(now.nanoseconds)
    guard !overflow else { return deadline > now ? Int(Int32.max) : 0 }
    guard remaining > 0 else { return 0 }
    return Int(min(remaining / 1_000_000 + (remaining % 1_000_000 == 0 ? 0 : 1), Int64(Int32.max)))
}

/// The version of the libzmq library loaded at run time, e.g. `(4, 3, 4)`.
public func zeroMQVersion() -> (major: Int, minor: Int, patch: Int) {
    var major: CInt = 0
    var minor: CInt = 0
    var patch: CInt = 0
    zmq_version(&major, &minor, &patch)
    return (Int(major), Int(minor), Int(patch))
}
