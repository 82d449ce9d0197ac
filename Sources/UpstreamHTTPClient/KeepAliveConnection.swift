import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import UpstreamHTTP

/// One HTTP/1.1 keep-alive connection over SwiftNIO, for an upstream that is mostly called one request at a
/// time: Target's Delivery API, which the notification sender calls batch after batch.
///
/// Why it exists: through the general client (`AsyncHTTPClientTransport`) one call cost about 400,000
/// instructions whatever it carried (parsing the URL with Foundation, the connection pool's state machines,
/// a tracing span, a task group racing the body against the deadline): 8,000 per cached load with batches of
/// 50 display notifications, more than the load itself (docs/BENCHMARKS.md). Here a call is a request head,
/// a body and the answer gathered by one channel handler, with one timer for the deadline and idleness.
///
/// What it does not do, so hands to `fallback` (the general client): a request while its connection is busy
/// (calls made side by side keep their own connections there), a URL it does not read as plain `http://` or
/// `https://` (user info, say), and a header HTTP/1.1 cannot carry (`RequestBytes`). It follows no redirects:
/// the Delivery API answers a POST itself, and an answer of 3xx is returned like any other status.
///
/// The guarantees are the general client's: the deadline covers the whole exchange (connect, TLS, head and
/// body, so a body trickling in cannot hold the call), a body over the cap fails `bodyTooLarge`, and a
/// connection in any doubt (an error, a timeout, a cancelled call, an answer that says `close`) is closed,
/// never reused. An idle connection is closed after `idleTimeout`. A connection this side has seen the server
/// close while it was idle is replaced before anything is written on it, so that case costs no failed call.
/// A close that crosses the request on the way (the server's keep-alive timeout meeting the next call) fails
/// the call, which is not sent again: the server may have carried it out, and HTTP/1.1 cannot tell. A failed
/// notification batch is put back and sent again after the backoff.
public final class KeepAliveConnection: HTTPTransport {
    private let fallback: any HTTPTransport
    private let group: any EventLoopGroup
    /// Largest response body read when the request names none (as `AsyncHTTPClientTransport`).
    public let maxResponseBytes: Int
    private let connectTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let state = Mutex(State())
    /// Made by the first `https` call: reading the trust store costs memory an agent that never calls over
    /// TLS (the simulator on loopback) does not spend.
    private let tls = Mutex<NIOSSLContext?>(nil)
    private let opened = Atomic<Int>(0)
    private let allocator = ByteBufferAllocator()

    /// How many connections this has opened (one for calls made one after another to one host).
    public var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    /// Whether a connection is kept between calls and still open as far as this side has seen.
    var keepsAnOpenConnection: Bool { state.withLock { $0.idle?.channel.isActive ?? false } }

    private struct State {
        /// A call is using the connection.
        var busy = false
        /// The connection kept between calls, and where it goes.
        var idle: (channel: any Channel, origin: Origin)?
        var closed = false
        /// The last request head written: a Delivery call's is its predecessor's.
        var lastHead: RequestBytes?

        /// `request`'s head, made again only when it differs from the last one; nil when it cannot be written.
        mutating func head(of request: HTTPRequest) -> RequestBytes? {
            if let lastHead, lastHead.isHead(of: request) { return lastHead }
            guard let head = RequestBytes(request) else { return nil }
            lastHead = head
            return head
        }
    }

