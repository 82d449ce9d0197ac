import Testing
import ZeroMQ

@Suite struct RouterMessageTests {
    /// A ROUTER bound over inproc, and a peer of `type` connected to it with routing id "peer".
    private func connected(_ type: SocketType) throws -> (ZeroMQContext, router: ZeroMQSocket, peer: ZeroMQSocket) {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let router = try makeSocket(context, .router)
        // A blocking receive that finds nothing fails the test (wouldBlock) instead of hanging it.
        try router.setOption(.receiveTimeout(milliseconds: Int32(patience.components.seconds * 1000)))
        try router.bind(endpoint)
        let peer = try makeSocket(context, type)
        try peer.setOption(.routingID(bytes("peer")))
        try peer.connect(endpoint)
        return (context, router, peer)
    }

    @Test func aREQRequestIsPlainAndItsReplyReachesTheREQ() throws {
        let (context, router, req) = try connected(.req)
        _ = context
        try req.send([bytes("hello")])
        let message = try router.receiveRouted().message
        #expect(message == .plain(routingID: bytes("peer"), body: bytes("hello")))
        #expect(message.routingID == bytes("peer"))
        #expect(message.frames == [bytes("peer"), [], bytes("hello")])

        try router.send(message.replacingBody(with: bytes("world")), dontWait: true)
        #expect(try receiveMessage(on: req) == [bytes("world")])
    }

    @Test func otherShapesArriveFrameByFrameAndRepliesKeepTheirEnvelope() throws {
        let (context, router, dealer) = try connected(.dealer)
        _ = context
        let shapes: [[[UInt8]]] = [
            [bytes("body")],  // no delimiter
            [bytes("proxy"), [], bytes("body")],  // a proxy's envelope
            [[], bytes("one"), bytes("two")],  // two bodies
            [[]],  // a delimiter and nothing else
        ]
        for shape in shapes {
            try dealer.send(shape)
            let message = try router.receiveRouted().message
            #expect(message == .frames([bytes("peer")] + shape))
            try router.send(message.replacingBody(with: bytes("reply")), dontWait: true)
            #expect(try receiveMessage(on: dealer) == shape.dropLast() + [bytes("reply")])
        }
    }

    @Test func aDealerFollowingTheREQEnvelopeIsPlain() throws {
        let (context, router, dealer) = try connected(.dealer)
        _ = context
        try dealer.send([[], bytes("body")])
        let message = try router.receiveRouted(dontWait: false).message
        #expect(message == .plain(routingID: bytes("peer"), body: bytes("body")))
        try router.send(.plain(routingID: bytes("peer"), body: bytes("reply")), dontWait: true)
        #expect(try receiveMessage(on: dealer) == [[], bytes("reply")])
    }

    @Test func receivingWithoutWaitingFromAnEmptySocketThrowsWouldBlock() throws {
        let (context, router, _) = try connected(.dealer)
        _ = context
        #expect(throws: ZeroMQError.wouldBlock) { try router.receiveRouted(dontWait: true) }
    }
}
