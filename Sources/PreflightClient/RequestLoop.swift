import PreflightProtocol
import ZeroMQ

/// The client's I/O thread: owns the DEALER socket (libzmq sockets are not thread-safe), sends what callers
/// hand over, correlates replies by `id`, and applies the retry policy of `RequestTable`.
///
/// One `zmq_poll` watches the socket and the wake-up pipe. The socket has `ZMQ_IMMEDIATE` set, so it takes
/// a message only while a connection to the agent is up: a request is never queued into the void while the
/// agent is away, and a socket that will not take one is the cue to look whether anyone is listening at all
/// (`probeListener`), which turns "agent not running" into a quick answer instead of a long timeout.
final class RequestLoop {
    private let core: ClientCore
    private let context: ZeroMQContext
    private let clock = ContinuousClock()
    private var socket: ZeroMQSocket?
    private var table: RequestTable<ReplyWaiter>
    private var lastProbe: (at: ContinuousClock.Instant, state: ListenerState)?

    /// A probe answer is reused this long, so a burst of requests to a stopped agent costs one `connect`.
    private static let probeReuse = Duration.milliseconds(20)
    /// Replies handled per loop turn before sending again, so a flood of replies cannot starve requests.
    private static let receiveBatch = 1024
    /// Longest wait honoured from an `overloaded` reply's `retryAfterMs`.
    private static let longestRetryAfter = Duration.seconds(5)

    init(core: ClientCore, context: ZeroMQContext) {
        self.core = core
        self.context = context
        self.table = RequestTable(maxAttempts: core.configuration.retries + 1)
    }

    func run() {
        while true {
            let intake = core.takeIntake()
            if intake.closing {
                shutDown(also: intake.submissions)
                return
            }
            var now = clock.now
            for submission in intake.submissions {
                table.add(
                    id: submission.id,
                    body: submission.body,
                    timeout: submission.timeout,
                    waiter: submission.waiter,
                    now: now
                )
            }
            for id in intake.cancellations {
                table.complete(id)?.resume(returning: .failure(Self.cancelled))
            }

            let expiry = table.expire(now: now, describe: describeTimeout)
            for failure in expiry.failed {
                failure.waiter.resume(returning: .failure(failure.error))
            }
            if expiry.needsNewSocket {
                replaceSocket()
            }

            var waitingForSocket = sendReady()
            if waitingForSocket {
                now = clock.now
                checkListener(now: now)
                waitingForSocket = table.hasReadyToSend()
            }
            waitForActivity(waitingForSocket: waitingForSocket)
        }
    }

    // MARK: - Sending

    /// Sends every ready request the socket takes. Returns true when some must wait for the socket (no
    /// connection yet, or its queue is full).
    private func sendReady() -> Bool {
        guard table.hasReadyToSend() else { return false }
        if socket == nil {
            openSocket()
        }
        guard let socket else { return true }
        while let (id, body) = table.nextToSend() {
            do {
                try socket.send([[], body], dontWait: true)
                table.markSent(id)
            } catch {
                if error != .wouldBlock {
                    // The socket is unusable (it should not happen): start over on a new one.
                    replaceSocket()
                }
                return true
            }
        }
        return false
    }

    /// Requests wait for the socket: if nobody listens at the endpoint, end their attempts now (the next
    /// come after the retry delay) instead of letting them wait out their timeouts.
    private func checkListener(now: ContinuousClock.Instant) {
        let state: ListenerState
        if let lastProbe, lastProbe.at + Self.probeReuse > now {
            state = lastProbe.state
        } else {
            state = probeListener(at: core.endpoint)
            lastProbe = (now, state)
        }
        let reason: PreflightError
        switch state {
        case .listening, .unknown:
            return
        case .notListening(let why):
            reason = PreflightError(code: .agentUnreachable, message: "preflightd is not reachable: \(why)")
        case .notPermitted:
            reason = PreflightError(
                code: .permissionDenied,
                message: "not permitted to connect to \(core.endpoint) (apps need the group preflight)"
            )
        }
        for id in table.readyIDs() {
            if reason.code == .permissionDenied {
                // Not being let in will not change by waiting.
                table.complete(id)?.resume(returning: .failure(reason))
                continue
            }
            let delay = RequestTable<ReplyWaiter>.backoff(
                base: core.configuration.retryDelay,
                after: table.attempt(of: id) ?? 1
            )
            if let failed = table.retryLater(id, reason: reason, delay: delay, now: now) {
                failed.waiter.resume(returning: .failure(failed.error))
            }
        }
    }

    // MARK: - Receiving

