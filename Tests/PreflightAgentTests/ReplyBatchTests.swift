import PreflightProtocol
import Testing
import ZeroMQ

@testable import PreflightAgent

@Suite struct ReplyBatchTests {
    /// What `send` handed over, copied out.
    private func sent(_ batch: inout ReplyBatch) -> [[[UInt8]]] {
        var replies: [[[UInt8]]] = []
        batch.send { reply in
            switch reply {
            case .plain(let routingID, let body, _): replies.append([[UInt8](routingID), [], [UInt8](body)])
            case .message(let message): replies.append(message.frames)
            }
        }
        return replies
    }

    private func plain(_ batch: inout ReplyBatch, peer: String, reply: String?) {
        Array(peer.utf8).withUnsafeBytes { batch.beginPlain(routingID: $0) }
        batch.writer.appendUnescaped(reply ?? "written, then taken back")
        if reply == nil { batch.abandon() } else { batch.endPlain() }
    }

    @Test func repliesGoInTheOrderTheyWereMadeAndADeferredOneLeavesNothing() {
        var batch = ReplyBatch()
        #expect(batch.isEmpty)
        plain(&batch, peer: "a", reply: "one")
        plain(&batch, peer: "b", reply: nil)
        batch.append(.frames([Array("c".utf8), Array("proxy".utf8), [], Array("two".utf8)]))
        plain(&batch, peer: "d", reply: "three")
        #expect(!batch.isEmpty)
        #expect(
            sent(&batch) == [
                [Array("a".utf8), [], Array("one".utf8)],
                [Array("c".utf8), Array("proxy".utf8), [], Array("two".utf8)],
                [Array("d".utf8), [], Array("three".utf8)],
            ]
        )
        #expect(batch.isEmpty)
        #expect(batch.writer.bytes.isEmpty)
        #expect(sent(&batch).isEmpty)
    }

    /// Requests from peers in turn, as libzmq's ROUTER hands them out: `count` of them from `peers` peers.
    private func inTurn(_ batch: inout ReplyBatch, peers: Int, count: Int, abandoningFirst: Bool = false) {
        for index in 0..<count {
            plain(&batch, peer: "peer-\(index % peers)", reply: abandoningFirst && index == 0 ? nil : "ok")
        }
    }

    @Test func aBatchIsFullWithSixteenRequestsAPeerOnceEveryPeerWithRequestsCameRound() {
        for peers in [1, 2, 4, 8, 16, 64] {
            let full = max(ReplyBatch.leastPerBatch, ReplyBatch.perPeer * peers)
            var batch = ReplyBatch()
            inTurn(&batch, peers: peers, count: full - 1)
            #expect(!batch.isFull, "\(peers) peers")
            // The round is known only once the first peer comes round again.
            inTurn(&batch, peers: peers, count: 1)
            #expect(batch.isFull, "\(peers) peers")
            _ = sent(&batch)
            // A sent batch starts counting again.
            inTurn(&batch, peers: peers, count: 1)
            #expect(!batch.isFull)
        }
    }

    @Test func aBatchWhoseFirstRequestWasDeferredIsFullOnlyAtTheReceiveLimit() {
        var batch = ReplyBatch()
        // The first request's bytes are taken back: its routing id is no longer there to compare with, and the
        // batch runs to the I/O loop's own limit.
        inTurn(&batch, peers: 2, count: 200, abandoningFirst: true)
        #expect(!batch.isFull)
        #expect(sent(&batch).count == 199)
    }

    @Test func theBufferIsKeptForTheNextBatchUnlessABurstGrewItPastItsLimit() {
        var batch = ReplyBatch()
        plain(&batch, peer: "a", reply: "small")
        _ = sent(&batch)
        #expect(batch.writer.bytes.capacity > 0)
        let large = String(repeating: "x", count: ReplyBatch.keptCapacity)
        plain(&batch, peer: "a", reply: large)
        #expect(sent(&batch)[0][2].count == large.utf8.count)
        #expect(batch.writer.bytes.capacity == 0)
        plain(&batch, peer: "b", reply: "after")
        #expect(sent(&batch) == [[Array("b".utf8), [], Array("after".utf8)]])
    }

    /// The lent bytes a batch's replies were sent from are written again only once nothing holds them: a reply
    /// libzmq has not yet written out still reads its own bytes after the next batch is sent.
    @Test func lentBytesAreWrittenAgainOnlyOnceNoReplyHoldsThem() {
        var batch = ReplyBatch()
        // Stands in for libzmq: a frame it holds (unsent, or not yet written out) is returned later; any other at once.
        var held: [(lent: LentBytes, body: UnsafeRawBufferPointer)] = []
        func send(holding: Bool) -> LentBytes? {
            var sentFrom: LentBytes?
            batch.send { reply in
                guard case .plain(_, let body, let lent) = reply else { return }
                sentFrom = lent
                guard ZeroMQSocket.lendsFrame(ofCount: body.count) else { return }
                if holding { held.append((lent, body)) } else { lent.returnFrame() }
            }
            return sentFrom
        }
        // Bodies longer than 33 bytes: shorter ones are copied by libzmq and hold nothing.
        let firstReply = "the first batch's reply, lent to libzmq"
        plain(&batch, peer: "a", reply: firstReply)
        plain(&batch, peer: "b", reply: "short")
        let first = send(holding: true)
        #expect(held.count == 1)
        plain(&batch, peer: "a", reply: "the second batch's reply, lent to libzmq")
        // Only its identity is kept, so that the batch holds the second batch's bytes alone. The batch makes new
        // bytes while it still holds the old, so new ones never take the old ones' address.
        let second = send(holding: false).map(ObjectIdentifier.init)
        #expect(first.map(ObjectIdentifier.init) != second, "the first batch's reply still holds its bytes")
        #expect([UInt8](held[0].body) == Array(firstReply.utf8))
        for frame in held { frame.lent.returnFrame() }
        held = []
        plain(&batch, peer: "a", reply: "third")
        #expect(send(holding: false).map(ObjectIdentifier.init) == second, "nothing holds the second batch's bytes now")
        // Two frames of one batch held: its bytes come back only with the second's return.
        plain(&batch, peer: "a", reply: "the fourth batch's first reply, lent to libzmq")
        plain(&batch, peer: "b", reply: "the fourth batch's second reply, lent to libzmq")
        let fourth = send(holding: true).map(ObjectIdentifier.init)
        #expect(fourth == second && held.count == 2)
        held[0].lent.returnFrame()
        plain(&batch, peer: "a", reply: "the fifth batch's reply, lent to libzmq")
        #expect(send(holding: false).map(ObjectIdentifier.init) != fourth, "one of the fourth batch's frames is out")
        held[1].lent.returnFrame()
        held = []
        plain(&batch, peer: "a", reply: "sixth")
        #expect(send(holding: false).map(ObjectIdentifier.init) == fourth, "every frame of the fourth batch is back")
        // A batch larger than the kept size is sent from bytes of its own, not kept: the next one is sent from the
        // kept bytes again.
        plain(&batch, peer: "a", reply: String(repeating: "x", count: ReplyBatch.lentKeptCapacity + 1))
        #expect(send(holding: false).map(ObjectIdentifier.init) != second)
        plain(&batch, peer: "a", reply: "after the large one")
        #expect(send(holding: false).map(ObjectIdentifier.init) == second)
    }
}