    public init(
        fallback: any HTTPTransport,
        maxResponseBytes: Int = 4 << 20,
        connectTimeout: Duration = .seconds(5),
        idleTimeout: Duration = .seconds(60),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.fallback = fallback
        self.maxResponseBytes = maxResponseBytes
        self.connectTimeout = TimeAmount(connectTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.group = group
    }

    /// Closes the connection (at once when idle, when its call ends otherwise); later calls go to `fallback`.
    public func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = nil }
            return state.idle?.channel
        }
        idle?.close(promise: nil)
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        guard let head = state.withLock({ $0.head(of: request) }) else { return try await fallback.send(request) }
        let target = head.target
        let lease = state.withLock { state -> (any Channel)?? in
            guard !state.busy, !state.closed else { return nil }
            state.busy = true
            defer { state.idle = nil }
            guard let idle = state.idle else { return .some(nil) }
            if idle.origin == target.origin { return .some(idle.channel) }
            // Another host now (Target named an edge host): the old connection will not be used again.
            idle.channel.close(promise: nil)
            return .some(nil)
        }
        guard case .some(let reusable) = lease else { return try await fallback.send(request) }
        let deadline = NIODeadline.now() + TimeAmount(request.timeout)
        let (result, keep) = await exchange(request, head, on: reusable, deadline: deadline)
        let closeNow = state.withLock { state -> Bool in
            state.busy = false
            guard let keep else { return false }
            if state.closed { return true }
            state.idle = (keep, target.origin)
            return false
        }
        if closeNow { keep?.close(promise: nil) }
        return try result.get()
    }

    /// The call on `reusable` (or a new connection), and the connection to keep for the next one, if any.
    private func exchange(
        _ request: HTTPRequest,
        _ requestHead: RequestBytes,
        on reusable: (any Channel)?,
        deadline: NIODeadline
    ) async -> (Result<HTTPResponse, TransportError>, keep: (any Channel)?) {
        let target = requestHead.target
        let bytes = requestHead.encode(request, allocator: allocator)
        let head = requestHead.methodHead
        let answer = Answer(
            maxBytes: request.maxResponseBytes ?? maxResponseBytes,
            deadline: deadline,
            timeoutDetail: "no complete answer within \(request.timeout)"
        )
        var channel = reusable
        while true {
            let current: any Channel
            if let channel {
                current = channel
            } else {
                do throws(TransportError) {
                    current = try await connect(target.origin, deadline: deadline)
                } catch {
                    return (.failure(error), nil)
                }
            }
            do {
                // The handler resumes the call itself: no future, promise or callback per call (each
                // `EventLoopFuture` made and freed cost about 2,000 instructions of generic metadata lookups).
                let response = try await withTaskCancellationHandler {
                    try await withUnsafeThrowingContinuation { (call: ExchangeHandler.Call) in
                        current.eventLoop.execute { [head] in
                            do {
                                let handler = try current.pipeline.syncOperations.handler(type: ExchangeHandler.self)
                                handler.start(head: head, bytes: bytes, answer: answer, call: call)
                            } catch {
                                call.resume(throwing: StaleConnection())
                            }
                        }
                    }
                } onCancel: {
                    current.close(promise: nil)
                }
                return (.success(response.response), response.keepAlive ? current : nil)
            } catch is StaleConnection where channel != nil {
                // Closed by the server while idle, found before anything was written: a new connection.
                current.close(promise: nil)
                channel = nil
            } catch {
                current.close(promise: nil)
                if Task.isCancelled { return (.failure(TransportError(.cancelled, "cancelled")), nil) }
                let failure =
                    (error as? TransportError)
                    ?? TransportError(.connection, "the connection closed before a whole answer")
                return (.failure(failure), nil)
            }
        }
    }

    private func connect(_ origin: Origin, deadline: NIODeadline) async throws(TransportError) -> any Channel {
        let remaining = deadline - .now()
        let timeout = min(remaining, connectTimeout)
        guard timeout > .zero else { throw TransportError(.timeout, "no time left to connect to \(origin.host)") }
        let context = origin.tls ? try tlsContext() : nil
        let idleTimeout = self.idleTimeout
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    if let context {
                        try pipeline.addHandler(
                            NIOSSLClientHandler(context: context, serverHostname: origin.serverName)
                        )
                    }
                    let writer = RequestBytesWriter()
                    let decoder = HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)
                    try pipeline.addHandler(writer)
                    try pipeline.addHandler(ByteToMessageHandler(decoder))
                    try pipeline.addHandler(ExchangeHandler(idleTimeout: idleTimeout, decoder: decoder, writer: writer))
                }
            }
        // A cancelled call (the agent stopping) does not wait for a connect that hangs (SYNs unanswered):
        // it ends at once, and the connection, should it come, is closed.
        let connecting = bootstrap.connect(host: origin.host, port: origin.port)
        let outcome = connecting.eventLoop.makePromise(of: (any Channel).self)
        connecting.whenComplete { outcome.completeWith($0) }
        do {
            let channel = try await withTaskCancellationHandler {
                try await outcome.futureResult.get()
            } onCancel: {
                outcome.fail(CancellationError())
                connecting.whenSuccess { $0.close(promise: nil) }
            }
            opened.add(1, ordering: .relaxed)
            if Task.isCancelled {
                channel.close(promise: nil)
                throw TransportError(.cancelled, "cancelled")
            }
            return channel
        } catch let error as TransportError {
            throw error
        } catch is CancellationError {
            throw TransportError(.cancelled, "cancelled")
        } catch ChannelError.connectTimeout {
            throw TransportError(.timeout, "could not connect to \(origin.host):\(origin.port) in time")
        } catch {
            throw TransportError(.connection, "\(error)")
        }
    }

    private func tlsContext() throws(TransportError) -> NIOSSLContext {
        do {
            return try tls.withLock { context in
                if let context { return context }
                let made = try NIOSSLContext(configuration: .makeClientConfiguration())
                context = made
                return made
            }
        } catch {
            throw TransportError(.connection, "TLS set-up failed: \(error)")
        }
    }
}

