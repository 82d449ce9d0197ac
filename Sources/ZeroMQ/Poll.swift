import CZeroMQ

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
    let clock = ContinuousClock()
    let deadline = timeout.map { clock.now.advanced(by: max($0, .zero)) }
    var count: CInt = 0
    repeat {
        count = try valueOrError(retryOnInterrupt: true) {
            // Computed afresh on each EINTR retry, so the total wait stays within `timeout`.
            let milliseconds = deadline.map { pollMilliseconds(until: $0, now: clock.now) } ?? -1
            return zmq_poll(pollItems.baseAddress, CInt(pollItems.count), milliseconds)
        }
        // zmq_poll can return up to a millisecond early (it measures in truncated milliseconds), and a very long
        // timeout is capped per call: poll again until the deadline has really passed.
    } while count == 0 && deadline.map { clock.now < $0 } ?? false
    return Int(count)
}

/// The time from `now` to `deadline` in whole milliseconds, rounded up so that a sub-millisecond remainder still
/// waits instead of spinning, and capped at `Int32.max` because zmq_poll hands it on to poll(2) as a C `int`.
func pollMilliseconds(until deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Int {
    let remaining = now.duration(to: deadline)
    guard remaining > .zero else {
        return 0
    }
    let (seconds, attoseconds) = remaining.components
    let limit = Int(Int32.max)
    guard seconds < Int64(limit / 1000) else {
        return limit
    }
    let attosecondsPerMillisecond: Int64 = 1_000_000_000_000_000
    let fraction = (attoseconds + attosecondsPerMillisecond - 1) / attosecondsPerMillisecond
    return Int(seconds * 1000 + fraction)
}

/// The version of the libzmq library loaded at run time, e.g. `(4, 3, 4)`.
public func zeroMQVersion() -> (major: Int, minor: Int, patch: Int) {
    var major: CInt = 0
    var minor: CInt = 0
    var patch: CInt = 0
    zmq_version(&major, &minor, &patch)
    return (Int(major), Int(minor), Int(patch))
}
