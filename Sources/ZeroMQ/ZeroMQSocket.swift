import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libzmq socket.
///
/// Not thread-safe, as libzmq sockets are not, and therefore not `Sendable`: one thread at a time owns it.
/// A freshly made socket can still be handed to another thread as a `sending` value. Closes in `deinit` if not
/// closed before.
public final class ZeroMQSocket {
    /// The socket's type.
    public let type: SocketType

    // Keeps the context alive while the socket is: zmq_ctx_term would block forever on an unclosed socket.
    private let context: ZeroMQContext
    // nil once closed; every operation checks it, so use after close throws ENOTSOCK instead of crashing.
    private var handle: UnsafeMutableRawPointer?
    // Three zmq_msg_t reused by every receive, at stable addresses, so a message costs no allocation beyond its
    // payload: a routed message's routing id, delimiter and body are held in them while they are lent out.
    // Safe because the socket is used by one thread at a time and never re-entered.
    private let messages: UnsafeMutablePointer<zmq_msg_t>

    init(context: ZeroMQContext, type: SocketType) throws(ZeroMQError) {
        self.handle = try pointerOrError { zmq_socket(context.handle, type.cValue) }
        self.context = context
        self.type = type
        self.messages = .allocate(capacity: 3)
    }

    deinit {
        close()
        messages.deallocate()
    }

    /// Closes the socket now (`zmq_close`). Idempotent; `deinit` closes too.
    ///
    /// Unsent messages are still delivered in the background for the `linger` period. Every later call on the
    /// socket throws `.notSocket`.
    public func close() {
        guard let handle else {
            return
        }
        self.handle = nil
        // Fails only with ENOTSOCK, which a handle we still own cannot be.
        _ = zmq_close(handle)
    }

    /// Binds to `endpoint`, e.g. `ipc:///run/app.sock`, `tcp://127.0.0.1:*`, `inproc://name`.
    ///
    /// For an `ipc://` path, libzmq 4.3 itself deletes whatever file is at the path before binding, even a
    /// socket another process is serving. This method first checks the path: a live listener throws
    /// `.addressInUse`, and a file that is not a socket throws `.fileExists`; a stale socket file (nothing
    /// listening) is replaced. The check and the bind are not atomic, so two processes starting at the same
    /// instant can still both bind: use a lock file where that matters. libzmq does not delete the file on
    /// close or unbind (except for `ipc://*`), and it stops listening a few milliseconds after them, in the
    /// background: binding the same path again at once from this process can briefly throw `.addressInUse`.
    /// `ipc://*` creates its directory under `$TMPDIR`, or in the working directory when that is unset.
    ///
    /// - Throws: `.addressInUse`, `.fileExists`, `.invalidArgument` (malformed endpoint),
    ///   `.protocolNotSupported`, `.addressNotAvailable`, `.contextTerminated`, `.notSocket`.
    public func bind(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        if let path = ipcPath(of: endpoint) {
            switch probeIPCPath(path) {
            case .absentOrStale:
                break
            case .liveListener:
                throw .addressInUse
            case .notASocket:
                throw .fileExists
            }
        }
        _ = try valueOrError(retryOnInterrupt: false) { zmq_bind(handle, endpoint) }
    }

    /// Connects to `endpoint`. Returns at once: the connection is made (and remade) in the background, and
    /// messages queue until it is.
    ///
    /// - Throws: `.invalidArgument` (malformed endpoint), `.protocolNotSupported`, `.contextTerminated`,
    ///   `.notSocket`.
    public func connect(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        _ = try valueOrError(retryOnInterrupt: false) { zmq_connect(handle, endpoint) }
    }

    /// Stops listening on `endpoint`, which must be spelled as it was bound (or as `lastEndpoint()` reported).
    ///
    /// - Throws: `.noSuchEndpoint` if not bound there.
    public func unbind(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        _ = try valueOrError(retryOnInterrupt: false) { zmq_unbind(handle, endpoint) }
    }

    /// Disconnects from `endpoint`, dropping messages still queued for it.
    ///
    /// - Throws: `.noSuchEndpoint` if not connected there.
    public func disconnect(_ endpoint: String) throws(ZeroMQError) {
        let handle = try liveHandle()
        _ = try valueOrError(retryOnInterrupt: false) { zmq_disconnect(handle, endpoint) }
    }

