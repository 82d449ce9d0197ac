import Foundation
import Testing
import ZeroMQ

@Suite struct MessageWaiterTests {
    /// A ROUTER bound and a DEALER connected to it over inproc.
    private struct Pair {
        let context: ZeroMQContext
        let router: ZeroMQSocket
        let dealer: ZeroMQSocket

        init() throws {
            context = try ZeroMQContext()
            let endpoint = uniqueInprocEndpoint()
            router = try makeSocket(context, .router)
            try router.bind(endpoint)
            dealer = try makeSocket(context, .dealer)
            try dealer.connect(endpoint)
        }
    }

    /// Waits until the socket's own descriptor is readable, without touching the socket: libzmq has handed the
    /// socket a command (such as "a pipe has messages") that nothing has taken in yet.
    private func waitForSignal(on socket: ZeroMQSocket) throws {
        var descriptor = pollfd(fd: try socket.fileDescriptor(), events: CShort(POLLIN), revents: 0)
        let milliseconds = CInt(patience.components.seconds * 1000)
        try #require(poll(&descriptor, 1, milliseconds) == 1, "the socket's descriptor never signalled")
    }

    @Test func reportsAMessageAndNothingOnceItIsReceived() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        #expect(try waiter.wait(timeout: .zero) == .nothing)

        try pair.dealer.send([bytes("hello")])
        let ready = try waiter.wait(timeout: patience)
        #expect(ready.socket(0))
        #expect(try pair.router.receive(dontWait: true).last == bytes("hello"))
        waiter.used(0)
        #expect(try waiter.wait(timeout: .zero) == .nothing)
    }

    /// The edge-triggered descriptor: an operation on the socket can take in the signal of a message that is
    /// waiting, and the descriptor then stays silent. `used(_:)` makes the next wait find the message anyway.
    @Test func findsAMessageWhoseSignalAnOperationTookIn() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        #expect(try waiter.wait(timeout: .zero).sockets == 0)  // the router is settled: nothing to receive

        try pair.dealer.send([bytes("first")])
        try waitForSignal(on: pair.router)
        // Reading ZMQ_EVENTS is an operation: it takes the command in and leaves the descriptor silent.
        #expect(try pair.router.pendingEvents().contains(.readable))
        // Without being told, the waiter trusts the silent descriptor of a settled socket...
        #expect(try waiter.wait(timeout: .milliseconds(20)).sockets == 0)
        // ...told that the socket was used, it reads ZMQ_EVENTS before sleeping, and finds the message.
        waiter.used(0)
        #expect(try waiter.wait(timeout: .zero).socket(0))
        #expect(try pair.router.receive(dontWait: true).last == bytes("first"))
    }

    @Test func aSignalWithoutAMessageDoesNotEndTheWaitEarly() throws {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let router = try makeSocket(context, .router)
        try router.bind(endpoint)
        var waiter = try MessageWaiter(sockets: [router], fileDescriptors: [])
        #expect(try waiter.wait(timeout: .zero).sockets == 0)

        // A peer connecting hands the router a command, and no message.
        let dealer = try makeSocket(context, .dealer)
        try dealer.connect(endpoint)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try waiter.wait(timeout: .milliseconds(200)) == .nothing)
        #expect(clock.now - start >= .milliseconds(200))
    }

    @Test func reportsAPlainDescriptorAndASocketTogether() throws {
        let pair = try Pair()
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [fds[0]])
        var byte: UInt8 = 1
        try #require(write(fds[1], &byte, 1) == 1)
        let first = try waiter.wait(timeout: patience)
        #expect(first == MessageWaiter.Ready(sockets: 0, fileDescriptors: 1))

        try pair.dealer.send([bytes("hello")])
        // The pipe is still readable; the message reaches the router in the background: wait until both are seen.
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var ready = MessageWaiter.Ready.nothing
        while !(ready.socket(0) && ready.fileDescriptor(0)) && clock.now < deadline {
            ready = try waiter.wait(timeout: patience)
        }
        #expect(ready.socket(0))
        #expect(ready.fileDescriptor(0))
    }

    @Test func refusesMoreThanThirtyTwoDescriptors() throws {
        #expect(throws: ZeroMQError.invalidArgument) {
            _ = try MessageWaiter(sockets: [], fileDescriptors: Array(repeating: 0, count: 33))
        }
    }
}
