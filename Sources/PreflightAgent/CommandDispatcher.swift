import Logging
import PassEntitlement
import PreflightCore
import PreflightProtocol
import Synchronization
import TargetOffers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// What the agent knows about itself, for `ping` and `status`. Shared by the I/O thread and async code.
public final class AgentRuntime: Sendable {
    public let startedAt = MonotonicInstant.now
    private let startedAtNanoseconds = SystemClock.monotonicNanoseconds()
    public let startedAtWallClock = Date()
    public let configurationPath: String?
    private let state: Mutex<State>

    private struct State: Sendable {
        var configuration: AgentConfiguration
        var requestLimits: RequestLimits
        var server: IPCServer?
    }

    public init(configuration: AgentConfiguration, configurationPath: String?) {
        self.configurationPath = configurationPath
        self.state = Mutex(State(configuration: configuration, requestLimits: RequestLimits(configuration)))
    }

    public var configuration: AgentConfiguration {
        get { state.withLock { $0.configuration } }
        set {
            state.withLock {
                $0.configuration = newValue
                $0.requestLimits = RequestLimits(newValue)
            }
        }
    }

    /// What every request is checked against, apart from the whole configuration so that the request
    /// path copies two integers and not every string of the configuration.
    struct RequestLimits: Sendable {
        var maxBodyBytes: Int
        var commands: CommandLimits

        init(_ configuration: AgentConfiguration) {
            maxBodyBytes = configuration.agent.maxBodyBytes
            commands = configuration.commandLimits
        }
    }

    var requestLimits: RequestLimits {
        state.withLock { $0.requestLimits }
    }

    var server: IPCServer? {
        get { state.withLock { $0.server } }
        set { state.withLock { $0.server = newValue } }
    }

    /// Publishes an event with the fields every event carries, if some subscriber receives its topic (the
    /// fields are built only then). Callable from any thread.
    public func publish(_ topic: EventTopic, _ fields: @autoclosure () -> JSONObject) {
        guard subscriptions.wants(topic) else { return }
        send(topic, fields())
    }

    /// How the services publish their events: the same check, then `send` (not `publish`, which would check
    /// again).
    public var events: EventPublisher {
        EventPublisher(wants: { [subscriptions] in subscriptions.wants($0) }, send: { self.send($0, $1) })
    }

    /// Sends an event some subscriber wants, with the fields every event carries.
    private func send(_ topic: EventTopic, _ fields: JSONObject) {
        guard let server else { return }
        let event = encoded(topic, fields)
        server.publish(topic: event.topic, body: event.body)
    }

    /// An event's topic and body, with the fields every event carries; nil when no subscriber receives it.
    /// For an event that must go out in the same step as a change of the server's state (`agent.stopping`,
    /// `IPCServer.stop(grace:announcing:)`).
    public func event(_ topic: EventTopic, _ fields: @autoclosure () -> JSONObject) -> (topic: String, body: [UInt8])? {
        guard subscriptions.wants(topic) else { return nil }
        return encoded(topic, fields())
    }

    private func encoded(_ topic: EventTopic, _ fields: JSONObject) -> (topic: String, body: [UInt8]) {
        var body = fields
        body["topic"] = .string(topic.topic)
        body["uptimeMs"] = .integer(uptimeMs)
        return (topic.topic, JSONWriter.encode(.object(body)))
    }

    /// The topics some subscriber receives, as the I/O thread learns them from the events socket.
    public let subscriptions = EventSubscriptions()

    public var uptimeMs: Int64 {
        Int64((SystemClock.monotonicNanoseconds() - startedAtNanoseconds) / 1_000_000)
    }
}

/// Decodes every request, enforces which endpoint may send which command, and routes it.
///
/// Runs on the I/O thread: everything here is cheap, and anything that would wait on the network is
/// handed to a task that replies through the `Responder`. Every reply is timed into `statistics`.
public struct CommandDispatcher: RequestHandler {
    let runtime: AgentRuntime
    let target: TargetService
    let pass: Entitlement
    let statistics: CommandStatistics
    /// Where work that waits on the network runs.
    let work: RequestWorkService
    let logger: Logger

    public init(
        runtime: AgentRuntime,
        target: TargetService,
        pass: Entitlement,
        statistics: CommandStatistics,
        work: RequestWorkService,
        logger: Logger
    ) {
        self.runtime = runtime
        self.target = target
        self.pass = pass
        self.statistics = statistics
        self.work = work
        self.logger = logger
    }

