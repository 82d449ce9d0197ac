import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import Testing
import ZeroMQ

@testable import PreflightAgent

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Holds every request whose id starts with `held` (its `Responder` kept for the test) and answers any other
/// at once.
private final class HoldingHandler: RequestHandler {
    let held = Mutex<[Responder]>([])

    func handle(
        _ body: UnsafeBufferPointer<UInt8>,
        role: EndpointRole,
        request: IncomingRequest,
        reply: inout JSONWriter
    ) -> Bool {
        if String(decoding: body, as: UTF8.self).contains(#""id":"held"#), let responder = request.admit() {
            held.withLock { $0.append(responder) }
            return false
        }
        reply.writeRaw(Array(#"{"v":1,"id":"now","ok":true,"result":{}}"#.utf8))
        return true
    }
}

private final class StopFlag: Sendable {
    let done = Atomic<Bool>(false)
}

/// The I/O loop's stop, through real sockets: the drain refuses what arrives, lets work in flight reply, and the
/// `agent.stopping` announcement is queued in the same step that begins it.
@Suite struct IPCServerStopTests {
    /// Polls `socket` for one message for up to 20 s.
    private static func receive(_ socket: ZeroMQSocket) throws -> [[UInt8]] {
        var items = [PollItem(socket: socket, events: .readable)]
        guard try poll(&items, timeout: .seconds(20)) > 0 else { throw CancellationError() }
        return try socket.receive()
    }

    private static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = MonotonicInstant.now + .seconds(20)
        while !condition() {
            guard MonotonicInstant.now < deadline else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aRequestSentOnTheStoppingEventIsRefusedAndWorkInFlightStillReplies() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pf-stop-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let handler = HoldingHandler()
        let server = try IPCServer(
            endpoints: IPCServer.Endpoints(
                app: "ipc://\(folder)/app.sock",
                admin: "ipc://\(folder)/admin.sock",
                events: "ipc://\(folder)/events.sock"
            ),
            handler: handler,
            maxBodyBytes: 65_536,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        try await server.start()

        let context = try ZeroMQContext()
        let app = try context.makeSocket(.dealer)
        let events = try context.makeSocket(.sub)
        defer {
            app.close()
            events.close()
        }
        for socket in [app, events] { try socket.setOption(.linger(milliseconds: 0)) }
        try app.connect("ipc://\(folder)/app.sock")
        try events.setOption(.subscribe(Array("agent.stopping".utf8)))
        try events.connect("ipc://\(folder)/events.sock")
        // A PUB drops what no subscriber has asked for yet: wait until the loop has read the subscription.
        try await Self.waitUntil { server.subscriptions.wants(.agentStopping) }

        try app.send([[], Array(#"{"v":1,"id":"held","cmd":"ping"}"#.utf8)])
        try await Self.waitUntil { handler.held.withLock { $0.count } == 1 }

        let announcement = (topic: "agent.stopping", body: Array(#"{"topic":"agent.stopping"}"#.utf8))
        // Watched with a deadline rather than awaited: a stop that never ends fails the test instead of
        // hanging the run.
        let stopped = StopFlag()
        Task {
            await server.stop(grace: .seconds(60), announcing: announcement)
            stopped.done.store(true, ordering: .releasing)
        }

        let event = try Self.receive(events)
        #expect(event == [Array("agent.stopping".utf8), announcement.body])

        // Sent only once the event is in hand: refused, however the threads were scheduled.
        try app.send([[], Array(#"{"v":1,"id":"late","cmd":"ping"}"#.utf8)])
        let refused = try JSONReader.read(try Self.receive(app).last ?? [])
        #expect(refused["id"] == "late")
        #expect(refused["error"]?["code"] == "shutting_down")

        // The work admitted before the stop still replies, and its reply ends the drain long before the grace.
        handler.held.withLock { $0[0] }.respond(Array(#"{"v":1,"id":"held","ok":true,"result":{}}"#.utf8))
        let answered = try JSONReader.read(try Self.receive(app).last ?? [])
        #expect(answered["id"] == "held")
        #expect(answered["ok"] == true)
        try await Self.waitUntil { stopped.done.load(ordering: .acquiring) }
        #expect(server.counters.inFlight == 0)
    }
}
