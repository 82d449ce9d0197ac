import PreflightCore
import PreflightProtocol
import UpstreamHTTP

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TargetService {
    // MARK: work calls

    /// One prefetch or execute call, with a batch of queued notifications riding along (as the SDK does).
    ///
    /// The Delivery API refuses a whole request when one notification in it is invalid (a bad token or
    /// timestamp). So a refusal of a request that carried notifications does not fail the work: the
    /// notifications go back as suspects, to be sent on their own and isolated, and the work is sent
    /// again at once without them.
    func deliver(
        operation: String,
        prefetch: [DeliveryMbox],
        execute: [DeliveryMbox],
        profile: [Parameter],
        property: String? = nil,
        trace: TargetTrace? = nil
    ) async -> Result<DeliveryResponse, DeliveryFailure> {
        // Not sent at all unless the box is opted in; loads then get their default content.
        let privacy = self.privacy
        guard privacy.allowsSending else { return .failure(.notOptedIn(privacy)) }
        // Nothing rides along while Target is down: the call is refused at once.
        let batch =
            circuit?.state.isDown == true
            ? []
            : stamped(notifications.take(max: configuration.notificationBatchSize, ride: true, property: property))
        let work = DeliveryWork(
            operation: operation,
            prefetch: prefetch,
            execute: execute,
            profile: profile,
            property: property,
            trace: trace
        )
        let result = await send(work, notifications: batch)
        switch result {
        case .success(let response):
            notifications.complete(batch, acknowledged: response.acknowledgedNotificationIds)
            return result
        case .failure(let failure) where failure.isRefusal && !batch.isEmpty:
            notifications.suspect(batch)
            logger.warning(
                "Target refused a request that carried display notifications; sending the work again without them",
                metadata: [
                    "operation": "\(operation)", "notifications": "\(batch.count)", "detail": "\(failure.detail)",
                ]
            )
            return await send(work)
        case .failure(let failure):
            notifications.fail(batch, error: failure.detail)
            return result
        }
    }

    // MARK: notification calls

    /// Sends one batch of queued notifications on its own. Returns whether anything was settled
    /// (confirmed or refused), so that callers keep going while the queue drains.
    func sendNotificationBatch() async -> Bool {
        let batch = notifications.take(max: configuration.notificationBatchSize)
        guard !batch.isEmpty else { return false }
        let before = notifications.summary.counters
        await sendIsolating(stamped(batch))
        let after = notifications.summary.counters
        return after.sent + after.refused > before.sent + before.refused
    }

    /// Sends `batch`; when Target refuses it as invalid, finds the notifications at fault by halving, drops
    /// them (a log line each, counted as `refused`), and delivers the rest. A transient failure (network,
    /// timeout, 5xx, 429, any other status) puts back what is left, for a retry after the backoff.
    /// Returns false after a transient failure.
    @discardableResult
    private func sendIsolating(_ batch: [QueuedNotification]) async -> Bool {
        // A batch holds one property's notifications (`NotificationQueue.take`).
        switch await send(
            DeliveryWork(operation: "notifications", property: batch.first?.property),
            notifications: batch
        ) {
        case .success(let response):
            notifications.complete(batch, acknowledged: response.acknowledgedNotificationIds)
            return true
        case .failure(let failure) where failure.isRefusal:
            // Stamped by the box's clock before any response said the real time, and this response did:
            // the timestamps were the fault. Stamp them again and resend; nothing is dropped for it.
            if batch.contains(where: { $0.stampedByBoxClock }), time.correction != nil {
                return await sendIsolating(stamped(batch))
            }
            guard batch.count > 1 else {
                let notification = batch[0]
                notifications.reject(notification, reason: failure.detail)
                logger.error(
                    "Target refused a display notification as invalid; it is dropped, never retried",
                    metadata: [
                        "id": "\(notification.id)", "mbox": "\(notification.mboxName)",
                        "timestamp": "\(notification.timestampMs)", "detail": "\(failure.detail)",
                    ]
                )
                return true
            }
            let half = batch.count / 2
            guard await sendIsolating(Array(batch[..<half])) else {
                notifications.fail(Array(batch[half...]), error: failure.detail)
                return false
            }
            return await sendIsolating(Array(batch[half...]))
        case .failure(let failure):
            notifications.fail(batch, error: failure.detail)
            return false
        }
    }

    /// The batch with every timestamp the box's clock made replaced by the real time, once an upstream
    /// has told it: by the notification's monotonic age when it was displayed in this run, else (replayed
    /// from the journal) by the offset learned.
    func stamped(_ batch: [QueuedNotification]) -> [QueuedNotification] {
        guard batch.contains(where: { $0.stampedByBoxClock }), let correction = time.correction else { return batch }
        return batch.map { queued in
            // Only a made notification is stamped by the box's clock (a record never is).
            guard let notification = queued.notification, notification.stampedByBoxClock else { return queued }
            var restamped = notification
            if let displayedAt = boxClockDisplays.withLock({ $0.removeValue(forKey: notification.id) }) {
                restamped.restamp(time.epochMilliseconds(at: displayedAt))
            } else {
                restamped.restamp(notification.timestampMs + correction.offsetMs)
            }
            return .made(restamped)
        }
    }

    // MARK: probing

    /// While Target is down and a probe is due, one Delivery call with nothing in it (context and
    /// identity only): any answer brings Target back up, and the notifications held back go at once.
    func probeIfDue() async {
        guard let circuit, circuit.probeDue, privacy.allowsSending else { return }
        _ = await send(DeliveryWork(operation: "probe", probe: true))
        // Any answer, even an error status, means Target is reachable again.
        if !circuit.state.isDown { notifications.clearBackoff() }
    }

    // MARK: the one upstream call

    /// One Delivery API exchange: the request, the counters, what the visitor learns, and the log line and
    /// event of a failure. Settling notifications is the caller's.
    ///
    /// While a preview is on, the request carries its QA mode token. When Target refuses that token, the
    /// preview ends and the request is sent again at once without it: the work and the notifications it
    /// carried are not the fault, and must neither fail nor be dropped as invalid.
    private func send(
        _ work: DeliveryWork,
        notifications batch: [QueuedNotification] = []
    ) async -> Result<DeliveryResponse, DeliveryFailure> {
        let operation = work.operation
        if work.prefetch.isEmpty && work.execute.isEmpty && batch.isEmpty && !work.probe {
            return .success(
                DeliveryResponse(
                    tntId: nil,
                    edgeHost: nil,
                    prefetched: [],
                    executed: [],
                    acknowledgedNotificationIds: []
                )
            )
        }
        let identity = visitor.begin()
        let now = clock.now()
        let (preview, previewGeneration) = previewBox.withLock { ($0.active(at: now), $0.generation) }
        let request = deliveryRequest(work, notifications: batch, visitor: identity, qaModeToken: preview?.token)
        let started = MonotonicInstant.now
        let result: Result<DeliveryResponse, DeliveryFailure>
        do {
            let response = try await transport.send(request)
            result = Result { () throws(DeliveryFailure) in
                var decoded = try DeliveryResponse.decode(response, sent: batch)
                decoded.previewGeneration = previewGeneration
                return decoded
            }
        } catch {
            switch error.kind {
            case .upstreamDown:
                // Refused at once while Target is down: no call was made, and `upstream.down` said so.
                logger.debug("Target call not made: Target is down", metadata: ["operation": "\(operation)"])
                return .failure(.upstreamDown(error.detail))
            case .timeout: result = .failure(.timeout)
            case .connection, .bodyTooLarge, .cancelled: result = .failure(.network(error.description))
            }
        }
        let elapsed = MonotonicInstant.now - started
        let latencyMs = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let epoch = clock.epochMilliseconds()
        counterBox.withLock { counters in
            counters.upstreamCalls += 1
            counters.upstreamLatency.record(milliseconds: latencyMs)
            switch result {
            case .success: counters.lastSuccessAtMs = epoch
            case .failure(let failure):
                counters.upstreamErrors += 1
                counters.lastErrorAtMs = epoch
                counters.lastError = failure.detail
                counters.lastErrorCode = failure.reason
            }
        }
        switch result {
        case .success(let response):
            if let refused = visitor.learn(
                tntId: response.tntId,
                edgeHost: response.edgeHost,
                generation: identity.generation
            ) {
                logger.warning(
                    "Target sent an edgeHost that is not a plain host name; the configured server stays in use",
                    metadata: ["edgeHost": "\(refused)"]
                )
            }
        case .failure(let failure):
            if let edgeHost = identity.edgeHost, failure.isNetwork {
                // An edge host that stopped resolving or answering: back to the configured server, whose
                // answer names an edge host again.
                visitor.forgetEdgeHost()
                logger.notice(
                    "the Target edge host failed; the next call goes to the configured server",
                    metadata: ["edgeHost": "\(edgeHost)", "reason": "\(failure.reason)"]
                )
            }
            logger.warning(
                "Target Delivery API call failed",
                metadata: ["operation": "\(operation)", "reason": "\(failure.reason)", "detail": "\(failure.detail)"]
            )
            publish(
                .upstreamError,
                [
                    "service": "target", "operation": .string(operation), "code": .string(failure.reason),
                    "message": .string(failure.detail),
                ]
            )
            if let preview, failure.refusesQAModeToken {
                endRefusedPreview(preview, detail: failure.detail)
                return await send(work, notifications: batch)
            }
        }
        return result
    }
}

