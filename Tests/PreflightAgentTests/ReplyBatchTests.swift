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
            case .plain(let routingID, let body): replies.append([[UInt8](routingID), [], [UInt8](body)])
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
}