    /// The endpoint last bound or connected (`ZMQ_LAST_ENDPOINT`), with wildcards resolved: after binding
    /// `tcp://127.0.0.1:*` it names the port chosen. Empty if neither has happened.
    public func lastEndpoint() throws(ZeroMQError) -> String {
        let handle = try liveHandle()
        // Unix socket paths are at most 108 bytes and TCP endpoints shorter still, so 1 KiB is always enough
        // (too small a buffer would make libzmq fail with EINVAL, not truncate).
        var buffer = [UInt8](repeating: 0, count: 1024)
        var size = buffer.count
        _ = try valueOrError(retryOnInterrupt: true) {
            buffer.withUnsafeMutableBytes { zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, $0.baseAddress, &size) }
        }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Sets one socket option. Most options affect only later `bind`/`connect` calls, so set them first.
    ///
    /// - Throws: `.invalidArgument` for a value out of range or an option this socket type does not have
    ///   (e.g. `.subscribe` on a PUB socket).
    public func setOption(_ option: SocketOption) throws(ZeroMQError) {
        let handle = try liveHandle()
        switch option {
        case .linger(let milliseconds):
            try setValue(milliseconds, for: ZMQ_LINGER, on: handle)
        case .sendHighWaterMark(let messages):
            try setValue(messages, for: ZMQ_SNDHWM, on: handle)
        case .receiveHighWaterMark(let messages):
            try setValue(messages, for: ZMQ_RCVHWM, on: handle)
        case .maxMessageSize(let bytes):
            try setValue(bytes, for: ZMQ_MAXMSGSIZE, on: handle)
        case .routerMandatory(let enabled):
            try setValue(CInt(enabled ? 1 : 0), for: ZMQ_ROUTER_MANDATORY, on: handle)
        case .sendTimeout(let milliseconds):
            try setValue(milliseconds, for: ZMQ_SNDTIMEO, on: handle)
        case .receiveTimeout(let milliseconds):
            try setValue(milliseconds, for: ZMQ_RCVTIMEO, on: handle)
        case .immediate(let enabled):
            try setValue(CInt(enabled ? 1 : 0), for: ZMQ_IMMEDIATE, on: handle)
        case .zapDomain(let domain):
            try setBytes(Array(domain.utf8), for: ZMQ_ZAP_DOMAIN, on: handle)
        case .routingID(let id):
            try setBytes(id, for: ZMQ_ROUTING_ID, on: handle)
        case .subscribe(let prefix):
            try setBytes(prefix, for: ZMQ_SUBSCRIBE, on: handle)
        case .unsubscribe(let prefix):
            try setBytes(prefix, for: ZMQ_UNSUBSCRIBE, on: handle)
        }
    }

    /// Sends `frames` as one multipart message (`ZMQ_SNDMORE` on all but the last).
    ///
    /// Blocks while the message cannot be queued (e.g. at the high-water mark), up to `sendTimeout`.
    /// With `dontWait` it throws `.wouldBlock` instead, and then nothing of the message was queued: libzmq
    /// decides on the first frame, and once that is accepted it always accepts the rest of the message.
    ///
    /// - Throws: `.wouldBlock`, `.hostUnreachable` (ROUTER with `routerMandatory`, unknown routing id),
    ///   `.invalidState` (e.g. REQ sending twice), `.invalidArgument` (no frames), `.contextTerminated`,
    ///   `.notSocket`. An error other than `.wouldBlock` after the first frame leaves part of the message
    ///   queued; such errors (`.contextTerminated`) end the socket's useful life anyway.
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws(ZeroMQError) {
        let handle = try liveHandle()
        guard let last = frames.indices.last else {
            throw .invalidArgument
        }
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        for index in frames.indices {
            try sendFrame(frames[index], flags: index == last ? flags : flags | ZMQ_SNDMORE, on: handle)
        }
    }

    /// Sends `[routing id][empty][body]` (the reply to a plain `RouterMessage`) from bytes in place: each frame is
    /// copied into libzmq's message, with no array of its own. Otherwise as `send(_:dontWait:)`.
    public func sendPlain(
        routingID: UnsafeRawBufferPointer,
        body: UnsafeRawBufferPointer,
        dontWait: Bool = false
    ) throws(ZeroMQError) {
        let handle = try liveHandle()
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        try sendPlainEnvelope(routingID, flags: flags, on: handle)
        try sendFrame(body, flags: flags, on: handle)
    }