    private func waitForActivity(waitingForSocket: Bool) {
        var items = [PollItem(fileDescriptor: core.wakeUp.fileDescriptor, events: .readable)]
        if let socket {
            items.append(PollItem(socket: socket, events: waitingForSocket ? [.readable, .writable] : .readable))
        }
        var timeout = table.nextWakeUp().map { max(clock.now.duration(to: $0), .zero) }
        if waitingForSocket && socket == nil {
            // No socket could be made (out of descriptors?): try again soon rather than at the deadline.
            timeout = min(timeout ?? .milliseconds(100), .milliseconds(100))
        }
        do {
            _ = try poll(&items, timeout: timeout)
        } catch {
            replaceSocket()
            return
        }
        if items[0].returnedEvents.contains(.readable) {
            core.wakeUp.drain()
        }
        if items.count > 1, items[1].returnedEvents.contains(.readable) {
            receiveReplies()
        }
    }

    private func receiveReplies() {
        guard let socket else { return }
        for _ in 0..<Self.receiveBatch {
            let frames: [[UInt8]]
            do {
                frames = try socket.receive(dontWait: true)
            } catch {
                return
            }
            // A DEALER reply is [empty delimiter][body]; anything else is not from an agent of this protocol.
            guard frames.count == 2, frames[0].isEmpty, let decoded = try? Reply.decode(frames[1]),
                let id = decoded.id
            else {
                continue
            }
            handleReply(id: id, outcome: decoded.outcome)
        }
    }

    private func handleReply(id: String, outcome: Result<JSONValue, ProtocolError>) {
        // A reply for a request no longer waiting (cancelled, or answered on an earlier socket) is dropped.
        guard table.attempt(of: id) != nil else { return }
        switch outcome {
        case .success(let result):
            table.complete(id)?.resume(returning: .success(result))
        case .failure(let error) where error.code == .shuttingDown || error.code == .overloaded:
            // Nothing was carried out: try again once the next agent is up, or the load has passed.
            let attempt = table.attempt(of: id) ?? 1
            var delay = RequestTable<ReplyWaiter>.backoff(base: core.configuration.retryDelay, after: attempt)
            if error.code == .overloaded, let milliseconds = error.retryAfterMs {
                delay = min(.milliseconds(milliseconds), Self.longestRetryAfter)
            }
            if let failed = table.retryLater(id, reason: PreflightError(agent: error), delay: delay, now: clock.now) {
                failed.waiter.resume(returning: .failure(failed.error))
            }
        case .failure(let error):
            table.complete(id)?.resume(returning: .failure(PreflightError(agent: error)))
        }
    }

    // MARK: - The socket

    private func openSocket() {
        do {
            let socket = try context.makeSocket(.dealer)
            try socket.setOption(.linger(milliseconds: 0))
            try socket.setOption(.immediate(true))
            try socket.connect(core.endpoint)
            self.socket = socket
        } catch {
            socket = nil
            let reason = PreflightError(
                code: .systemError,
                message: "cannot open a ZeroMQ socket to \(core.endpoint): \(error)"
            )
            // A malformed endpoint will not improve; running out of descriptors might, after the retry delay.
            let now = clock.now
            for id in table.readyIDs() {
                if error == .invalidArgument || error == .protocolNotSupported {
                    table.complete(id)?.resume(returning: .failure(reason))
                } else if let failed = table.retryLater(
                    id,
                    reason: reason,
                    delay: core.configuration.retryDelay,
                    now: now
                ) {
                    failed.waiter.resume(returning: .failure(failed.error))
                }
            }
        }
    }

    /// Lazy Pirate: the old socket may be stuck on a dead connection, so close it, open a new one, and send
    /// every request still waiting for a reply again.
    private func replaceSocket() {
        socket?.close()
        socket = nil
        table.requeueSent()
        if table.hasReadyToSend() {
            openSocket()
        }
    }

    private func shutDown(also submissions: [ClientCore.Submission]) {
        let closed = PreflightError(code: .closed, message: "the PreflightClient was closed")
        for waiter in table.removeAll() {
            waiter.resume(returning: .failure(closed))
        }
        for submission in submissions {
            submission.waiter.resume(returning: .failure(closed))
        }
        socket?.close()
        socket = nil
    }

    private func describeTimeout(attempts: Int, timeout: Duration) -> PreflightError {
        PreflightError(
            code: .timedOut,
            message: "no reply from preflightd at \(core.endpoint) within \(timeout) "
                + (attempts == 1 ? "(1 attempt)" : "(each of \(attempts) attempts)")
        )
    }

    private static let cancelled = PreflightError(code: .cancelled, message: "the calling task was cancelled")
}