/// The connection was found closed before the request was written: safe to send on a new one.
private struct StaleConnection: Error {}

/// What one call expects of its answer.
private struct Answer: Sendable {
    var maxBytes: Int
    var deadline: NIODeadline
    var timeoutDetail: String
}

/// Writes one request and gathers its answer; on the connection's event loop only.
///
/// One timer watches both the call's deadline and the connection's idleness (`watch`): it is scheduled for the
/// earliest moment either could end and, when it fires, either ends the call or closes the connection, or
/// waits again for whichever moment is now due. Calls made one after another (the notification sender's) then
/// schedule nothing: their deadlines are later than the timer already waiting. A timer per call and another
/// per idle spell, each scheduled and cancelled, cost the event loop about 14,000 instructions per call.
private final class ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    struct Received: Sendable {
        var response: HTTPResponse
        var keepAlive: Bool
    }

    /// The call waiting for an answer, resumed exactly once (`finish`).
    typealias Call = UnsafeContinuation<Received, any Error>

    private var context: ChannelHandlerContext?
    private var call: Call?
    private var answer: Answer?
    private var head: HTTPResponseHead?
    private var body: ByteBuffer?
    /// Since when the connection has waited, answered, for its next call; nil during a call.
    private var idleSince: NIODeadline?
    /// The timer and when it fires.
    private var watch: (task: Scheduled<Void>, at: NIODeadline)?
    /// An answered connection unused this long is closed.
    private let idleTimeout: TimeAmount
    /// The response decoder, told each request's method directly (`HTTPDecoder.write(data:)`), and the writer
    /// nearest the socket: a request's bytes pass no other handler on the way out.
    private let decoder: HTTPResponseDecoder
    private let writer: RequestBytesWriter

    init(idleTimeout: TimeAmount, decoder: HTTPResponseDecoder, writer: RequestBytesWriter) {
        self.idleTimeout = idleTimeout
        self.decoder = decoder
        self.writer = writer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(TransportError(.connection, "the connection closed before a whole answer")))
        watch?.task.cancel()
        watch = nil
        self.context = nil
    }

    /// Writes the request (`head` carries only its method, for the response decoder; `bytes` are the whole request);
    /// `call` is resumed with its answer or failure. A write that fails closes the channel, which ends the call.
    func start(head request: HTTPRequestHead, bytes: ByteBuffer, answer: Answer, call: Call) {
        guard let context, context.channel.isActive, self.call == nil else {
            call.resume(throwing: StaleConnection())
            return
        }
        self.call = call
        self.answer = answer
        idleSince = nil
        watch(until: answer.deadline)
        decoder.write(data: .head(request))
        writer.send(bytes)
    }

    /// Makes sure the timer fires no later than `deadline`.
    private func watch(until deadline: NIODeadline) {
        if let watch, watch.at <= deadline { return }
        guard let context else { return }
        watch?.task.cancel()
        let task = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in watchFired() }
        watch = (task, deadline)
    }

    /// Ends the call past its deadline, or closes the connection idle too long; else waits for what is due next.
    private func watchFired() {
        watch = nil
        let now = NIODeadline.now()
        if let answer {
            if now >= answer.deadline {
                finish(.failure(TransportError(.timeout, answer.timeoutDetail)))
            } else {
                watch(until: answer.deadline)
            }
        } else if let idleSince {
            if now >= idleSince + idleTimeout {
                context?.close(promise: nil)
            } else {
                watch(until: idleSince + idleTimeout)
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let answer else {
            // Bytes no request asked for: this connection is not in a state to trust.
            context.close(promise: nil)
            return
        }
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(var part):
            let received = (body?.readableBytes ?? 0) + part.readableBytes
            guard received <= answer.maxBytes else {
                finish(.failure(TransportError(.bodyTooLarge, "response body over \(answer.maxBytes) bytes")))
                return
            }
            if body == nil {
                body = part
            } else {
                body!.writeBuffer(&part)
            }
        case .end:
            guard let head else {
                finish(.failure(TransportError(.connection, "an answer without a status line")))
                return
            }
            let body = self.body.map { Array(buffer: $0) } ?? []
            let response = HTTPResponse(status: Int(head.status.code), headers: head.headers, body: body)
            finish(.success(Received(response: response, keepAlive: head.isKeepAlive)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        watch?.task.cancel()
        watch = nil
        // Closed with no answer, even on a connection that answered before: the server may have carried the
        // request out, so it is not sent again (a POST is not replayable; Go's net/http decides the same).
        finish(.failure(TransportError(.connection, "the connection closed before a whole answer")))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(TransportError(.connection, "\(error)")))
    }

    /// Ends the call in progress, if any. A failure closes the connection; so does an answer that asks it.
    private func finish(_ result: Result<Received, TransportError>) {
        guard let call = end() else { return }
        switch result {
        case .success(let received):
            if !received.keepAlive {
                context?.close(promise: nil)
            } else {
                let now = NIODeadline.now()
                idleSince = now
                watch(until: now + idleTimeout)
            }
            call.resume(returning: received)
        case .failure(let error):
            context?.close(promise: nil)
            call.resume(throwing: error)
        }
    }

    /// Clears the call in progress; it, if there was one.
    private func end() -> Call? {
        guard let call else { return nil }
        self.call = nil
        answer = nil
        head = nil
        body = nil
        return call
    }
}

/// Where a request goes: scheme, host and port.
struct Origin: Hashable, Sendable {
    var tls: Bool
    var host: String
    var port: Int

    /// The `Host` header: the port only when not the scheme's own, an IPv6 address in brackets.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? name : "\(name):\(port)"
    }

    /// The name TLS asks the server for (SNI): none for an address, which is checked against the
    /// certificate's addresses instead.
    var serverName: String? {
        host.contains(":") || host.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || ($0 >= 0x30 && $0 <= 0x39) })
            ? nil : host
    }
}