    /// A plain reply's first two frames, `[routing id][empty]`, each with `ZMQ_SNDMORE`: its body follows.
    func sendPlainEnvelope(
        _ routingID: UnsafeRawBufferPointer,
        flags: CInt,
        on handle: UnsafeMutableRawPointer
    ) throws(ZeroMQError) {
        try sendFrame(routingID, flags: flags | ZMQ_SNDMORE, on: handle)
        try sendFrame(UnsafeRawBufferPointer(start: nil, count: 0), flags: flags | ZMQ_SNDMORE, on: handle)
    }

    /// Receives one whole multipart message: every frame, each at its full size, never truncated.
    ///
    /// Blocks until a message arrives, up to `receiveTimeout`. With `dontWait` it throws `.wouldBlock` when no
    /// message is waiting. libzmq delivers multipart messages atomically, so once the first frame is here the
    /// rest are too.
    ///
    /// - Throws: `.wouldBlock`, `.invalidState` (e.g. REP receiving twice), `.contextTerminated`, `.notSocket`.
    public func receive(dontWait: Bool = false) throws(ZeroMQError) -> [[UInt8]] {
        try receive(dontWait: dontWait, property: nil).frames
    }

    /// Receives one whole multipart message, and the value of one metadata property of its frames
    /// (`zmq_msg_gets`; the last frame that has it): `"User-Id"` as a ZAP handler set it for the connection, `"Peer-Address"`, or a
    /// property the ZAP handler attached. nil when the message carries no such property.
    public func receive(
        dontWait: Bool = false,
        property: String?
    ) throws(ZeroMQError) -> (frames: [[UInt8]], property: String?) {
        // One reader of multipart messages: a message of any socket type is some shape of `RouterMessage`.
        let received = try receiveRouted(dontWait: dontWait, property: property)
        return (received.message.frames, received.property)
    }

    /// Receives one whole message as a ROUTER socket gets it: the common `[routing id][empty][body]` as two
    /// buffers, with no array of frames to allocate and free (about 800 instructions per message on the agent's
    /// I/O thread), any other shape frame by frame. Otherwise as `receive(dontWait:property:)`, which reads
    /// through this.
    public func receiveRouted(
        dontWait: Bool = false,
        property: String? = nil
    ) throws(ZeroMQError) -> (message: RouterMessage, property: String?) {
        var plain: RouterMessage?
        let received = try receiveRouted(dontWait: dontWait, property: property) { routingID, body in
            plain = .plain(routingID: [UInt8](routingID), body: [UInt8](body))
        }
        switch received.message {
        case .lent: return (plain ?? .frames([]), received.property)
        case .other(let message): return (message, received.property)
        }
    }

    /// What `receiveRouted(dontWait:property:lending:)` received.
    ///
    /// Not generic over what the closure makes of a message: a generic result's metadata was looked up at run
    /// time on every message (about 320 instructions).
    public enum Routed {
        /// A `[routing id][empty][body]` message, lent in place to the closure.
        case lent
        /// Any other shape, frame by frame, the routing id first.
        case other(RouterMessage)
    }

