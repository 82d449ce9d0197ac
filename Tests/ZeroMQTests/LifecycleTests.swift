import Dispatch
import Foundation
import Synchronization
import Testing
import ZeroMQ

/// What the receiving thread in `contextShutdownFailsBlockingReceive` saw, handed back to the test.
private final class ReceiveOutcome: Sendable {
    let ready = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<[[UInt8]], ZeroMQError>?>(nil)
}

@Suite struct LifecycleTests {
    @Test func contextShutdownFailsBlockingReceive() throws {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let outcome = ReceiveOutcome()
        // Sockets are not Sendable, so the receiving thread makes its own.
        let thread = Thread {
            do throws(ZeroMQError) {
                let socket = try context.makeSocket(.rep)
                try socket.bind(endpoint)
                outcome.ready.signal()
                let message = try socket.receive()
                outcome.result.withLock { $0 = .success(message) }
            } catch {
                outcome.ready.signal()
                outcome.result.withLock { $0 = .failure(error) }
            }
            outcome.done.signal()
        }
        thread.start()

        try #require(outcome.ready.wait(timeout: .now() + .seconds(10)) == .success)
        // Nothing can arrive, so the receive is (or is about to be) blocked until the context shuts down.
        #expect(outcome.done.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
        context.shutdown()
        try #require(outcome.done.wait(timeout: .now() + .seconds(10)) == .success)
        let result = outcome.result.withLock { $0 }
        #expect(result == .failure(.contextTerminated))
        #expect(throws: ZeroMQError.contextTerminated) { try context.makeSocket(.dealer) }
    }

    /// How the signalled thread waits for its message.
    enum BlockingCall: CaseIterable, Sendable {
        /// `receive()`: libzmq's own poll(2) fails with EINTR, and libzmq passes it up.
        case receive
        /// `poll(_:timeout:)` with no timeout, then a receive.
        case poll
        /// `MessageWaiter.wait` with a timeout (each retry sleeps for what remains of it), then a receive.
        case waiter
    }

    /// Waits for a message on `socket` as `call` says; a wait that ends with nothing fails `.interrupted`, the
    /// signal it would have been cut short by.
    private static func message(on socket: ZeroMQSocket, by call: BlockingCall) throws(ZeroMQError) -> [[UInt8]] {
        switch call {
        case .receive:
            return try socket.receive()
        case .poll:
            var items = [PollItem(socket: socket, events: .readable)]
            guard try poll(&items, timeout: nil) == 1 else { throw .interrupted }
            return try socket.receive(dontWait: true)
        case .waiter:
            var waiter = try MessageWaiter(sockets: [socket], fileDescriptors: [])
            while true {
                // A fresh socket is reported until drained: receive until `.wouldBlock`, then wait.
                guard try waiter.wait(timeout: .seconds(600)).socket(0) else { throw .interrupted }
                do throws(ZeroMQError) {
                    return try socket.receive(dontWait: true)
                } catch  where error == .wouldBlock {
                    waiter.drained(0)
                }
            }
        }
    }

    @Test(arguments: BlockingCall.allCases)
    func signalsDoNotInterruptABlockingCall(_ call: BlockingCall) throws {
        // A handler that returns makes a poll(2) (libzmq's, or the wrapper's own) fail with EINTR; the wrapper must
        // carry on waiting rather than throw `.interrupted` or return early.
        signal(SIGUSR1) { _ in }
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let outcome = ReceiveOutcome()
        let receiverThread = Mutex<pthread_t?>(nil)
        // The receiving thread must not exit while it may still be signalled.
        let mayExit = DispatchSemaphore(value: 0)
        let thread = Thread {
            // The test runner's threads block SIGUSR1, and this one inherited that mask.
            var usr1 = sigset_t()
            sigemptyset(&usr1)
            sigaddset(&usr1, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &usr1, nil)
            receiverThread.withLock { $0 = pthread_self() }
            do throws(ZeroMQError) {
                let socket = try context.makeSocket(.dealer)
                try socket.setOption(.linger(milliseconds: 0))
                try socket.bind(endpoint)
                outcome.ready.signal()
                let message = try Self.message(on: socket, by: call)
                outcome.result.withLock { $0 = .success(message) }
            } catch {
                outcome.ready.signal()
                outcome.result.withLock { $0 = .failure(error) }
            }
            outcome.done.signal()
            mayExit.wait()
        }
        thread.start()
        defer { mayExit.signal() }

        try #require(outcome.ready.wait(timeout: .now() + .seconds(10)) == .success)
        let target = try #require(receiverThread.withLock { $0 })
        var finished = false
        for _ in 0..<50 where !finished {
            pthread_kill(target, SIGUSR1)
            finished = outcome.done.wait(timeout: .now() + .milliseconds(2)) == .success
        }
        #expect(!finished, "receive returned before any message was sent")

        let sender = try makeSocket(context, .dealer)
        try sender.connect(endpoint)
        try sender.send([bytes("after the signals")])
        if !finished {
            try #require(outcome.done.wait(timeout: .now() + .seconds(10)) == .success)
        }
        #expect(outcome.result.withLock { $0 } == .success([bytes("after the signals")]))
    }

