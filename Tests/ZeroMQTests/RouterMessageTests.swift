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

    @Test func aPlainMessageIsLentInPlaceAndRepliedToFromBytes() throws {
        let (context, router, req) = try connected(.req)
        _ = context
        try req.send([bytes("hello")])
        var lent: ([UInt8], [UInt8]) = ([], [])
        let received = try router.receiveRouted { routingID, body in lent = ([UInt8](routingID), [UInt8](body)) }
        guard case .lent = received.message else {
            Issue.record("a REQ's request was not lent as plain: \(received.message)")
            return
        }
        #expect(lent.0 == bytes("peer"))
        #expect(lent.1 == bytes("hello"))
        #expect(received.property == nil)

        try lent.0.withUnsafeBytes { routingID in
            try bytes("world").withUnsafeBytes { body in
                try router.sendPlain(routingID: routingID, body: body, dontWait: true)
            }
        }
        #expect(try receiveMessage(on: req) == [bytes("world")])
    }

    @Test func otherShapesAreNotLentButArriveWhole() throws {
        let (context, router, dealer) = try connected(.dealer)
        _ = context
        let shapes: [[[UInt8]]] = [
            [bytes("body")],
            [bytes("proxy"), [], bytes("body")],
            [[], bytes("one"), bytes("two")],
            [[], [], bytes("body")],  // two delimiters: the body is not the third frame
            [[]],
        ]
        for shape in shapes {
            try dealer.send(shape)
            var lent = 0
            let received = try router.receiveRouted { _, _ in lent += 1 }
            #expect(lent == 0)
            guard case .other(let message) = received.message else {
                Issue.record("\(shape) was lent as plain")
                continue
            }
            #expect(message == .frames([bytes("peer")] + shape))
        }
        // And the next plain message after them is lent again, whole.
        try dealer.send([[], bytes("last")])
        var body: [UInt8] = []
        let received = try router.receiveRouted { _, lent in body = [UInt8](lent) }
        guard case .lent = received.message else {
            Issue.record("the plain message after the others was not lent")
            return
        }
        #expect(body == bytes("last"))
    }

    @Test func anEmptyBodyIsLentAsAnEmptyBuffer() throws {
        let (context, router, dealer) = try connected(.dealer)
        _ = context
        try dealer.send([[], []])
        var sizes = (0, 0)
        let received = try router.receiveRouted { routingID, body in sizes = (routingID.count, body.count) }
        guard case .lent = received.message else {
            Issue.record("[delimiter][empty body] was not lent as plain")
            return
        }
        #expect(sizes == (4, 0))
        try bytes("peer").withUnsafeBytes { routingID in
            try router.sendPlain(routingID: routingID, body: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        #expect(try receiveMessage(on: dealer) == [[], []])
    }

    /// Replies sent from `LentBytes` arrive whole, and each holds the bytes exactly until the peer has it: while one
    /// waits unread the owner is not alone (writing into the bytes then would change what the peer reads), and once
    /// all are read it is.
    @Test func repliesLentFromBytesHoldThemUntilDeliveredAndArriveWhole() async throws {
        let (context, router, dealer) = try connected(.dealer)
        _ = context
        var owner = LentBytes(capacity: 256)
        let bodies = [String(repeating: "a", count: 34), "short", String(repeating: "z", count: 200)]
        var ranges: [Range<Int>] = []
        var offset = 0
        for body in bodies {
            let utf8 = bytes(body)
            utf8.withUnsafeBytes {
                owner.bytes.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count)
            }
            ranges.append(offset..<(offset + utf8.count))
            offset += utf8.count
        }
        owner.lend(frames: bodies.filter { ZeroMQSocket.lendsFrame(ofCount: $0.utf8.count) }.count)
        try bytes("peer").withUnsafeBytes { routingID in
            for range in ranges {
                try router.sendPlain(
                    routingID: routingID,
                    body: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(owner.bytes)[range]),
                    lentFrom: owner,
                    dontWait: true
                )
            }
        }
        #expect(!isKnownUniquelyReferenced(&owner), "the frames waiting unread hold the bytes")
        #expect(owner.hasFramesOut)
        for body in bodies {
            #expect(try receiveMessage(on: dealer) == [[], bytes(body)])
        }
        let deadline = ContinuousClock.now + patience
        while !isKnownUniquelyReferenced(&owner), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(isKnownUniquelyReferenced(&owner), "every frame let go of the bytes once read")
        #expect(!owner.hasFramesOut)
    }

    @Test func aLentReplyThatCannotBeRoutedHoldsNothing() throws {
        let (context, router, _) = try connected(.dealer)
        _ = context
        try router.setOption(.routerMandatory(true))
        var owner = LentBytes(capacity: 64)
        owner.bytes.initializeMemory(as: UInt8.self, repeating: UInt8(ascii: "x"))
        owner.lend(frames: 1)
        #expect(!isKnownUniquelyReferenced(&owner), "a frame lent and not yet sent holds the bytes")
        #expect(throws: ZeroMQError.hostUnreachable) {
            try bytes("nobody").withUnsafeBytes { routingID in
                try router.sendPlain(routingID: routingID, body: UnsafeRawBufferPointer(owner.bytes), lentFrom: owner)
            }
        }
        #expect(isKnownUniquelyReferenced(&owner) && !owner.hasFramesOut)
    }

    @Test func aPlainReplyToAPeerThatLeftIsUnroutable() throws {
        let (context, router, _) = try connected(.dealer)
        _ = context
        try router.setOption(.routerMandatory(true))
        #expect(throws: ZeroMQError.hostUnreachable) {
            try bytes("nobody").withUnsafeBytes { routingID in
                try bytes("x").withUnsafeBytes { body in try router.sendPlain(routingID: routingID, body: body) }
            }
        }
    }
}