    public func handle(
        _ body: UnsafeBufferPointer<UInt8>,
        role: EndpointRole,
        request incoming: IncomingRequest,
        reply: inout JSONWriter
    ) -> Bool {
        let started = incoming.receivedAt
        let limits = runtime.requestLimits
        // The cached load apps send most, read in place: answered here when the cache or a kept decision holds
        // its mbox; else (a miss, or any other body) it goes on, its reading taken back.
        if let load = FastRequest.readPlainLoad(body, limits: limits.commands, maxBodyBytes: limits.maxBodyBytes) {
            let start = reply.bytes.count
            Reply.beginSuccess(plainID: UnsafeBufferPointer(rebasing: body[load.id]), in: &reply)
            if target.loadPlain(
                UnsafeBufferPointer(rebasing: body[load.name]),
                receivedAt: started,
                appendingResultTo: &reply
            ) {
                Reply.endSuccess(&reply)
                statistics.countPlainLoad()
                return true
            }
            reply.bytes.removeLast(reply.bytes.count - start)
        }
        // The cached path's plain requests skip the JSON tree; anything else (errors included) goes the
        // general way below, which decides exactly as it would have (FastRequest's contract).
        if let fast = FastRequest.read(body, limits: limits.commands, maxBodyBytes: limits.maxBodyBytes) {
            let outcome = perform(fast.command, id: fast.id, reply: &reply)
            return finish(outcome, id: fast.id, key: .command(fast.name), started: started, incoming, &reply)
        }
        let request: Request
        switch Request.decode([UInt8](body), maxBodyBytes: limits.maxBodyBytes) {
        case .success(let decoded):
            request = decoded
        case .failure(let failure):
            statistics.record(.unreadable, since: started, errorCode: failure.error.code.rawValue)
            Reply.writeFailure(id: failure.id, error: failure.error, to: &reply)
            return true
        }
        let command = Command(wireName: request.command)
        let outcome: Outcome
        do {
            outcome = try route(request, command, role: role, limits: limits.commands, reply: &reply)
        } catch {
            outcome = .now(.failure(error))
        }
        // Unknown command names are counted together: an app must not grow this table without bound.
        let key: CommandStatistics.Key = command.map { .command($0) } ?? .unknown
        return finish(outcome, id: request.id, key: key, started: started, incoming, &reply)
    }

    /// Appends the reply to send now and returns true, or returns false after handing admitted work to the
    /// request-work group, which replies later.
    private func finish(
        _ outcome: Outcome,
        id: String,
        key: CommandStatistics.Key,
        started: MonotonicInstant,
        _ incoming: IncomingRequest,
        _ out: inout JSONWriter
    ) -> Bool {
        switch outcome {
        case .now(let result):
            write(id: id, key: key, started: started, result, to: &out)
            return true
        case .later(let work):
            guard let responder = incoming.admit() else {
                write(id: id, key: key, started: started, .failure(.overloaded(retryAfterMs: 250)), to: &out)
                return true
            }
            let submitted = self.work.submit {
                responder.respond(reply(id: id, key: key, started: started, await work()))
            }
            guard submitted else {
                // The agent is stopping: the admitted request still gets its reply.
                responder.respond(reply(id: id, key: key, started: started, .failure(.shuttingDown())))
                return false
            }
            return false
        }
    }

    /// Display notifications queued by this batch's cache hits reach the journal in one write, and the plain
    /// loads it answered are timed together.
    public func endOfBatch(receivedAt: MonotonicInstant) {
        target.notifications.commitJournal()
        statistics.recordPlainLoads(since: receivedAt)
    }

    /// The reply bytes for a result of deferred work, timed into `statistics`.
    private func reply(
        id: String,
        key: CommandStatistics.Key,
        started: MonotonicInstant,
        _ result: CommandResult
    ) -> [UInt8] {
        var writer = JSONWriter()
        write(id: id, key: key, started: started, result, to: &writer)
        return writer.bytes
    }

    /// Appends the reply for a result to `out`, timed into `statistics`.
    private func write(
        id: String,
        key: CommandStatistics.Key,
        started: MonotonicInstant,
        _ result: CommandResult,
        to out: inout JSONWriter
    ) {
        switch result {
        case .success(let value):
            statistics.record(key, since: started, errorCode: nil)
            Reply.writeSuccess(id: id, result: value, to: &out)
        case .encoded(let value):
            statistics.record(key, since: started, errorCode: nil)
            Reply.writeSuccess(id: id, encodedResult: value, to: &out)
        case .written:
            statistics.record(key, since: started, errorCode: nil)
        case .failure(let error):
            statistics.record(key, since: started, errorCode: error.code.rawValue)
            Reply.writeFailure(id: id, error: error, to: &out)
        }
    }

    /// What a command produced.
    enum CommandResult: Sendable {
        case success(JSONValue)
        /// A result already encoded as JSON.
        case encoded([UInt8])
        /// The whole success reply, already appended to the reply being written (the cached-load path; a
        /// result of `.now` only).
        case written
        case failure(ProtocolError)
    }

