import PreflightProtocol
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// The replies of one batch of requests, held until the work they report is committed
/// (`RequestHandler.endOfBatch`), then sent in the order they were made.
///
/// A plain request's routing id and reply are written back to back into one buffer that the I/O thread keeps
/// from batch to batch, so a request answered at once costs no allocation here (an array each for the routing
/// id, the body and the reply cost about 1,600 instructions per request: docs/BENCHMARKS.md); replies of
/// other shapes are kept whole.
///
/// When the batch is sent, its plain replies' bytes are copied once into `LentBytes`, from which libzmq sends
/// them without a copy of its own: one copy for the batch where `zmq_send` made one per reply, in a block it
/// allocated (and libzmq's thread freed); the batch's frames are lent together, one reference for all. The lent
/// bytes are written again once libzmq has let go of every reply in them, which for an app waiting for each answer
/// is before its next request arrives; in a flood, libzmq's thread is still writing out one batch while the next
/// is sent, so a few are kept in turn.
struct ReplyBatch {
    /// One reply, as `send(_:)` hands it over: a plain one's bytes lie in `lent`, valid for the call, and for as long
    /// as a frame lent from it is out. Its body is one frame of `lent.lend(frames:)` when
    /// `ZeroMQSocket.lendsFrame(ofCount:)` says so: sent by `ZeroMQSocket.sendPlain(routingID:body:lentFrom:)`, or
    /// returned (`lent.returnFrame()`).
    enum Reply {
        case plain(routingID: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, lent: LentBytes)
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
    /// How many plain replies' bodies are lent (`ZeroMQSocket.lendsFrame(ofCount:)`): the frames the batch lends.
    private var lending = 0
    /// How many plain requests the batch has begun.
    private var begun = 0
    /// The first plain request's routing id, in `writer`: when it comes round again, the batch has seen every peer
    /// with requests waiting (`round`).
    private var firstPeer: Range<Int>?
    /// How many requests came before the first peer's came round again: the peers with requests waiting, since
    /// libzmq's ROUTER hands out one message from each in turn.
    private var round: Int?

    /// The bytes recent batches' plain replies were sent from, each written again only once libzmq holds none of
    /// its replies.
    private var lent: [LentBytes] = []

    /// Past this, the buffer is let go once the batch is sent: a burst of large replies does not stay resident.
    static let keptCapacity = 1 << 18
    /// The smallest lent bytes made: most batches' replies fit, and the same bytes serve batch after batch.
    static let lentCapacity = 1 << 14
    /// Lent bytes larger than this are not kept once their batch is sent: after a flood's batches of hundreds of
    /// replies, three kept buffers stay small.
    static let lentKeptCapacity = 1 << 16
    /// How many lent bytes are kept to take turns: while libzmq's thread writes out one batch's replies the next
    /// batch is sent from another, and by the third the first is free again.
    static let lentKept = 3

    var isEmpty: Bool { first == nil }

    /// The fewest requests a batch holds its replies for, and how many per peer it aims for.
    static let leastPerBatch = 32
    static let perPeer = 16

    /// Whether the batch should be sent before more requests are read: it holds `perPeer` requests from each peer
    /// with requests waiting, and `leastPerBatch` at the least. Replies wait for their whole batch, so in a flood
    /// from a few peers a long batch holds each peer's answers while its next requests wait behind them: with 4
    /// pipelining DEALERs, batches of 64 answered 10% to 13% more a second than of 256 (`tools/bench --compare`,
    /// medians of 7 rounds side by side, two runs). With many peers a short batch gives each one or two replies, and
    /// libzmq's thread then wakes to write each on its own: batches of 32 answered 11% and 14% fewer with 16 and 64
    /// DEALERs, so from 16 peers on the loop's own limit (256) ends a batch first. Unknown until a peer comes round
    /// again.
    var isFull: Bool {
        guard let round else { return false }
        return begun >= max(Self.leastPerBatch, Self.perPeer * round)
    }

