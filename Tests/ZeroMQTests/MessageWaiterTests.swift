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

    /// What an app's loop does with a reported socket: receives until `.wouldBlock`, then says it is drained.
    private func drain(_ socket: ZeroMQSocket, index: Int, of waiter: inout MessageWaiter) throws -> [[[UInt8]]] {
        var messages: [[[UInt8]]] = []
        while true {
            let message: [[UInt8]]
            do {
                message = try socket.receive(dontWait: true)
            } catch {
                guard error == .wouldBlock else { throw error }
                waiter.drained(index)
                return messages
            }
            messages.append(message)
        }
    }

    /// Drains until a wait without sleeping reports nothing: a fresh socket is reported until drained, and a
    /// peer's connection signals its descriptor without a message.
    private func settle(_ socket: ZeroMQSocket, _ waiter: inout MessageWaiter) throws {
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        while try waiter.wait(timeout: .zero).socket(0) {
            #expect(try drain(socket, index: 0, of: &waiter).isEmpty)
            try #require(clock.now < deadline, "the socket kept being reported")
        }
    }

    /// Waits until the socket's own descriptor is readable, without touching the socket: libzmq has handed the
    /// socket a command (such as "a pipe has messages") that nothing has taken in yet.
    private func waitForSignal(on socket: ZeroMQSocket) throws {
        var descriptor = pollfd(fd: try socket.fileDescriptor(), events: CShort(POLLIN), revents: 0)
        let milliseconds = CInt(patience.components.seconds * 1000)
        try #require(poll(&descriptor, 1, milliseconds) == 1, "the socket's descriptor never signalled")
    }

    @Test func aFreshSocketIsReportedAtOnceUntilDrained() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        #expect(try waiter.wait(timeout: patience) == MessageWaiter.Ready(sockets: 1, fileDescriptors: 0))
        #expect(try waiter.wait(timeout: patience) == MessageWaiter.Ready(sockets: 1, fileDescriptors: 0))
        #expect(!waiter.slept, "reported at once, not after sleeping")
        try settle(pair.router, &waiter)
        #expect(try waiter.wait(timeout: .zero) == .nothing)
    }

    @Test func reportsAMessageAndSleepsOnceItIsReceived() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        try settle(pair.router, &waiter)

        try pair.dealer.send([bytes("hello")])
        #expect(try waiter.wait(timeout: patience).socket(0))
        #expect(waiter.slept, "a drained socket is reported when its descriptor woke the wait")
        #expect(try drain(pair.router, index: 0, of: &waiter).map(\.last) == [bytes("hello")])
        #expect(try waiter.wait(timeout: .zero) == .nothing)
        waiter.used(0)
        #expect(try waiter.wait(timeout: .zero).socket(0))
        #expect(!waiter.slept, "a used socket is reported at once")
    }

    /// The edge-triggered descriptor: an operation on the socket can take in the signal of a message that is
    /// waiting, and the descriptor then stays silent. `used(_:)` makes the next wait report the socket anyway.
    @Test func reportsAUsedSocketWhoseSignalAnOperationTookIn() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        try settle(pair.router, &waiter)

        try pair.dealer.send([bytes("first")])
        try waitForSignal(on: pair.router)
        // Reading ZMQ_EVENTS is an operation: it takes the command in and leaves the descriptor silent.
        #expect(try pair.router.pendingEvents().contains(.readable))
        // Untold, the waiter trusts the silent descriptor of a drained socket...
        #expect(try waiter.wait(timeout: .milliseconds(20)) == .nothing)
        // ...told that the socket was used, it reports it without sleeping, and the message is there.
        waiter.used(0)
        #expect(try waiter.wait(timeout: .zero).socket(0))
        #expect(try drain(pair.router, index: 0, of: &waiter).map(\.last) == [bytes("first")])
    }

    @Test func aSocketNotDrainedIsReportedAgain() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        try settle(pair.router, &waiter)

        try pair.dealer.send([bytes("one")])
        try pair.dealer.send([bytes("two")])
        #expect(try waiter.wait(timeout: patience).socket(0))
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var first: [[UInt8]]?
        while first == nil && clock.now < deadline {
            first = try? pair.router.receive(dontWait: true)
        }
        #expect(first?.last == bytes("one"))
        // A bounded batch stops before the socket says it has no more: the next wait reports it at once.
        #expect(try waiter.wait(timeout: .zero).socket(0))
    }

    @Test func waitsTheWholeTimeoutWhenNothingComes() throws {
        let pair = try Pair()
        var waiter = try MessageWaiter(sockets: [pair.router], fileDescriptors: [])
        try settle(pair.router, &waiter)
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
        try settle(pair.router, &waiter)
        var byte: UInt8 = 1
        try #require(write(fds[1], &byte, 1) == 1)
        #expect(try waiter.wait(timeout: patience) == MessageWaiter.Ready(sockets: 0, fileDescriptors: 1))

        try pair.dealer.send([bytes("hello")])
        // The pipe stays readable; the message's signal comes in the background: wait until both are seen.
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var ready = MessageWaiter.Ready.nothing
        while !(ready.socket(0) && ready.fileDescriptor(0)) && clock.now < deadline {
            ready = try waiter.wait(timeout: patience)
        }
        #expect(ready == MessageWaiter.Ready(sockets: 1, fileDescriptors: 1))
    }

    @Test func refusesMoreThanThirtyTwoDescriptors() throws {
        #expect(throws: ZeroMQError.invalidArgument) {
            _ = try MessageWaiter(sockets: [], fileDescriptors: Array(repeating: 0, count: 33))
        }
    }
}
