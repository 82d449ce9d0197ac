import Logging
import PassEntitlement
import PreflightCore
import PreflightProtocol
import Synchronization
import TargetOffers
import Testing
import UpstreamHTTP
import ZeroMQ

@testable import PreflightAgent

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An upstream that holds every request until the test lets them go, then refuses the connection: work
/// that waits on the network stays in flight exactly as long as a test needs it to.
final class HeldTransport: HTTPTransport {
    private let state = Mutex<(released: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func release() {
        let waiters = state.withLock { state in
            state.released = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.released { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        throw TransportError(.connection, "refused by the test")
    }
}

/// The IPC server's side of the seam, in process: the real `IPCAdmission` behind a mutex, and the
/// replies the dispatcher delivers, as `IPCServer` would send them.
final class InProcessIPC: ReplySink {
    private let state: Mutex<(admission: IPCAdmission, delivered: [[[UInt8]]])>

    init(limits: AdmissionLimits) {
        var admission = IPCAdmission(limits: limits)
        admission.started()
        state = Mutex((admission, []))
    }

    var inFlight: Int { state.withLock { $0.admission.inFlight } }

    func admit(peer: [UInt8]) -> Bool {
        state.withLock { $0.admission.admit(peer: peer) }
    }

    func deliver(role: EndpointRole, reply: RouterMessage) {
        state.withLock { state in
            state.admission.release(peer: reply.routingID)
            state.delivered.append(reply.frames)
        }
    }

    /// Sends a request as `peer` would, and returns the reply the handler gave at once, if any.
    func send(
        _ handler: some RequestHandler,
        _ command: String,
        args: JSONObject? = nil,
        id: String,
        role: EndpointRole = .app,
        peer: String = "peer-1"
    ) throws -> JSONValue? {
        var request: JSONObject = ["v": 1, "id": .string(id), "cmd": .string(command)]
        if let args { request["args"] = .object(args) }
        let body = JSONWriter.encode(.object(request))
        let message = RouterMessage.plain(routingID: Array(peer.utf8), body: body)
        var reply = JSONWriter()
        let answered = body.withUnsafeBufferPointer { body in
            handler.handle(
                body,
                role: role,
                request: IncomingRequest(sink: self, role: role, message: message),
                reply: &reply
            )
        }
        // A request answered later writes nothing now.
        #expect(answered || reply.bytes.isEmpty)
        guard answered else { return nil }
        // Its batch ends, as the I/O thread's does before it sends the replies.
        handler.endOfBatch(receivedAt: .now)
        return try JSONReader.read(reply.bytes)
    }

    /// The deferred reply to request `id`, once it has been delivered.
    func reply(to id: String) async throws -> JSONValue {
        let deadline = MonotonicInstant.now + .seconds(20)
        while MonotonicInstant.now < deadline {
            let found = state.withLock { state in
                state.delivered.lazy.compactMap { try? JSONReader.read($0[$0.count - 1]) }.first {
                    $0["id"] == .string(id)
                }
            }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw CancellationError()
    }
}

/// Dispatch, `unknown_command`, `not_permitted` and admission (`overloaded`) driven from Swift through the
/// `ReplySink` seam that `IPCServer` implements: the real dispatcher, Target and Adobe Pass services and
/// request-work group, with an upstream that holds requests until told.
@Suite struct DispatchSeamTests {
    struct Agent {
        let dispatcher: CommandDispatcher
        let transport: HeldTransport
        let work: RequestWorkService
    }

    private static func withAgent(_ body: (Agent) async throws -> Void) async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pf-seam-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = AgentConfiguration()
        configuration.target.clientCode = "acme"
        configuration.target.serverURL = "http://127.0.0.1:9"
        configuration.agent.stateDirectory = folder
        let transport = HeldTransport()
        let target = TargetService(
            configuration: configuration.target.serviceConfiguration,
            transport: transport,
            stateDirectory: nil,
            logger: logger,
            publish: .none
        )
        let pass = Entitlement(
            configuration: configuration.pass.serviceConfiguration,
            transport: transport,
            stateDirectory: folder,
            logger: logger,
            publish: .none
        )
        let work = RequestWorkService()
        let dispatcher = CommandDispatcher(
            runtime: AgentRuntime(configuration: configuration, configurationPath: nil),
            target: target,
            pass: pass,
            statistics: CommandStatistics(),
            work: work,
            logger: logger
        )
        let running = Task { await work.run() }
        defer {
            transport.release()
            running.cancel()
        }
        try await body(Agent(dispatcher: dispatcher, transport: transport, work: work))
    }

    @Test func cheapCommandsAreAnsweredAtOnce() async throws {
        try await Self.withAgent { agent async throws in
            let ipc = InProcessIPC(limits: AdmissionLimits())
            let ping = try #require(try ipc.send(agent.dispatcher, "ping", id: "1"))
            #expect(ping["ok"] == true && ping["result"]?["version"] == .string(preflightVersion))
            let unknown = try #require(try ipc.send(agent.dispatcher, "pong", id: "2"))
            #expect(unknown["error"]?["code"] == "unknown_command")
        }
    }

    @Test func adminCommandsAreRefusedOnTheAppEndpointOnly() async throws {
        try await Self.withAgent { agent async throws in
            let ipc = InProcessIPC(limits: AdmissionLimits())
            for command in Command.allCases where command.declaration.access == .adminOnly {
                let refused = try #require(try ipc.send(agent.dispatcher, command.wireName, id: "a", role: .app))
                #expect(refused["error"]?["code"] == "not_permitted", "\(command.wireName)")
            }
            let status = try #require(try ipc.send(agent.dispatcher, "offers.list", id: "b", role: .admin))
            #expect(status["result"]?["offers"] == .array([]))
        }
    }

    /// Work waiting on the network takes a place; past the limits the agent answers `overloaded` at once,
    /// and a place comes back when the work replies.
    @Test func workPastTheLimitsIsOverloadedAndPlacesComeBack() async throws {
        try await Self.withAgent { agent async throws in
            let ipc = InProcessIPC(limits: AdmissionLimits(maxInFlight: 2, maxInFlightPerPeer: 1))
            let prefetch: JSONObject = ["mboxes": [["name": "logo"]]]
            #expect(try ipc.send(agent.dispatcher, "prefetch", args: prefetch, id: "1", peer: "a") == nil)
            let samePeer = try #require(try ipc.send(agent.dispatcher, "prefetch", args: prefetch, id: "2", peer: "a"))
            #expect(samePeer["error"]?["code"] == "overloaded")
            #expect(try ipc.send(agent.dispatcher, "prefetch", args: prefetch, id: "3", peer: "b") == nil)
            let third = try #require(try ipc.send(agent.dispatcher, "prefetch", args: prefetch, id: "4", peer: "c"))
            #expect(third["error"]?["code"] == "overloaded")
            #expect(ipc.inFlight == 2)
            agent.transport.release()
            #expect(try await ipc.reply(to: "1")["result"]?["success"] == false)
            #expect(try await ipc.reply(to: "3")["result"]?["success"] == false)
            #expect(ipc.inFlight == 0)
            #expect(try ipc.send(agent.dispatcher, "prefetch", args: prefetch, id: "5", peer: "a") == nil)
            #expect(try await ipc.reply(to: "5")["ok"] == true)
        }
    }

    /// Work handed in after the request-work group has stopped still gets its reply: `shutting_down`.
    @Test func workAfterTheGroupStoppedIsAnsweredShuttingDown() async throws {
        try await Self.withAgent { agent async throws in
            let ipc = InProcessIPC(limits: AdmissionLimits())
            let stopped = RequestWorkService()
            let dispatcher = CommandDispatcher(
                runtime: agent.dispatcher.runtime,
                target: agent.dispatcher.target,
                pass: agent.dispatcher.pass,
                statistics: CommandStatistics(),
                work: stopped,
                logger: agent.dispatcher.logger
            )
            stopped.stopTakingWork()
            #expect(try ipc.send(dispatcher, "prefetch", args: ["mboxes": [["name": "logo"]]], id: "1") == nil)
            #expect(try await ipc.reply(to: "1")["error"]?["code"] == "shutting_down")
            #expect(ipc.inFlight == 0)
        }
    }
}

@Suite struct IPCAdmissionTests {
    @Test func limitsArePerAgentAndPerPeer() {
        var admission = IPCAdmission(limits: AdmissionLimits(maxInFlight: 3, maxInFlightPerPeer: 2))
        let answers = [[1], [1], [1], [2], [3]].map { admission.admit(peer: $0) }
        #expect(answers == [true, true, false, true, false])
        #expect(admission.inFlight == 3 && admission.refusedOverloaded == 2)
        admission.release(peer: [1])
        let afterRelease = admission.admit(peer: [3])
        #expect(afterRelease)
        admission.release(peer: [9])  // never admitted: the total only never goes below zero
        #expect(admission.inFlight == 2)
    }

    @Test func stopDrainsUntilWorkRepliedOrTheGraceIsOver() {
        let now = MonotonicInstant.now
        var admission = IPCAdmission()
        let beforeStart = admission.stop(now: now, grace: .seconds(1))
        #expect(beforeStart == .returnNow)  // never started
        admission.started()
        #expect(!admission.isDraining && !admission.drainIsOver(now: now))
        let admitted = admission.admit(peer: [1])
        #expect(admitted)
        let first = admission.stop(now: now, grace: .milliseconds(500))
        #expect(first == .waitForTheLoop)
        #expect(admission.isDraining)
        let second = admission.stop(now: now, grace: .seconds(9))
        #expect(second == .waitForTheLoop)  // a second stop waits too, and keeps the first deadline
        #expect(!admission.drainIsOver(now: now + .milliseconds(499)))
        #expect(admission.drainIsOver(now: now + .milliseconds(500)))
        admission.release(peer: [1])
        #expect(admission.drainIsOver(now: now))
        admission.finished()
        let afterStop = admission.stop(now: now, grace: .seconds(1))
        #expect(admission.phase == .stopped && afterStop == .returnNow)
    }
}