    /// Receives one whole message as a ROUTER socket gets it, lending the common `[routing id][empty][body]`
    /// in place to `plain`: its buffers are libzmq's own and valid only during the call, so the message costs
    /// no copy and no allocation here (the agent's I/O thread reads each request this way). Any other shape
    /// comes back frame by frame. `property` as in `receive(dontWait:property:)`.
    public func receiveRouted(
        dontWait: Bool = false,
        property: String? = nil,
        lending plain: (_ routingID: UnsafeRawBufferPointer, _ body: UnsafeBufferPointer<UInt8>) -> Void
    ) throws(ZeroMQError) -> (message: Routed, property: String?) {
        let handle = try liveHandle()
        let flags = dontWait ? ZMQ_DONTWAIT : 0
        let routing = messages
        let delimiter = messages + 1
        let body = messages + 2
        // zmq_msg_init cannot fail; closing a message that received nothing is free.
        _ = zmq_msg_init(routing)
        _ = zmq_msg_init(delimiter)
        _ = zmq_msg_init(body)
        defer {
            _ = zmq_msg_close(routing)
            _ = zmq_msg_close(delimiter)
            _ = zmq_msg_close(body)
        }
        var value: String?
        // Every frame is asked for the property: a ROUTER makes the routing-id frame itself, without the
        // connection's metadata, and the last frame that has it wins.
        var more = try receiveFrame(into: routing, flags: flags, on: handle, property: property, value: &value)
        guard more else { return (.other(.frames([Self.bytes(of: routing)])), value) }
        more = try receiveFrame(into: delimiter, flags: flags, on: handle, property: property, value: &value)
        var frames: [[UInt8]]
        if zmq_msg_size(delimiter) == 0 && more {
            more = try receiveFrame(into: body, flags: flags, on: handle, property: property, value: &value)
            if !more {
                let routingID = UnsafeRawBufferPointer(start: zmq_msg_data(routing), count: zmq_msg_size(routing))
                let bytes = UnsafeBufferPointer(
                    start: zmq_msg_data(body)?.assumingMemoryBound(to: UInt8.self),
                    count: zmq_msg_size(body)
                )
                plain(routingID, bytes)
                return (.lent, value)
            }
            frames = [Self.bytes(of: routing), [], Self.bytes(of: body)]
        } else {
            frames = [Self.bytes(of: routing), Self.bytes(of: delimiter)]
        }
        // The rest of a message of another shape, each frame received into `body` and copied out.
        while more {
            _ = zmq_msg_close(body)
            _ = zmq_msg_init(body)
            more = try receiveFrame(into: body, flags: flags, on: handle, property: property, value: &value)
            frames.append(Self.bytes(of: body))
        }
        return (.other(.frames(frames)), value)
    }

    /// Sends a message a ROUTER socket received, or a reply in its shape. Otherwise as `send(_:dontWait:)`.
    public func send(_ message: RouterMessage, dontWait: Bool = false) throws(ZeroMQError) {
        switch message {
        case .plain(let routingID, let body):
            try routingID.withUnsafeBufferPointer { (routingID) throws(ZeroMQError) in
                try body.withUnsafeBufferPointer { (body) throws(ZeroMQError) in
                    try sendPlain(
                        routingID: UnsafeRawBufferPointer(routingID),
                        body: UnsafeRawBufferPointer(body),
                        dontWait: dontWait
                    )
                }
            }
        case .frames(let frames):
            try send(frames, dontWait: dontWait)
        }
    }

    /// The socket's notification file descriptor (`ZMQ_FD`), for integrating with another event loop.
    ///
    /// It is edge-triggered and signals only that `pendingEvents()` may have changed: after it becomes
    /// readable, check `pendingEvents()` and drain with `dontWait` until `.wouldBlock`. Never read or close it.
    public func fileDescriptor() throws(ZeroMQError) -> CInt {
        let handle = try liveHandle()
        return try intOption(ZMQ_FD, on: handle)
    }

    /// What the socket can do without blocking now (`ZMQ_EVENTS`): `.readable` and/or `.writable`.
    public func pendingEvents() throws(ZeroMQError) -> PollEvents {
        let handle = try liveHandle()
        return PollEvents(rawValue: CShort(truncatingIfNeeded: try intOption(ZMQ_EVENTS, on: handle)))
    }

    /// The libzmq socket pointer, or `.notSocket` once closed.
    func liveHandle() throws(ZeroMQError) -> UnsafeMutableRawPointer {
        guard let handle else {
            throw .notSocket
        }
        return handle
    }

    private func sendFrame(_ frame: [UInt8], flags: CInt, on handle: UnsafeMutableRawPointer) throws(ZeroMQError) {
        try frame.withUnsafeBufferPointer { (bytes) throws(ZeroMQError) in
            try sendFrame(UnsafeRawBufferPointer(bytes), flags: flags, on: handle)
        }
    }

    /// One frame, copied into a message of libzmq's (`zmq_send`: on failure nothing of it was queued).
    func sendFrame(
        _ frame: UnsafeRawBufferPointer,
        flags: CInt,
        on handle: UnsafeMutableRawPointer
    ) throws(ZeroMQError) {
        _ = try valueOrError(retryOnInterrupt: true) { zmq_send(handle, frame.baseAddress, frame.count, flags) }
    }