    /// A result now, on the I/O thread, or work whose result comes later from a task.
    enum Outcome: Sendable {
        case now(CommandResult)
        case later(@Sendable () async -> CommandResult)

        static func success(_ value: JSONValue) -> Outcome { .now(.success(value)) }
    }

    /// `unknown_command` and `not_permitted` from the command table, then the command's handler.
    private func route(
        _ request: Request,
        _ command: Command?,
        role: EndpointRole,
        limits: CommandLimits,
        reply: inout JSONWriter
    ) throws(ProtocolError) -> Outcome {
        guard let command else { throw .unknownCommand(request.command) }
        if command.declaration.access == .adminOnly, role != .admin {
            throw .notPermitted("\(command.wireName) is an admin command; use the admin endpoint")
        }
        let arguments = ArgumentReader(request.args ?? JSONObject())
        if let app = try AppCommand.decode(command, arguments, limits: limits) {
            return perform(app, id: request.id, reply: &reply)
        }
        return try handleAdmin(command, arguments: arguments)
    }

    /// Runs an app command: at once when it can be answered here, else as work for a task. A cached load
    /// writes its whole reply to `reply` (`.written`), as does a preauthorize the decision cache answers.
    private func perform(_ command: AppCommand, id: String, reply: inout JSONWriter) -> Outcome {
        switch command {
        case .ping:
            // Written in place, as a cached load's reply is: apps ping to check on the agent, and a JSON tree for
            // two members and the general outcome's copies cost a ping about 3,000 instructions on the I/O thread
            // (tools/bench --profile --profile-command ping), more than a cached load took.
            Reply.beginSuccess(id: id, in: &reply)
            reply.appendASCII("{\"version\":")
            reply.writeString(preflightVersion)
            reply.appendASCII(",\"uptimeMs\":")
            reply.writeInteger(runtime.uptimeMs)
            reply.appendASCII("}")
            Reply.endSuccess(&reply)
            return .now(.written)
        case .prefetch(let command):
            let target = self.target
            return .later { .success(await target.prefetch(command).json) }
        case .loadRequests(let command):
            let start = reply.bytes.count
            Reply.beginSuccess(id: id, in: &reply)
            if let pending = target.loadFromCache(command, appendingResultTo: &reply) {
                // A miss: the reply comes from the task, and what was written of this one goes.
                reply.bytes.removeLast(reply.bytes.count - start)
                let target = self.target
                return .later { .encoded(await target.completeLoad(pending)) }
            }
            Reply.endSuccess(&reply)
            return .now(.written)
        case .tracedLoad(let command):
            let target = self.target
            return .later { .encoded(await target.tracedLoad(command)) }
        case .clearPrefetchCache:
            return .success(["cleared": .integer(Int64(target.clearCache()))])
        case .preauthorize(let command):
            // A complete answer from the decision cache goes out from this thread; anything else waits
            // on Adobe Pass in a task.
            if let cached = pass.cachedResponse(for: command) {
                Reply.beginSuccess(id: id, in: &reply)
                cached.write(to: &reply)
                Reply.endSuccess(&reply)
                return .now(.written)
            }
            let pass = self.pass
            return .later { .encoded(await pass.preauthorize(command).encoded) }
        case .entitlement(let command):
            return entitle(command)
        case .visitor(let command):
            return identify(command)
        case .displayedLocations(let command):
            let done = target.displayedLocations(command)
            return .success([
                "notified": .array(done.notified.map { .string($0) }),
                "skipped": .array(done.skipped.map { .string($0) }),
            ])
        case .clickedLocation(let command):
            switch target.clickedLocation(command) {
            case .success:
                return .success(["queued": true, "name": .string(command.name)])
            case .failure(.unknownMbox):
                return .now(
                    .failure(
                        .invalidArgument(
                            "name",
                            "no offer for \"\(command.name)\" was prefetched or loaded from Target: nothing to click"
                        )
                    )
                )
            case .failure(.noClickMetric):
                return .now(
                    .failure(
                        .invalidArgument(
                            "name",
                            "Target sent no click metric for \"\(command.name)\" (its activity has no click goal): "
                                + "nothing was sent"
                        )
                    )
                )
            case .failure(.optedOut):
                return .now(.failure(Self.optedOut("nothing is sent to Target")))
            }
        }
    }

