import CZeroMQ
import PreflightCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits until one of a fixed set of sockets may have a message to receive, or one of a fixed set of plain file
/// descriptors is readable: `poll(_:timeout:)` for a loop that waits on the same sockets on every turn.
///
/// `zmq_poll` reads each socket's `ZMQ_FD` and `ZMQ_EVENTS` on every call, and `ZMQ_EVENTS` twice when it has
/// to wait: for the agent's two sockets, about 3,800 instructions per wake-up under callgrind, and a read of
/// `ZMQ_EVENTS` alone costs about 775. This reads each socket's `ZMQ_FD` once, sleeps in one `poll(2)` on those
/// descriptors and the plain ones, and never reads `ZMQ_EVENTS`: a socket is reported when it *may* have a
/// message, and the caller finds out by receiving, which it does anyway.
///
/// The contract is the edge-triggered one of libzmq's `ZMQ_FD` (zmq_getsockopt(3)). The descriptor signals
/// that commands reached the socket, and any operation on the socket (a send, a receive) may take those
/// commands in without the descriptor staying readable: a message can be waiting behind a silent descriptor.
/// So:
/// - a reported socket is received from with `dontWait` until `.wouldBlock`, and then `drained(_:)` is called;
///   a caller that stops earlier (a bounded batch) just does not call it, and the next wait reports the socket
///   again at once;
/// - after any other operation on a drained socket (a send), `used(_:)` is called: the next wait reports it at
///   once, and receiving until `.wouldBlock` settles it again;
/// - a drained socket that nothing has used since signals its descriptor before it has a message again: only
///   then is it reported.
///
/// Holds strong references to its sockets; like them, not `Sendable`: one thread waits.
public struct MessageWaiter {
    /// Which sockets or which plain descriptors are ready: bit `i` for index `i`.
    public struct Ready: Sendable, Equatable {
        public var sockets: UInt32
        public var fileDescriptors: UInt32

        /// Nothing ready: what a wait returns when its timeout passed.
        public static let nothing = Ready(sockets: 0, fileDescriptors: 0)

        public init(sockets: UInt32, fileDescriptors: UInt32) {
            self.sockets = sockets
            self.fileDescriptors = fileDescriptors
        }

        // Inlinable: the loop asks several times a turn, and a call into this module cost about 20 each.
        @inlinable public func socket(_ index: Int) -> Bool { sockets & (1 << UInt32(index)) != 0 }
        @inlinable public func fileDescriptor(_ index: Int) -> Bool { fileDescriptors & (1 << UInt32(index)) != 0 }
    }

    /// The sockets' `ZMQ_FD`s first, then the plain descriptors, in the order given.
    private var descriptors: [pollfd]
    private let socketCount: Int
    /// Bit `i`: socket `i` may have a message (not drained since its descriptor signalled or it was used).
    @usableFromInline var unsettled: UInt32
    /// Whether the last `wait` slept in poll(2), as opposed to returning at once for sockets not drained: the
    /// sockets it reported then had their descriptors signal since they were drained, so what they hold is new.
    public private(set) var slept = false
    /// The last timeout asked for, in milliseconds for poll(2): the loop asks for the same one on every turn.
    private var lastTimeout: (duration: Duration, milliseconds: Int)?

    /// - Parameters:
    ///   - sockets: Sockets to receive from (at most 32), in the order `Ready.socket(_:)` numbers them.
    ///   - fileDescriptors: Plain descriptors to watch for reading (at most 32), e.g. an eventfd.
    /// - Throws: `.notSocket` if a socket is closed; `.invalidArgument` for more than 32 of either.
    public init(sockets: [ZeroMQSocket], fileDescriptors: [CInt]) throws(ZeroMQError) {
        guard sockets.count <= 32, fileDescriptors.count <= 32 else { throw .invalidArgument }
        var descriptors: [pollfd] = []
        for socket in sockets {
            descriptors.append(pollfd(fd: try socket.fileDescriptor(), events: CShort(POLLIN), revents: 0))
        }
        for descriptor in fileDescriptors {
            descriptors.append(pollfd(fd: descriptor, events: CShort(POLLIN), revents: 0))
        }
        self.descriptors = descriptors
        self.socketCount = sockets.count
        // Nothing is known of a socket yet: each is reported until it is drained.
        self.unsettled = sockets.isEmpty ? 0 : UInt32.max >> UInt32(32 - sockets.count)
    }

    /// Says that socket `index` was received from until `.wouldBlock`, and nothing else was done with it since.
    @inlinable
    public mutating func drained(_ index: Int) {
        unsettled &= ~(1 << UInt32(index))
    }

    /// Says that socket `index` was sent on (or otherwise used) since it was drained: its descriptor may stay
    /// silent about a message already waiting, so the next wait reports it.
    @inlinable
    public mutating func used(_ index: Int) {
        unsettled |= 1 << UInt32(index)
    }

    /// Returns the sockets that may have a message, at once when some are not drained; otherwise sleeps until a
    /// socket's descriptor signals or a plain descriptor is readable (or in error), or the timeout has passed
    /// (nothing ready). A reported socket can turn out to have nothing: its descriptor also signals commands
    /// that bring no message (a peer connecting).
    ///
    /// Plain descriptors are reported when the call sleeps, so a loop that keeps finding messages sees them
    /// once it has caught up; the agent's loop does its other work on every turn.
    ///
    /// - Parameter timeout: nil waits forever; `.zero` checks without sleeping. Millisecond resolution.
    /// - Throws: A signal (`EINTR`) does not end the wait: it resumes with the time remaining. Other `poll(2)`
    ///   errors are thrown with their errno.
    public mutating func wait(timeout: Duration?) throws(ZeroMQError) -> Ready {
        if unsettled != 0 {
            slept = false
            return Ready(sockets: unsettled, fileDescriptors: 0)
        }
        slept = true
        let started = MonotonicInstant.now
        let milliseconds = timeout.map { cachedMilliseconds($0, from: started) }
        let count = try pollRetrying(timeout: timeout, started: started, milliseconds: milliseconds) { milliseconds in
            descriptors.withUnsafeMutableBufferPointer { buffer in
                for index in buffer.indices { buffer[index].revents = 0 }
                let count = poll(buffer.baseAddress, nfds_t(buffer.count), milliseconds)
                return (count, count < 0 ? errno : 0)  // errno read straight after the call
            }
        }
        guard count > 0 else { return .nothing }
        var ready = Ready.nothing
        for index in descriptors.indices where descriptors[index].revents != 0 {
            if index < socketCount {
                ready.sockets |= 1 << UInt32(index)
            } else {
                ready.fileDescriptors |= 1 << UInt32(index - socketCount)
            }
        }
        unsettled |= ready.sockets
        return ready
    }

    /// `timeout` for poll(2), converted once for the timeout the loop asks for on every turn (the conversion
    /// cost about 250 instructions).
    private mutating func cachedMilliseconds(_ timeout: Duration, from now: MonotonicInstant) -> Int {
        if let lastTimeout, lastTimeout.duration == timeout { return lastTimeout.milliseconds }
        let milliseconds = pollMilliseconds(until: now.advanced(by: max(timeout, .zero)), now: now)
        lastTimeout = (timeout, milliseconds)
        return milliseconds
    }
}

@available(*, unavailable)
extension MessageWaiter: Sendable {}