    /// Starts the reply to a plain request from `routingID`; its body is appended to `writer`.
    @inline(__always)
    mutating func beginPlain(routingID: UnsafeRawBufferPointer) {
        let start = writer.bytes.count
        if begun == 0 {
            firstPeer = start..<start + routingID.count
        } else if round == nil {
            countRound(routingID)
        }
        begun += 1
        writer.bytes.append(contentsOf: routingID)
        open = (start, writer.bytes.count)
    }

    /// `round` once the first peer comes round again. Out of line: a request answered alone never gets here, and
    /// inlined it made `send` too large to be inlined into the I/O loop (about 300 instructions a request more).
    @inline(never)
    private mutating func countRound(_ routingID: UnsafeRawBufferPointer) {
        guard let firstPeer, firstPeer.count == routingID.count else { return }
        let same = writer.bytes.withUnsafeBytes { written in
            memcmp(written.baseAddress! + firstPeer.lowerBound, routingID.baseAddress!, routingID.count) == 0
        }
        if same { round = begun }
    }

    /// The reply begun last is whole.
    mutating func endPlain() {
        guard let open else { return }
        let body = open.body..<writer.bytes.count
        if ZeroMQSocket.lendsFrame(ofCount: body.count) { lending += 1 }
        add(.plain(routingID: open.start..<open.body, body: body))
        self.open = nil
    }

    /// The request begun last is answered later (deferred work): whatever was written for it goes.
    mutating func abandon() {
        guard let open else { return }
        if let firstPeer, firstPeer.lowerBound >= open.start { self.firstPeer = nil }
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

    /// Hands each reply to `send` in order, then empties the batch, keeping its buffers. Inlined into the I/O loop,
    /// where `send` is specialized: called, each reply's `LentBytes` was retained and released (about 240
    /// instructions a request).
    @inline(__always)
    mutating func send(_ send: (Reply) -> Void) {
        let lent = lentBytes(for: writer.bytes.count)
        writer.bytes.withUnsafeBytes { written in
            if let source = written.baseAddress {
                lent.bytes.baseAddress!.copyMemory(from: source, byteCount: written.count)
            }
        }
        // One hold for every body to be lent, taken before the first is sent (see `LentBytes`).
        lent.lend(frames: lending)
        lending = 0
        let bytes = UnsafeRawBufferPointer(lent.bytes)
        func deliver(_ entry: Entry) {
            switch entry {
            case .plain(let routingID, let body):
                send(
                    .plain(
                        routingID: UnsafeRawBufferPointer(rebasing: bytes[routingID]),
                        body: UnsafeRawBufferPointer(rebasing: bytes[body]),
                        lent: lent
                    )
                )
            case .message(let message):
                send(.message(message))
            }
        }
        if let first { deliver(first) }
        for entry in rest { deliver(entry) }
        first = nil
        begun = 0
        firstPeer = nil
        round = nil
        if !rest.isEmpty { rest.removeAll(keepingCapacity: true) }
        if writer.bytes.capacity > Self.keptCapacity {
            writer.bytes = []
        } else {
            writer.bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Bytes of at least `count` no frame holds: kept ones libzmq has let go of, else new ones, kept in the place
    /// of the oldest (which whichever thread releases last then frees). Bytes beyond `lentKeptCapacity` are not
    /// kept.
    private mutating func lentBytes(for count: Int) -> LentBytes {
        for index in lent.indices
        where isKnownUniquelyReferenced(&lent[index]) && !lent[index].hasFramesOut && lent[index].capacity >= count {
            return lent[index]
        }
        let made = LentBytes(capacity: max(count, Self.lentCapacity))
        if count <= Self.lentKeptCapacity {
            if lent.count == Self.lentKept { lent.removeFirst() }
            lent.append(made)
        }
        return made
    }
}