    /// The visitor commands: answered here from the visitor's state, except `resetExperience`, which first
    /// sends the old visitor's queued notifications.
    private func identify(_ command: VisitorCommand) -> Outcome {
        let visitor = target.visitor
        func id(_ key: String, _ value: String?) -> Outcome { .success([key: value.map { .string($0) } ?? .null]) }
        // Opted out, the box keeps no visitor id (AEP ignores the setters; an app here is told why).
        if command.setsAnId, target.privacy == .optedOut {
            return .now(.failure(Self.optedOut("no visitor id is kept")))
        }
        switch command {
        case .getThirdPartyId:
            return id("thirdPartyId", visitor.current.thirdPartyId)
        case .setThirdPartyId(let thirdPartyId):
            // Set here, so a request the app sends next carries it; written (fsync) in a task.
            visitor.setThirdPartyId(thirdPartyId, saving: false)
            return .later {
                visitor.save()
                return .success(["thirdPartyId": thirdPartyId.map { .string($0) } ?? .null])
            }
        case .getTntId:
            return id("tntId", visitor.current.tntId)
        case .setTntId(let tntId):
            visitor.setTntId(tntId, saving: false)
            return .later {
                visitor.save()
                return .success(["tntId": tntId.map { .string($0) } ?? .null])
            }
        case .getSessionId:
            return id("sessionId", visitor.sessionId)
        case .setSessionId(let sessionId):
            visitor.setSessionId(sessionId)
            return id("sessionId", sessionId)
        case .getVisitorIds:
            let current = visitor.current
            return .success([
                "tntId": current.tntId.map { .string($0) } ?? .null,
                "thirdPartyId": current.thirdPartyId.map { .string($0) } ?? .null,
                "sessionId": .string(visitor.sessionId),
                "marketingCloudVisitorId": current.marketingCloudVisitorId.map { .string($0) } ?? .null,
                "customerIds": .array(current.customerIds.map(\.json)),
            ])
        case .setMarketingCloudVisitorId(let id):
            visitor.setMarketingCloudVisitorId(id, saving: false)
            let customerIds = visitor.current.customerIds
            return .later {
                visitor.save()
                return .success([
                    "marketingCloudVisitorId": id.map { .string($0) } ?? .null,
                    "customerIds": .array(customerIds.map(\.json)),
                ])
            }
        case .setCustomerIds(let ids):
            guard visitor.setCustomerIds(ids, saving: false) else {
                return .now(
                    .failure(
                        .invalidArgument(
                            "customerIds",
                            "Target takes customer ids only along with a marketingCloudVisitorId: set one first "
                                + "(setMarketingCloudVisitorId)"
                        )
                    )
                )
            }
            return .later {
                visitor.save()
                return .success(["customerIds": .array(ids.map(\.json))])
            }
        case .resetExperience:
            let target = self.target
            return .later { .success(["cleared": .integer(Int64(await target.resetExperience()))]) }
        }
    }

    /// The entitlement commands: each waits on Adobe Pass (or its pacing) in a task, except
    /// `cancelAuthentication`, which only forgets.
    private func entitle(_ command: EntitlementCommand) -> Outcome {
        let pass = self.pass
        switch command {
        case .checkAuthentication(let requestor, let mvpd, let fresh):
            return .later {
                .success(await pass.checkAuthentication(requestor: requestor, mvpd: mvpd, fresh: fresh).json)
            }
        case .getAuthentication(let request):
            return .later { .success(await pass.getAuthentication(request).json) }
        case .cancelAuthentication(let requestor):
            // In a task: forgetting the code rewrites pass-signin.json (fsync), never on the I/O thread.
            return .later { .success(["cancelled": .bool(pass.cancelAuthentication(requestor: requestor))]) }
        case .getAuthorization(let requestor, let resource):
            return .later { .success(await pass.getAuthorization(requestor: requestor, resource: resource).json) }
        case .checkAuthorization(let requestor, let resource):
            return .later { .success(await pass.checkAuthorization(requestor: requestor, resource: resource).json) }
        case .logout(let requestor, let mvpd):
            return .later { .success(await pass.logout(requestor: requestor, mvpd: mvpd).json) }
        case .getMetadata(let requestor, let key):
            return .later { .success(await pass.getMetadata(requestor: requestor, key: key).json) }
        case .getSelectedProvider(let requestor):
            return .later { Self.result(await pass.providers(requestor: requestor).result) }
        case .setSelectedProvider(let requestor, let mvpd):
            return .later { Self.result(await pass.selectProvider(requestor: requestor, mvpd: mvpd).result) }
        }
    }

    /// The refusal of a command the box's privacy status forbids.
    static func optedOut(_ consequence: String) -> ProtocolError {
        .notPermitted(
            "the box's Target privacy status is optedOut: \(consequence) (preflightctl target privacy; "
                + "the target.privacy setting)"
        )
    }

    private static func result(_ result: Result<JSONValue, ProtocolError>) -> CommandResult {
        switch result {
        case .success(let value): .success(value)
        case .failure(let error): .failure(error)
        }
    }
}
