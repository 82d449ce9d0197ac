import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits until one of a fixed set of sockets has a message to receive, or one of a fixed set of plain file
/// descriptors is readable: `poll(_:timeout:)` for a loop that waits on the same sockets on every turn.
///
/// `zmq_poll` reads each socket's `ZMQ_FD` and `ZMQ_EVENTS` on every call, and `ZMQ_EVENTS` twice when it has
/// to wait: for the agent's two sockets, about 3,800 instructions per wake-up under callgrind. This reads each
/// socket's `ZMQ_FD` once, sleeps in one `poll(2)` on those descriptors and the plain ones, and reads
/// `ZMQ_EVENTS` only of a socket that may have changed: its descriptor signalled, or it was used (`used(_:)`)
/// since it last had nothing to receive.
///
/// The rule comes from libzmq's contract for `ZMQ_FD` (zmq_getsockopt(3)): the descriptor is edge-triggered.
/// It signals that commands reached the socket, and any operation on the socket (a send, a receive, reading
/// `ZMQ_EVENTS`) may take those commands in without the descriptor staying readable. A message can therefore
/// be waiting behind a silent descriptor after a send or a receive; reading `ZMQ_EVENTS` before sleeping
/// finds it. A socket whose `ZMQ_EVENTS` said "nothing", and that nothing has used since, signals its
/// descriptor before it has a message again: that one is not read.
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

        public func socket(_ index: Int) -> Bool { sockets & (1 << UInt32(index)) != 0 }
        public func fileDescriptor(_ index: Int) -> Bool { fileDescriptors & (1 << UInt32(index)) != 0 }
    }

    private let sockets: [ZeroMQSocket]
    /// The sockets' `ZMQ_FD`s first, then the plain descriptors, in the order given.
    private var descriptors: [pollfd]
    /// Per socket: `ZMQ_EVENTS` must be read before the next sleep.
    private var unsettled: [Bool]

    /// - Parameters:
    ///   - sockets: Sockets to receive from (at most 32), in the order `Ready.socket(_:)` numbers them.
    ///   - fileDescriptors: Plain descriptors to watch for reading (at most 32), e.g. an eventfd.
    /// - Throws: `.notSocket` if a socket is closed; `.invalidArgument` for more than 32 of either.
    public init(sockets: [ZeroMQSocket], fileDescriptors: [CInt]) throws(ZeroMQError) {
        guard sockets.count <= 32, fileDescriptors.count <= 32 else { throw .invalidArgument }
        self.sockets = sockets
        var descriptors: [pollfd] = []
        for socket in sockets {
            descriptors.append(pollfd(fd: try socket.fileDescriptor(), events: CShort(POLLIN), revents: 0))
        }
        for descriptor in fileDescriptors {
            descriptors.append(pollfd(fd: descriptor, events: CShort(POLLIN), revents: 0))
        }
        self.descriptors = descriptors
        // Nothing is known of a socket yet: each is read before the first sleep.
        self.unsettled = Array(repeating: true, count: sockets.count)
    }

    /// Says that socket `index` was sent on or received from: its descriptor may not signal a message that is
    /// already waiting, so the next `wait` reads its `ZMQ_EVENTS` first.
    public mutating func used(_ index: Int) {
        unsettled[index] = true
    }

    /// Returns the sockets with a message waiting, at once when there are any; otherwise sleeps until a socket
    /// has one or a plain descriptor is readable (or in error), or the timeout has passed (nothing ready).
    ///
    /// Plain descriptors are reported when the call sleeps, so a loop that keeps finding messages sees them
    /// once it has caught up; the agent's loop does its other work on every turn.
    ///
    /// - Parameter timeout: nil waits forever; `.zero` checks without sleeping. Millisecond resolution.
    /// - Throws: `.notSocket` if a socket was closed, `.contextTerminated` if its context was shut down.
    ///   A signal (`EINTR`) does not end the wait: it resumes with the time remaining.
    public mutating func wait(timeout: Duration?) throws(ZeroMQError) -> Ready {
        var ready = try settle()
        guard ready.sockets == 0 else { return ready }
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now.advanced(by: max($0, .zero)) }
        while true {
            let milliseconds = deadline.map { pollMilliseconds(until: $0, now: clock.now) } ?? -1
            let (count, code) = descriptors.withUnsafeMutableBufferPointer { buffer in
                for index in buffer.indices { buffer[index].revents = 0 }
                let count = poll(buffer.baseAddress, nfds_t(buffer.count), CInt(milliseconds))
                return (count, count < 0 ? errno : 0)  // errno read straight after the call
            }
            if count < 0 {
                guard code == EINTR else { throw ZeroMQError(code: code) }
                continue
            }
            if count > 0 {
                for index in sockets.indices where descriptors[index].revents != 0 {
                    unsettled[index] = true
                }
                for index in sockets.count..<descriptors.count where descriptors[index].revents != 0 {
                    ready.fileDescriptors |= 1 << UInt32(index - sockets.count)
                }
                // A socket's descriptor also signals commands that bring no message (a connection, a pipe's
                // end): only ZMQ_EVENTS says whether there is one.
                ready.sockets = try settle().sockets
                if ready != .nothing { return ready }
            }
            // Millisecond rounding and a command without a message both end a sleep early: sleep again until the
            // deadline has really passed.
            if let deadline, clock.now >= deadline { return ready }
        }
    }

    /// Reads `ZMQ_EVENTS` of every unsettled socket: the ones with a message, and the others settled.
    private mutating func settle() throws(ZeroMQError) -> Ready {
        var ready = Ready.nothing
        for index in sockets.indices where unsettled[index] {
            if try sockets[index].pendingEvents().contains(.readable) {
                ready.sockets |= 1 << UInt32(index)
            } else {
                unsettled[index] = false
            }
        }
        return ready
    }
}

@available(*, unavailable)
extension MessageWaiter: Sendable {}