/// A request's absolute URL read as its origin and the target of its request line; nil for anything but a
/// plain `http://` or `https://` URL of printable ASCII (user info, a bad port, an empty host, spaces).
struct RequestTarget: Equatable, Sendable {
    var origin: Origin
    /// The path (at least `/`) and the query, as the request line carries them.
    var pathAndQuery: String

    init?(url: String) {
        let bytes = Array(url.utf8)
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let tls: Bool
        let lowered = url.prefix(8).lowercased()
        if lowered.hasPrefix("https://") {
            tls = true
        } else if lowered.hasPrefix("http://") {
            tls = false
        } else {
            return nil
        }
        let start = tls ? 8 : 7
        let end =
            bytes[start...].firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") })
            ?? bytes.endIndex
        let authority = bytes[start..<end]
        guard !authority.contains(UInt8(ascii: "@")), !authority.contains(UInt8(ascii: "#")) else { return nil }
        var host: ArraySlice<UInt8>
        var port: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority[(authority.startIndex + 1)..<close]
            let rest = authority[(close + 1)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { return nil }
                port = rest.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
            host = authority[..<colon]
            port = authority[(colon + 1)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { return nil }
        var number = tls ? 443 : 80
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(String(decoding: port, as: UTF8.self)), (1...65535).contains(value)
            else { return nil }
            number = value
        }
        var rest = bytes[end...]
        if let fragment = rest.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<fragment] }
        self.origin = Origin(tls: tls, host: String(decoding: host, as: UTF8.self).lowercased(), port: number)
        self.pathAndQuery = (rest.first == UInt8(ascii: "/") ? "" : "/") + String(decoding: rest, as: UTF8.self)
    }
}

extension HTTPResponse {
    /// An answer with NIO's headers, their names lower-cased, a repeated header's values joined by `, `.
    init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
        var merged: [String: String] = [:]
        merged.reserveCapacity(headers.count)
        for (name, value) in headers {
            let key = name.lowercased()
            // One hash for a header that appears once, as most do.
            if let first = merged.updateValue(value, forKey: key) { merged[key] = "\(first), \(value)" }
        }
        self.init(status: status, headers: merged, body: body)
    }
}