extension TargetService {
    /// The request for `work` and `batch`: for notifications alone, from the template kept while the
    /// configuration, the visitor's identity, the property and the time zone stay (`NotificationsTemplate`).
    fileprivate func deliveryRequest(
        _ work: DeliveryWork,
        notifications batch: [QueuedNotification],
        visitor identity: VisitorSession.Snapshot,
        qaModeToken: String?
    ) -> HTTPRequest {
        let configuration = self.configuration
        let timeOffsetInMinutes = TimeZone.current.secondsFromGMT() / 60
        guard work.prefetch.isEmpty, work.execute.isEmpty, work.profile.isEmpty, work.trace == nil,
            qaModeToken == nil, !batch.isEmpty
        else {
            return DeliveryCodec(configuration: configuration).request(
                prefetch: work.prefetch,
                execute: work.execute,
                profileParameters: work.profile,
                notifications: batch,
                property: work.property,
                visitor: identity,
                timeOffsetInMinutes: timeOffsetInMinutes,
                qaModeToken: qaModeToken,
                trace: work.trace
            )
        }
        let key = DeliveryCodec.NotificationsTemplate.Key(
            configuration: configuration,
            visitor: identity,
            property: work.property,
            timeOffsetInMinutes: timeOffsetInMinutes
        )
        if let kept = notificationsTemplate.withLock({ $0 }), kept.key == key {
            return kept.request(notifications: batch)
        }
        let template = DeliveryCodec.NotificationsTemplate(key)
        notificationsTemplate.withLock { $0 = template }
        return template.request(notifications: batch)
    }
}

/// What one Delivery call carries besides its notifications and the visitor: the work, its property (nil: the
/// configured one) and trace, or nothing at all for a probe.
struct DeliveryWork: Sendable {
    var operation: String
    var prefetch: [DeliveryMbox] = []
    var execute: [DeliveryMbox] = []
    var profile: [Parameter] = []
    var property: String?
    var trace: TargetTrace?
    /// A call with nothing in it (context and identity only), to see whether Target answers.
    var probe = false
}
