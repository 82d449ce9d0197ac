import PreflightProtocol
import ZeroMQ

/// The replies of one batch of requests, held until the work they report is committed
/// (`RequestHandler.endOfBatch`), then sent in the order they were made.
///
/// A plain request's routing id and reply are written back to back into one buffer that the I/O thread keeps
/// from batch to batch, so a request answered at once costs no allocation here (an array each for the routing
/// id, the body and the reply cost about 1,600 instructions per request: docs/BENCHMARKS.md); replies of
/// other shapes are kept whole.
struct ReplyBatch {
    /// One reply, as `send(_:)` hands it over: a plain one's bytes are valid only during the call.
    enum Reply {
        case plain(routingID: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer)
        case message(RouterMessage)
    }

    private enum Entry {
        case plain(routingID: Range<Int>, body: Range<Int>)
        case message(RouterMessage)
    }

    /// The plain replies' bytes: the handler appends a reply through it between `beginPlain` and `endPlain`.
    var writer = JSONWriter(reservingCapacity: 0)
    /// The first reply apart from the rest: a request answered alone (an app waiting for each answer) costs no
    /// append to `rest` and no emptying of it (about 120 instructions).
    private var first: Entry?
    private var rest: [Entry] = []
    /// Where the plain reply being written starts: its routing id, then its body.
    private var open: (start: Int, body: Int)?

    /// Past this, the buffer is let go once the batch is sent: a burst of large replies does not stay resident.
    static let keptCapacity = 1 << 18

    var isEmpty: Bool { first == nil }

    /// Starts the reply to a plain request from `routingID`; its body is appended to `writer`.
    mutating func beginPlain(routingID: UnsafeRawBufferPointer) {
        let start = writer.bytes.count
        writer.bytes.append(contentsOf: routingID)
        open = (start, writer.bytes.count)
    }

    /// The reply begun last is whole.
    mutating func endPlain() {
        guard let open else { return }
        add(.plain(routingID: open.start..<open.body, body: open.body..<writer.bytes.count))
        self.open = nil
    }

    /// The request begun last is answered later (deferred work): whatever was written for it goes.
    mutating func abandon() {
        guard let open else { return }
        writer.bytes.removeLast(writer.bytes.count - open.start)
        self.open = nil
    }

    /// A reply of any shape, made whole.
    mutating func append(_ message: RouterMessage) {
        add(.message(message))
    }

    private mutating func add(_ entry: Entry) {
        if first == nil { first = entry } else { rest.append(entry) }
    }

    /// Hands each reply to `send` in order, then empties the batch, keeping its buffers.
    mutating func send(_ send: (Reply) -> Void) {
        writer.bytes.withUnsafeBytes { bytes in
            func deliver(_ entry: Entry) {
                switch entry {
                case .plain(let routingID, let body):
                    send(
                        .plain(
                            routingID: UnsafeRawBufferPointer(rebasing: bytes[routingID]),
                            body: UnsafeRawBufferPointer(rebasing: bytes[body])
                        )
                    )
                case .message(let message):
                    send(.message(message))
                }
            }
            if let first { deliver(first) }
            for entry in rest { deliver(entry) }
        }
        first = nil
        if !rest.isEmpty { rest.removeAll(keepingCapacity: true) }
        if writer.bytes.capacity > Self.keptCapacity {
            writer.bytes = []
        } else {
            writer.bytes.removeAll(keepingCapacity: true)
        }
    }
}