    /// Receives one frame into `message` (initialised, empty); returns whether more frames follow, and sets
    /// `value` when the frame carries `property`.
    private func receiveFrame(
        into message: UnsafeMutablePointer<zmq_msg_t>,
        flags: CInt,
        on handle: UnsafeMutableRawPointer,
        property: String?,
        value: inout String?
    ) throws(ZeroMQError) -> Bool {
        _ = try valueOrError(retryOnInterrupt: true) { zmq_msg_recv(message, handle, flags) }
        if let property, let text = zmq_msg_gets(message, property) {
            value = String(cString: text)
        }
        return zmq_msg_more(message) != 0
    }

    /// A received frame's bytes, copied out.
    private static func bytes(of message: UnsafeMutablePointer<zmq_msg_t>) -> [UInt8] {
        let size = zmq_msg_size(message)
        // Copied through a buffer pointer: `[UInt8](unsafeUninitializedCapacity:)` looks the array storage's
        // generic metadata up in the runtime's table on every call (about 390 of its 530 instructions with
        // the static standard library on Linux), this initializer does not (about 150 in all).
        return size > 0 ? [UInt8](UnsafeRawBufferPointer(start: zmq_msg_data(message), count: size)) : []
    }

    private func setValue<Value: FixedWidthInteger>(
        _ value: Value,
        for name: CInt,
        on handle: UnsafeMutableRawPointer
    ) throws(ZeroMQError) {
        var value = value
        _ = try valueOrError(retryOnInterrupt: false) {
            withUnsafeBytes(of: &value) { zmq_setsockopt(handle, name, $0.baseAddress, $0.count) }
        }
    }

    private func setBytes(_ bytes: [UInt8], for name: CInt, on handle: UnsafeMutableRawPointer) throws(ZeroMQError) {
        _ = try valueOrError(retryOnInterrupt: false) {
            // An empty value is passed as NULL, as libzmq's option parsers expect (some treat a non-NULL pointer
            // with length 0 as invalid); an empty array's base address may or may not be NULL.
            bytes.isEmpty
                ? zmq_setsockopt(handle, name, nil, 0)
                : bytes.withUnsafeBytes { zmq_setsockopt(handle, name, $0.baseAddress, $0.count) }
        }
    }

    private func intOption(_ name: CInt, on handle: UnsafeMutableRawPointer) throws(ZeroMQError) -> CInt {
        var value: CInt = 0
        var size = MemoryLayout<CInt>.size
        // ZMQ_EVENTS processes pending commands and can be interrupted; reading again is harmless.
        _ = try valueOrError(retryOnInterrupt: true) { zmq_getsockopt(handle, name, &value, &size) }
        return value
    }
}

/// A message as a ROUTER socket receives it, or a reply to one.
public enum RouterMessage: Sendable, Equatable {
    /// `[routing id][empty delimiter][body]`: what a REQ peer (or a DEALER that follows the REQ envelope) sends,
    /// and the reply it expects.
    case plain(routingID: [UInt8], body: [UInt8])
    /// Any other shape, frame by frame, the routing id first: a proxy's envelope, no delimiter, several bodies.
    case frames([[UInt8]])

    /// The frame the ROUTER put first: which peer sent the message, or gets the reply.
    public var routingID: [UInt8] {
        switch self {
        case .plain(let routingID, _): routingID
        case .frames(let frames): frames.first ?? []
        }
    }

    /// Every frame, in order.
    public var frames: [[UInt8]] {
        switch self {
        case .plain(let routingID, let body): [routingID, [], body]
        case .frames(let frames): frames
        }
    }

    /// The same envelope with `body` as the last frame: the reply to this message.
    public func replacingBody(with body: [UInt8]) -> RouterMessage {
        switch self {
        case .plain(let routingID, _):
            return .plain(routingID: routingID, body: body)
        case .frames(var frames):
            if frames.isEmpty { return .frames([body]) }
            frames[frames.count - 1] = body
            return .frames(frames)
        }
    }
}

// Declared unavailable so that no one (including a future conformance by inference) can share a socket between
// threads; libzmq sockets must not be used concurrently.
@available(*, unavailable)
extension ZeroMQSocket: Sendable {}