    @Test func contextRejectsNegativeIOThreads() throws {
        #expect(throws: ZeroMQError.invalidArgument) { try ZeroMQContext(ioThreads: -1) }
        // Zero I/O threads is enough for inproc.
        let context = try ZeroMQContext(ioThreads: 0)
        let endpoint = uniqueInprocEndpoint()
        let a = try makeSocket(context, .dealer)
        try a.bind(endpoint)
        let b = try makeSocket(context, .dealer)
        try b.connect(endpoint)
        try b.send([bytes("x")])
        #expect(try receiveMessage(on: a) == [bytes("x")])
    }

    @Test(arguments: [
        (SocketType.dealer, SocketOption.linger(milliseconds: -1)),
        (.dealer, .linger(milliseconds: 0)),
        (.dealer, .sendHighWaterMark(10)),
        (.dealer, .receiveHighWaterMark(0)),
        (.dealer, .maxMessageSize(-1)),
        (.dealer, .maxMessageSize(1 << 40)),
        (.dealer, .sendTimeout(milliseconds: 100)),
        (.dealer, .receiveTimeout(milliseconds: -1)),
        (.dealer, .immediate(true)),
        (.dealer, .immediate(false)),
        (.dealer, .routingID([1])),
        (.dealer, .routingID([UInt8](repeating: 0x41, count: 255))),
        (.router, .routerMandatory(true)),
        (.router, .routerMandatory(false)),
        (.router, .zapDomain("preflight")),
        (.sub, .subscribe([])),
        (.sub, .subscribe(Array("topic".utf8))),
        (.sub, .unsubscribe(Array("topic".utf8))),
        (.sub, .unsubscribe([])),
    ])
    func setOptionAcceptsEveryOptionKind(on type: SocketType, _ option: SocketOption) throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, type)
        try socket.setOption(option)
    }

    @Test func setOptionRejectsInvalidValues() throws {
        let context = try ZeroMQContext()
        let dealer = try makeSocket(context, .dealer)
        let publisher = try makeSocket(context, .pub)

        #expect(throws: ZeroMQError.invalidArgument) { try dealer.setOption(.routingID([])) }
        #expect(throws: ZeroMQError.invalidArgument) {
            try dealer.setOption(.routingID([UInt8](repeating: 1, count: 256)))
        }
        #expect(throws: ZeroMQError.invalidArgument) { try dealer.setOption(.linger(milliseconds: -2)) }
        #expect(throws: ZeroMQError.invalidArgument) { try dealer.setOption(.zapDomain("")) }
        #expect(throws: ZeroMQError.invalidArgument) { try publisher.setOption(.subscribe(bytes("x"))) }
        #expect(throws: ZeroMQError.invalidArgument) { try dealer.setOption(.routerMandatory(true)) }
    }

    @Test func closeIsIdempotentAndLaterCallsThrowNotSocket() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        let endpoint = uniqueInprocEndpoint()
        try socket.bind(endpoint)
        socket.close()
        socket.close()

        #expect(throws: ZeroMQError.notSocket) { try socket.bind(uniqueInprocEndpoint()) }
        #expect(throws: ZeroMQError.notSocket) { try socket.connect(uniqueInprocEndpoint()) }
        #expect(throws: ZeroMQError.notSocket) { try socket.unbind(endpoint) }
        #expect(throws: ZeroMQError.notSocket) { try socket.disconnect(endpoint) }
        #expect(throws: ZeroMQError.notSocket) { try socket.send([bytes("x")]) }
        #expect(throws: ZeroMQError.notSocket) { try socket.receive(dontWait: true) }
        #expect(throws: ZeroMQError.notSocket) { try socket.setOption(.linger(milliseconds: 0)) }
        #expect(throws: ZeroMQError.notSocket) { try socket.lastEndpoint() }
        #expect(throws: ZeroMQError.notSocket) { try socket.fileDescriptor() }
        #expect(throws: ZeroMQError.notSocket) { try socket.pendingEvents() }
    }

    @Test(.timeLimit(.minutes(1)))
    func closedSocketsLetTheContextTerminate() throws {
        // If a socket were not closed, the context's deinit (zmq_ctx_term) would block and this test would hang.
        for _ in 0..<20 {
            let context = try ZeroMQContext()
            let endpoint = uniqueInprocEndpoint()
            let a = try makeSocket(context, .dealer)
            try a.bind(endpoint)
            let b = try makeSocket(context, .dealer)
            try b.connect(endpoint)
            try b.send([bytes("unread")])
            a.close()
        }
    }

    @Test func socketOutlivesDroppedContextReference() throws {
        // The socket's own reference keeps the context alive after the caller's is gone.
        let endpoint = uniqueInprocEndpoint()
        let (a, b) = try { () throws -> (ZeroMQSocket, ZeroMQSocket) in
            let context = try ZeroMQContext()
            let a = try makeSocket(context, .dealer)
            try a.bind(endpoint)
            let b = try makeSocket(context, .dealer)
            try b.connect(endpoint)
            return (a, b)
        }()
        try b.send([bytes("still here")])
        #expect(try receiveMessage(on: a) == [bytes("still here")])
    }

    @Test func unbindAndDisconnectOfUnknownEndpointThrowNoSuchEndpoint() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        let endpoint = uniqueInprocEndpoint()

        #expect(throws: ZeroMQError.noSuchEndpoint) { try socket.unbind(endpoint) }
        #expect(throws: ZeroMQError.noSuchEndpoint) { try socket.disconnect(endpoint) }
        try socket.bind(endpoint)
        try socket.unbind(endpoint)
        try socket.connect(endpoint)
        try socket.disconnect(endpoint)
    }

    @Test func malformedEndpointsAreRejected() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)

        #expect(throws: ZeroMQError.invalidArgument) { try socket.bind("no-scheme") }
        #expect(throws: ZeroMQError.protocolNotSupported) { try socket.bind("carrier-pigeon://coop") }
        #expect(throws: ZeroMQError.invalidArgument) { try socket.connect("tcp://") }
    }

    @Test func bindingTheSameInprocNameTwiceThrowsAddressInUse() throws {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let first = try makeSocket(context, .dealer)
        try first.bind(endpoint)
        let second = try makeSocket(context, .dealer)

        #expect(throws: ZeroMQError.addressInUse) { try second.bind(endpoint) }
    }

    @Test func lastEndpointReportsTheConcreteTCPPort() throws {
        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)
        #expect(try server.lastEndpoint() == "")
        try server.bind("tcp://127.0.0.1:*")

        let endpoint = try server.lastEndpoint()
        let prefix = "tcp://127.0.0.1:"
        try #require(endpoint.hasPrefix(prefix))
        let port = try #require(Int(endpoint.dropFirst(prefix.count)))
        #expect((1...65_535).contains(port))

        let client = try makeSocket(context, .req)
        try client.connect(endpoint)
        try client.send([bytes("over tcp")])
        #expect(try receiveMessage(on: server) == [bytes("over tcp")])
    }

    @Test func errorDescriptionNamesTheErrno() {
        #expect(ZeroMQError.wouldBlock.description == "EAGAIN: Resource temporarily unavailable")
        #expect(ZeroMQError.hostUnreachable.description.hasPrefix("EHOSTUNREACH: "))
        #expect(ZeroMQError.contextTerminated.description == "ETERM: Context was terminated")
        #expect(ZeroMQError.invalidState.description.hasPrefix("EFSM: "))
        #expect(ZeroMQError.addressInUse.description == "EADDRINUSE: Address already in use")
        #expect(ZeroMQError(code: 99_999).description.hasPrefix("errno 99999: "))
        #expect(ZeroMQError(code: EAGAIN) == .wouldBlock)
        #expect(ZeroMQError.wouldBlock != .interrupted)
    }

    @Test func versionIsTheLoadedLibzmq() {
        let version = zeroMQVersion()
        #expect(version.major == 4)
        #expect(version.minor >= 3)
    }
}
