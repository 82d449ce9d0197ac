import PreflightCore
import PreflightProtocol
import UpstreamHTTP

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TargetService {
    // MARK: the one upstream call

    func deliver(
        operation: String,
        prefetch: [DeliveryMbox],
        execute: [DeliveryMbox],
        profile: [Parameter]
    ) async -> Result<DeliveryResponse, DeliveryFailure> {
        let configuration = self.configuration
        let codec = DeliveryCodec(configuration: configuration)
        let batch = notifications.take(max: configuration.notificationBatchSize)
        if prefetch.isEmpty && execute.isEmpty && batch.isEmpty {
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
        let request = codec.request(
            prefetch: prefetch,
            execute: execute,
            profileParameters: profile,
            notifications: batch,
            visitor: visitor.begin(),
            timeOffsetInMinutes: TimeZone.current.secondsFromGMT() / 60
        )
        let started = ContinuousClock.now
        let result: Result<DeliveryResponse, DeliveryFailure>
        do {
            let response = try await transport.send(request)
            result = Result { () throws(DeliveryFailure) in try DeliveryResponse.decode(response) }
        } catch {
            result = .failure(error.kind == .timeout ? .timeout : .network(error.description))
        }
        let elapsed = ContinuousClock.now - started
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
            visitor.learn(tntId: response.tntId, edgeHost: response.edgeHost)
            notifications.complete(batch, acknowledged: response.acknowledgedNotificationIds)
        case .failure(let failure):
            notifications.fail(batch, error: failure.detail)
            logger.warning(
                "Target Delivery API call failed",
                metadata: ["operation": "\(operation)", "reason": "\(failure.reason)", "detail": "\(failure.detail)"]
            )
            publish(
                "upstream.error",
                [
                    "service": "target", "operation": .string(operation), "code": .string(failure.reason),
                    "message": .string(failure.detail),
                ]
            )
        }
        return result
    }
}
