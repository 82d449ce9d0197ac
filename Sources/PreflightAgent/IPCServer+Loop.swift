import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization
import ZeroMQ

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

extension IPCServer {
    // MARK: - The I/O thread

    func runThread(started: CheckedContinuation<Result<Void, AgentError>, Never>) {
        do {
            let sockets: Sockets
            do {
                sockets = try bindSockets()
            } catch {
                shared.withLock { $0.admission.finished() }
                started.resume(returning: .failure(error))
                return
            }
            shared.withLock { $0.admission.started() }
            started.resume(returning: .success(()))
            logger.info(
                "listening",
                metadata: ["app": "\(endpoints.app)", "admin": "\(endpoints.admin)", "events": "\(endpoints.events)"]
            )
            runLoop(sockets)
            sockets.closeAll()
        }
        // The sockets and their context are gone by here: the context's termination (`zmq_ctx_term`) has
        // waited, up to the linger, for the last replies and `agent.stopping` to leave. Only then may `stop()`
        // return: the process exits soon after, and an exit during that wait drops them (a loaded machine
        // lost `agent.stopping` this way: the context's last reference used to go at the end of this function,
        // after the waiters below had resumed).
        removeSocketFiles()
        let waiters = shared.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.admission.finished()
            defer { state.stopWaiters = [] }
            return state.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func runLoop(_ sockets: Sockets) {
        // Socket 0 the app endpoint, 1 the admin endpoint, 2 the events endpoint (its subscriptions), 3 the
        // ZAP handler when there is one; descriptor 0 the wake-up signal of replies and events queued by other
        // threads.
        let roles = [(index: 0, role: EndpointRole.app), (index: 1, role: EndpointRole.admin)]
        let eventsIndex = 2
        let zapIndex = 3
        var waiter: MessageWaiter
        var prefixes = EventSubscriptions.Prefixes()
        do {
            waiter = try MessageWaiter(
                sockets: [sockets.app, sockets.admin, sockets.events] + (sockets.zap.map { [$0] } ?? []),
                fileDescriptors: [wakeUp.fileDescriptor]
            )
        } catch {
            logger.critical("cannot watch the sockets; stopping the I/O loop", metadata: ["error": "\(error)"])
            return
        }
        let peerCheck = sockets.zap.map { _ in AdminPeerCheck(allowedGroups: endpoints.allowedAdminGroups) }
        var replies = ReplyBatch()
        while true {
            let ready: MessageWaiter.Ready
            do {
                ready = try waiter.wait(timeout: tickInterval)
            } catch {
                logger.critical("waiting on the sockets failed; stopping the I/O loop", metadata: ["error": "\(error)"])
                return
            }
            onTick?()
            if ready.fileDescriptor(0) {
                wakeUp.drain()
            }
            if let zap = sockets.zap, let peerCheck, ready.socket(zapIndex) {
                answerHandshakes(on: zap, peerCheck)
                // Each reply goes out before the next receive: the last receive found none waiting.
                waiter.drained(zapIndex)
            }
            let flushed = flushOutgoing(sockets)
            if flushed.routers {
                for (index, _) in roles { waiter.used(index) }
            }
            if flushed.events || ready.socket(eventsIndex) {
                // Subscriptions, a bounded batch per turn like requests (a subscriber churning its
                // subscriptions cannot hold the loop); drained when none is left.
                var drained = false
                for _ in 0..<256 {
                    guard let message = try? sockets.events.receive(dontWait: true) else {
                        drained = true
                        break
                    }
                    if let topics = prefixes.apply(message.first ?? []) { subscriptions.store(topics) }
                }
                if drained { waiter.drained(eventsIndex) } else { waiter.used(eventsIndex) }
            }
            // The clock is read only while draining, and the lock taken only once a stop was asked: this runs on
            // every turn of the loop.
            let draining = stopAsked.load(ordering: .acquiring) && shared.withLock { $0.admission.isDraining }
            if draining, shared.withLock({ $0.admission.drainIsOver(now: .now) }) {
                flushOutgoing(sockets)
                return
            }
            // A bounded batch per socket per turn: the admin endpoint stays responsive under an app flood.
            // The waiter's contract (MessageWaiter): a socket that may have messages is received from until
            // it has none (drained), unless the batch is full; a socket sent on since is looked at again.
            // Woken from sleep, a socket gives one request, answered at once, and is then looked at again in the
            // same turn: that look is the receive after a send the contract asks for anyway, and it also finds
            // whether more came (a batch of up to 256 then). One request at a time (an app waiting for each
            // answer) so makes one receive that finds nothing per request instead of two (each about 800
            // instructions, a getpid and a poll in libzmq), and one turn of the loop instead of two (the wait,
            // the outgoing queue, the drain check: about 300).
            for (index, role) in roles where ready.socket(index) {
                var batch = receiveBatch(
                    from: sockets.socket(for: role),
                    role: role,
                    limit: waiter.slept ? 1 : 256,
                    checkPeers: role == .admin && sockets.zap != nil,
                    draining: draining,
                    replies: &replies
                )
                if waiter.slept, batch.sent, !batch.drained {
                    batch = receiveBatch(
                        from: sockets.socket(for: role),
                        role: role,
                        limit: 256,
                        checkPeers: role == .admin && sockets.zap != nil,
                        draining: draining,
                        replies: &replies
                    )
                }
                if batch.sent {
                    waiter.used(index)
                } else if batch.drained {
                    waiter.drained(index)
                }
            }
        }
    }

    /// Handles up to `limit` waiting requests (fewer once `ReplyBatch.isFull` says the replies should not wait for
    /// more), then lets the handler commit what they queued, then sends
    /// their replies: a reply never leaves before the work it reports is durable. `drained`: the batch ended
    /// because the socket had no more (or failed); `sent`: it sent on the socket after that. `replies` is the
    /// loop's, empty on entry and on return, kept for its buffers.
    func receiveBatch(
        from socket: ZeroMQSocket,
        role: EndpointRole,
        limit: Int,
        checkPeers: Bool,
        draining: Bool,
        replies: inout ReplyBatch
    ) -> (drained: Bool, sent: Bool) {
        var drained = false
        var sent = false
        // One clock reading for the batch: each request's read cost a cached load about 3% of the I/O thread.
        let receivedAt = MonotonicInstant.now
        for _ in 0..<limit {
            do {
                if checkPeers {
                    let received = try socket.receiveRouted(dontWait: true, property: "User-Id")
                    if received.property != AdminPeerCheck.allowedUserId {
                        refuseAdminPeer(received.message, on: socket)
                        sent = true
                    } else {
                        handle(received.message, role: role, draining: draining, receivedAt, into: &replies)
                    }
                } else {
                    // A plain request is read where libzmq received it, and its reply written into the batch's
                    // buffer: no array of its own for the routing id, the body or the reply.
                    let received = try socket.receiveRouted(dontWait: true) { routingID, body in
                        handlePlain(
                            routingID: routingID,
                            body: body,
                            role: role,
                            draining: draining,
                            receivedAt,
                            into: &replies
                        )
                    }
                    if case .other(let message) = received.message {
                        handle(message, role: role, draining: draining, receivedAt, into: &replies)
                    }
                }
                if replies.isFull { break }
            } catch {
                if error != .wouldBlock { logReceiveFailure(error, role: role) }
                drained = true
                break
            }
        }
        guard !replies.isEmpty else { return (drained, sent) }
        handler.endOfBatch(receivedAt: receivedAt)
        replies.send { reply in
            switch reply {
            case .plain(let routingID, let body, let lent):
                send(on: socket, role: role) { () throws(ZeroMQError) in
                    try socket.sendPlain(routingID: routingID, body: body, lentFrom: lent, dontWait: true)
                }
            case .message(let message):
                send(message, on: socket, role: role)
            }
        }
        return (drained, true)
    }

    /// Answers every waiting ZAP handshake (admin connections only: no other socket has a domain).
    func answerHandshakes(on zap: ZeroMQSocket, _ peerCheck: AdminPeerCheck) {
        while let request = try? zap.receive(dontWait: true) {
            let reply = peerCheck.reply(to: request)
            if reply.count > 4, reply[4] != Array(AdminPeerCheck.allowedUserId.utf8) {
                let address = request.count > 3 ? String(decoding: request[3], as: UTF8.self) : "?"
                logger.notice(
                    "admin connection from a user outside \(AgentConfiguration.path(of: \.agent.allowedAdminGroups)); its commands get not_permitted",
                    metadata: ["peer": "\(address)"]
                )
            }
            do {
                try zap.send(reply)
            } catch {
                logger.error("cannot answer a ZAP handshake", metadata: ["error": "\(error)"])
            }
        }
    }

    /// `not_permitted` to an admin request from a connection the peer check refused.
    func refuseAdminPeer(_ message: RouterMessage, on socket: ZeroMQSocket) {
        requestCount.add(1, ordering: .relaxed)
        let body: [UInt8]
        let envelope: [[UInt8]]?
        switch message {
        case .plain(_, let plainBody):
            body = plainBody
            envelope = nil
        case .frames(let frames):
            guard frames.count >= 3, let delimiter = frames[1...].firstIndex(where: { $0.isEmpty }),
                delimiter + 1 < frames.count
            else { return }
            body = frames[delimiter + 1]
            envelope = Array(frames[...delimiter])
        }
        let id: String?
        switch Request.decode(body) {
        case .success(let request): id = request.id
        case .failure(let failure): id = failure.id
        }
        let refusal = Reply.failure(
            id: id,
            error: .notPermitted(
                "this user may not send admin commands: it is in none of \(AgentConfiguration.path(of: \.agent.allowedAdminGroups)) (\(endpoints.allowedAdminGroups.joined(separator: ", ")))"
            )
        )
        let reply: RouterMessage =
            envelope.map { .frames($0 + [refusal]) } ?? .plain(routingID: message.routingID, body: refusal)
        send(reply, on: socket, role: .admin)
    }

    /// Handles a plain request lent in place (`[routing id][empty][body]`); its reply, when there is one now,
    /// joins `replies`.
    func handlePlain(
        routingID: UnsafeRawBufferPointer,
        body: UnsafeBufferPointer<UInt8>,
        role: EndpointRole,
        draining: Bool,
        _ receivedAt: MonotonicInstant,
        into replies: inout ReplyBatch
    ) {
        requestCount.add(1, ordering: .relaxed)
        replies.beginPlain(routingID: routingID)
        if draining {
            replies.writer.writeRaw(ProtocolErrorReply.shuttingDown([UInt8](body)))
        } else {
            let request = IncomingRequest(sink: self, role: role, routingID: routingID, receivedAt: receivedAt)
            guard handler.handle(body, role: role, request: request, reply: &replies.writer) else {
                replies.abandon()
                return
            }
        }
        replies.endPlain()
    }

    /// Handles a message received whole: a plain one as `handlePlain` does, any other shape by `handleFrames`.
    func handle(
        _ message: RouterMessage,
        role: EndpointRole,
        draining: Bool,
        _ receivedAt: MonotonicInstant,
        into replies: inout ReplyBatch
    ) {
        switch message {
        case .plain(let routingID, let body):
            routingID.withUnsafeBytes { routingID in
                body.withUnsafeBufferPointer { body in
                    handlePlain(
                        routingID: routingID,
                        body: body,
                        role: role,
                        draining: draining,
                        receivedAt,
                        into: &replies
                    )
                }
            }
        case .frames(let frames):
            if let reply = handleFrames(frames, role: role, draining: draining, receivedAt) {
                replies.append(.frames(reply))
            }
        }
    }

    /// A message of another shape than `[routing id][empty][body]`: an envelope of several frames is echoed
    /// back; no delimiter, or more than one body frame, is malformed.
    func handleFrames(
        _ frames: consuming [[UInt8]],
        role: EndpointRole,
        draining: Bool,
        _ receivedAt: MonotonicInstant
    ) -> [[UInt8]]? {
        guard frames.count >= 2 else { return nil }  // a ROUTER always prepends the routing id
        requestCount.add(1, ordering: .relaxed)
        // [routing id][delimiter][body]: everything up to the first empty frame is echoed back.
        guard let delimiter = frames[1...].firstIndex(where: { $0.isEmpty }) else {
            shared.withLock { $0.counters.malformedFrames += 1 }
            let error = ProtocolErrorReply.malformed("missing the empty delimiter frame before the body")
            return [frames[0], error]
        }
        guard frames.count - delimiter - 1 == 1 else {
            shared.withLock { $0.counters.malformedFrames += 1 }
            let error = ProtocolErrorReply.malformed(
                "expected exactly one body frame after the delimiter; got \(frames.count - delimiter - 1)"
            )
            return Array(frames[...delimiter]) + [error]
        }
        // From here the message is envelope + one body; a reply is the same frames with the body replaced, in
        // place: the frames are this function's own, and the request is gone by then, unless the work was
        // deferred and its responder keeps them for its reply.
        let body = frames[delimiter + 1]
        if draining {
            frames[delimiter + 1] = ProtocolErrorReply.shuttingDown(body)
            return frames
        }
        let request = IncomingRequest(sink: self, role: role, message: .frames(copy frames), receivedAt: receivedAt)
        var reply = JSONWriter()
        let answered = body.withUnsafeBufferPointer { body in
            handler.handle(body, role: role, request: request, reply: &reply)
        }
        guard answered else { return nil }
        frames[delimiter + 1] = reply.bytes
        return frames
    }

    /// Out of line: read in `receiveBatch`, inlined into the loop, the logger's handler (a class's stored `var`)
    /// was checked for exclusive access (`swift_beginAccess`, about 60 instructions) on every turn, hoisted out of
    /// the receive loop though only a failure logs.
    @inline(never)
    func logReceiveFailure(_ error: ZeroMQError, role: EndpointRole) {
        logger.error("receive failed", metadata: ["endpoint": "\(role)", "error": "\(error)"])
    }

    /// Sends the replies and events other threads queued; says whether it sent on the app or admin socket
    /// (`routers`) and on the events socket.
    @discardableResult
    func flushOutgoing(_ sockets: Sockets) -> (routers: Bool, events: Bool) {
        // Cleared only here, under the lock, after the items it says are there were taken: a false seen
        // before another thread's store is followed by that thread's wake-up, so nothing waits unseen.
        guard outgoingQueued.load(ordering: .acquiring) else { return (false, false) }
        let batch = shared.withLock { state -> [Outgoing] in
            defer { state.outgoing = [] }
            outgoingQueued.store(false, ordering: .relaxed)
            return state.outgoing
        }
        var usedRouters = false
        var usedEvents = false
        for item in batch {
            switch item {
            case .reply(let role, let message, let deferred):
                if deferred { shared.withLock { $0.admission.release(peer: message.routingID) } }
                send(message, on: sockets.socket(for: role), role: role)
                usedRouters = true
            case .event(let topic, let body):
                usedEvents = true
                do {
                    try sockets.events.send([Array(topic.utf8), body], dontWait: true)
                    shared.withLock { $0.counters.eventsPublished += 1 }
                } catch {
                    // PUB drops at the high-water mark by design; a slow subscriber must not stall the agent.
                }
            }
        }
        return (usedRouters, usedEvents)
    }

    func send(_ message: RouterMessage, on socket: ZeroMQSocket, role: EndpointRole) {
        send(on: socket, role: role) { () throws(ZeroMQError) in try socket.send(message, dontWait: true) }
    }

    /// Sends one reply by `sending`, and counts it: sent, or dropped and why.
    func send(on socket: ZeroMQSocket, role: EndpointRole, _ sending: () throws(ZeroMQError) -> Void) {
        do {
            try sending()
            replyCount.add(1, ordering: .relaxed)
        } catch {
            shared.withLock { state in
                if error == .hostUnreachable {
                    state.counters.repliesToVanishedPeers += 1
                } else {
                    state.counters.repliesDroppedAtHighWaterMark += 1
                }
            }
        }
    }
}

/// Replies the IPC layer makes itself, before a body reaches the handler.
enum ProtocolErrorReply {
    static func malformed(_ message: String) -> [UInt8] {
        Reply.failure(id: nil, error: .malformed(message))
    }

    /// `shutting_down`, correlated by the request's id when it has a readable one.
    static func shuttingDown(_ body: [UInt8]) -> [UInt8] {
        let id: String?
        switch Request.decode(body) {
        case .success(let request): id = request.id
        case .failure(let failure): id = failure.id
        }
        return Reply.failure(id: id, error: .shuttingDown())
    }
}
