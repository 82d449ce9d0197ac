import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes that messages are sent from without a copy (`ZeroMQSocket.sendPlain(routingID:body:lentFrom:dontWait:)`).
///
/// `zmq_send` copies a frame of more than 33 bytes into a block it allocates, and libzmq's own I/O thread frees
/// the block once the frame is written out: every reply paid a `malloc` on the sending thread whose memory came
/// back to another thread's cache, so glibc served it by its slow path each time (about 200 instructions, and the
/// arena's lock shared with libzmq's thread in a flood). A frame lent from here points into these bytes and holds
/// a reference to them until libzmq lets it go (`zmq_msg_init_data`, whose free function releases it, on
/// whichever thread libzmq calls it from); the bytes are freed with the last reference.
///
/// The owner writes into `bytes` only while `isKnownUniquelyReferenced` says no frame holds it, the way a
/// copy-on-write buffer is written in place: the release by libzmq's thread happens before that check sees it.
///
/// `@unchecked Sendable`: shared with libzmq's thread only through references, which it reads through and
/// releases; written by its owner only while it holds the one reference.
public final class LentBytes: @unchecked Sendable {
    public let bytes: UnsafeMutableRawBufferPointer

    public init(capacity: Int) {
        bytes = .allocate(byteCount: max(1, capacity), alignment: 16)
    }

    deinit {
        bytes.deallocate()
    }

    public var capacity: Int { bytes.count }
}

/// libzmq's free function for a frame lent from `LentBytes`: its hint is the reference the frame held.
private let releaseLentBytes: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = {
    releaseLent(hint: $1)
}

private func releaseLent(hint: UnsafeMutableRawPointer?) {
    guard let hint else { return }
    Unmanaged<LentBytes>.fromOpaque(hint).release()
}

extension ZeroMQSocket {
    /// The largest frame libzmq keeps inside its message itself (`ZMQ_MAX_VSM_SIZE` on 64-bit builds): one that
    /// small costs no allocation when copied, and is copied rather than lent.
    static let largestCopiedFrame = 33

    /// Sends `[routing id][empty][body]` as `sendPlain(routingID:body:dontWait:)` does, with `body` (bytes inside
    /// `owner.bytes`) lent rather than copied: the frame holds `owner` until libzmq has written it out (or drops
    /// it). A body of at most 33 bytes is copied, which for libzmq costs less than a lent one.
    public func sendPlain(
        routingID: UnsafeRawBufferPointer,
        body: UnsafeRawBufferPointer,
        lentFrom owner: LentBytes,
        dontWait: Bool = false
    ) throws(ZeroMQError) {
        guard body.count > Self.largestCopiedFrame, let start = body.baseAddress else {
            try sendPlain(routingID: routingID, body: body, dontWait: dontWait)
            return
        }
        let handle = try liveHandle()
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        try sendPlainEnvelope(routingID, flags: flags, on: handle)
        var message = zmq_msg_t()
        let hint = Unmanaged.passRetained(owner).toOpaque()
        // Fails only when libzmq cannot allocate its small record of the frame; the frame then holds nothing.
        let data = UnsafeMutableRawPointer(mutating: start)
        guard zmq_msg_init_data(&message, data, body.count, releaseLentBytes, hint) == 0 else {
            Unmanaged<LentBytes>.fromOpaque(hint).release()
            throw ZeroMQError(code: zmq_errno())
        }
        do {
            _ = try valueOrError(retryOnInterrupt: true) { zmq_msg_send(&message, handle, flags) }
        } catch {
            // Not queued: the message is still ours, and closing it releases the hold.
            zmq_msg_close(&message)
            throw error
        }
    }
}
