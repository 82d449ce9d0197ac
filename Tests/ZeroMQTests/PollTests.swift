import Foundation
import PreflightCore
import Testing

@testable import ZeroMQ

@Suite struct PollTests {
    @Test func pollReportsPlainFileDescriptorReadableAlone() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        try socket.bind(uniqueInprocEndpoint())
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }

        var items = [
            PollItem(socket: socket, events: .readable),
            PollItem(fileDescriptor: fds[0], events: .readable),
        ]
        #expect(try poll(&items, timeout: .zero) == 0)

        var byte: UInt8 = 1
        try #require(write(fds[1], &byte, 1) == 1)
        #expect(try poll(&items, timeout: patience) == 1)
        #expect(items[0].returnedEvents == [])
        #expect(items[1].returnedEvents == .readable)
    }

    @Test func pollReportsSocketAndFileDescriptorTogether() throws {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let receiver = try makeSocket(context, .dealer)
        try receiver.bind(endpoint)
        let sender = try makeSocket(context, .dealer)
        try sender.connect(endpoint)
        var fds: [CInt] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }

        try sender.send([bytes("hello")])
        var byte: UInt8 = 1
        try #require(write(fds[1], &byte, 1) == 1)
        var items = [
            PollItem(fileDescriptor: fds[0], events: .readable),
            PollItem(socket: receiver, events: [.readable, .writable]),
        ]
        // Both are ready at once, or the socket becomes ready after the pipe: poll until both are seen.
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var count = 0
        while count < 2 && clock.now < deadline {
            count = try poll(&items, timeout: patience)
        }
        #expect(count == 2)
        #expect(items[0].returnedEvents == .readable)
        #expect(items[1].returnedEvents == [.readable, .writable])
    }

    @Test func pollWithZeroTimeoutReturnsZeroWhenNothingIsPending() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        try socket.bind(uniqueInprocEndpoint())

        var items = [PollItem(socket: socket, events: .readable)]
        #expect(try poll(&items, timeout: .zero) == 0)
        #expect(items[0].returnedEvents == [])
    }

    @Test func pollWaitsForTheWholeTimeout() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        try socket.bind(uniqueInprocEndpoint())

        var items = [PollItem(socket: socket, events: .readable)]
        let clock = ContinuousClock()
        let start = clock.now
        // zmq_poll alone can return up to 1 ms early; the wrapper waits out the rest.
        #expect(try poll(&items, timeout: .microseconds(30_500)) == 0)
        #expect(clock.now - start >= .microseconds(30_500))
    }

    @Test func pollOverNoItemsWaitsForTheTimeout() throws {
        var items: [PollItem] = []
        let clock = ContinuousClock()
        let start = clock.now
        #expect(try poll(&items, timeout: .milliseconds(5)) == 0)
        #expect(clock.now - start >= .milliseconds(5))
    }

    @Test func pendingEventsAndFileDescriptorReflectQueuedMessages() throws {
        let context = try ZeroMQContext()
        let endpoint = uniqueInprocEndpoint()
        let receiver = try makeSocket(context, .dealer)
        try receiver.bind(endpoint)
        let sender = try makeSocket(context, .dealer)
        try sender.connect(endpoint)

        #expect(try receiver.fileDescriptor() >= 0)
        #expect(!(try receiver.pendingEvents().contains(.readable)))
        try sender.send([bytes("hello")])

        // Poll the notification descriptor as another event loop would, then ask ZMQ_EVENTS.
        let descriptor = try receiver.fileDescriptor()
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var readable = try receiver.pendingEvents().contains(.readable)
        while !readable && clock.now < deadline {
            var items = [PollItem(fileDescriptor: descriptor, events: .readable)]
            _ = try poll(&items, timeout: .milliseconds(100))
            readable = try receiver.pendingEvents().contains(.readable)
        }
        #expect(readable)
        #expect(try receiver.receive(dontWait: true) == [bytes("hello")])
        #expect(!(try receiver.pendingEvents().contains(.readable)))
    }

    @Test func pollOnClosedSocketThrowsNotSocket() throws {
        let context = try ZeroMQContext()
        let socket = try makeSocket(context, .dealer)
        socket.close()

        var items = [PollItem(socket: socket, events: .readable)]
        #expect(throws: ZeroMQError.notSocket) { try poll(&items, timeout: .zero) }
    }
}

/// A wait's timeout in poll(2)'s milliseconds: a remainder under a millisecond still waits (rounded up, not to a
/// spin of zeros), a deadline passed is 0, and one past what a C `int` holds (or saturated) is capped.
@Suite struct PollMillisecondsTests {
    @Test func remaindersRoundUpPastDeadlinesAreZeroAndFarOnesAreCapped() {
        let now = MonotonicInstant(nanoseconds: 10_000_000_000)
        #expect(pollMilliseconds(until: now + .microseconds(1), now: now) == 1)
        #expect(pollMilliseconds(until: now + .milliseconds(5), now: now) == 5)
        #expect(pollMilliseconds(until: now + .microseconds(5001), now: now) == 6)
        #expect(pollMilliseconds(until: now, now: now) == 0)
        #expect(pollMilliseconds(until: now - .seconds(1), now: now) == 0)
        #expect(pollMilliseconds(until: now + .seconds(100_000_000), now: now) == Int(Int32.max))
        #expect(pollMilliseconds(until: MonotonicInstant(nanoseconds: .max), now: now) == Int(Int32.max))
        #expect(pollMilliseconds(until: MonotonicInstant(nanoseconds: .min), now: now) == 0)
    }
}
