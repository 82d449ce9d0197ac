import CZeroMQ
import Synchronization

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
/// arena's lock shared with libzmq's thread in a flood). A frame lent from here points into these bytes, and the
/// bytes are held until libzmq has let go of every frame lent from them (`zmq_msg_init_data`, whose free function
/// returns the frame, on whichever thread libzmq calls it from).
///
/// Frames are lent a batch at a time (`lend(frames:)`): one reference for all of them, taken before the first is
/// sent and released by whichever return brings the count of frames out to zero. A reference per frame cost the
/// sending thread an atomic increment on the line libzmq's thread was decrementing at the same time: in a flood
/// `swift_retain` there was 4.6% of the I/O thread's cycles (`perf record`), though a few instructions each.
///
/// The owner writes into `bytes` only while `isKnownUniquelyReferenced` says no frame holds it, the way a
/// copy-on-write buffer is written in place, and `hasFramesOut` (an acquiring read) says none is out: libzmq's
/// thread's last reads of the bytes then happen before the owner's next writes.
///
/// `@unchecked Sendable`: shared with libzmq's thread only through the lent frames, which it reads through and
/// returns (an atomic count); written by its owner only while it holds the one reference.
public final class LentBytes: @unchecked Sendable {
    public let bytes: UnsafeMutableRawBufferPointer
    /// Frames lent and not yet returned.
    private let framesOut = Atomic<Int>(0)

    public init(capacity: Int) {
        bytes = .allocate(byteCount: max(1, capacity), alignment: 16)
    }

    deinit {
        bytes.deallocate()
    }

    public var capacity: Int { bytes.count }

    /// Lends the bytes to `frames` frames about to be sent, each by `ZeroMQSocket.sendPlain(routingID:body:lentFrom:
    /// dontWait:)` with a body `ZeroMQSocket.lendsFrame(ofCount:)` says it lends; the caller returns any it does not
    /// send that way (`returnFrame()`). The bytes are held (one reference) until every one is returned.
    public func lend(frames: Int) {
        guard frames > 0 else { return }
        _ = Unmanaged.passRetained(self)
        framesOut.add(frames, ordering: .relaxed)
    }

    /// Whether a frame lent from these bytes is still out. Read with acquiring order: once it says none, libzmq's
    /// thread's last reads of the bytes happened before whatever the owner writes into them next (the owner also
    /// checks `isKnownUniquelyReferenced`, which says as much only by the release that follows the last return).
    public var hasFramesOut: Bool { framesOut.load(ordering: .acquiring) != 0 }

    /// Returns one frame lent by `lend(frames:)`: libzmq's free function once it is done with the frame, or the
    /// sender for one it did not send. The last return releases the reference the frames held.
    public func returnFrame() {
        if framesOut.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            Unmanaged.passUnretained(self).release()
        }
    }
}

/// libzmq's free function for a frame lent from `LentBytes`: its hint is the bytes (no reference of its own; the
/// frames share one, `LentBytes.lend(frames:)`).
private let returnLentFrame: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = {
    returnLent(hint: $1)
}

private func returnLent(hint: UnsafeMutableRawPointer?) {
    guard let hint else { return }
    Unmanaged<LentBytes>.fromOpaque(hint)._withUnsafeGuaranteedRef { $0.returnFrame() }
}

extension ZeroMQSocket {
    /// The largest frame libzmq keeps inside its message itself (`ZMQ_MAX_VSM_SIZE` on 64-bit builds): one that
    /// small costs no allocation when copied, and is copied rather than lent.
    @usableFromInline static let largestCopiedFrame = 33

    /// Whether `sendPlain(routingID:body:lentFrom:dontWait:)` lends a body of `count` bytes (and so needs a frame of
    /// `LentBytes.lend(frames:)` for it) rather than copying it.
    @inlinable
    public static func lendsFrame(ofCount count: Int) -> Bool {
        count > largestCopiedFrame
    }

    /// Sends `[routing id][empty][body]` as `sendPlain(routingID:body:dontWait:)` does, with `body` (bytes inside
    /// `owner.bytes`) lent rather than copied: the frame is one `owner.lend(frames:)` lent, returned when libzmq has
    /// written it out or dropped it, or at once when it cannot be sent. A body of at most 33 bytes
    /// (`lendsFrame(ofCount:)` false) is copied, which for libzmq costs less than a lent one, and takes no frame.
    public func sendPlain(
        routingID: UnsafeRawBufferPointer,
        body: UnsafeRawBufferPointer,
        lentFrom owner: LentBytes,
        dontWait: Bool = false
    ) throws(ZeroMQError) {
        guard Self.lendsFrame(ofCount: body.count), let start = body.baseAddress else {
            try sendPlain(routingID: routingID, body: body, dontWait: dontWait)
            return
        }
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        let handle: UnsafeMutableRawPointer
        do {
            handle = try liveHandle()
            try sendPlainEnvelope(routingID, flags: flags, on: handle)
        } catch {
            owner.returnFrame()
            throw error
        }
        var message = zmq_msg_t()
        let hint = Unmanaged.passUnretained(owner).toOpaque()
        // Fails only when libzmq cannot allocate its small record of the frame; the frame is then returned here.
        let data = UnsafeMutableRawPointer(mutating: start)
        guard zmq_msg_init_data(&message, data, body.count, returnLentFrame, hint) == 0 else {
            owner.returnFrame()
            throw ZeroMQError(code: zmq_errno())
        }
        do {
            _ = try valueOrError(retryOnInterrupt: true) { zmq_msg_send(&message, handle, flags) }
        } catch {
            // Not queued: the message is still ours, and closing it returns the frame.
            zmq_msg_close(&message)
            throw error
        }
    }
}
