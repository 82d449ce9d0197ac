import PreflightCore
import PreflightProtocol
import TargetDecisioning

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension TargetService {
    // MARK: on-device decisioning

    /// The engine of the rules artifact held, when `target.decisioningMethod` is `on-device` or `hybrid`.
    /// None while the box is opted out (loads get their default content, nothing is kept to send) or a QA
    /// preview is on (the marketer's activities are Target's to decide, with the preview token).
    var onDeviceEngine: DecisioningEngine? {
        guard configuration.decisioningMethod != .serverSide, let artifact, privacy != .optedOut else { return nil }
        let now = clock.now()
        guard previewBox.withLock({ $0.active(at: now) }) == nil else { return nil }
        return DecisioningEngine(artifact: artifact)
    }

    /// `on-device` before any artifact is held: nothing can be decided, and nothing goes to Target either
    /// (the box was told not to ask Target per load). `hybrid` asks Target until then.
    var waitsForArtifact: Bool {
        configuration.decisioningMethod == .onDevice && artifact == nil
    }

    /// What the engine decided of a request, and which of its mboxes it left to Target.
    struct OnDeviceDecision {
        var response: DeliveryResponse
        /// The requested mboxes the artifact lists as remote or does not know: Target decides them.
        var remote: Set<String>
    }

    /// Decides on the box, as Adobe's engines do, the Delivery request the agent would send for `prefetch`
    /// and `execute`: decided against the artifact with the visitor's ids and the box's context. The display
    /// notifications of executed mboxes are queued as a cached load's are. nil unless on-device decisioning
    /// applies.
    func decideOnDevice(
        prefetch: [DeliveryMbox] = [],
        execute: [DeliveryMbox] = [],
        profile: [Parameter],
        property: String?
    ) -> OnDeviceDecision? {
        guard !prefetch.isEmpty || !execute.isEmpty, let engine = onDeviceEngine else { return nil }
        let configuration = self.configuration
        let identity = visitor.current
        var body = DeliveryCodec(configuration: configuration).requestBody(
            prefetch: prefetch,
            execute: execute,
            profileParameters: profile,
            property: property,
            visitor: identity,
            timeOffsetInMinutes: TimeZone.current.secondsFromGMT() / 60
        )
        let geo = geoForDecision(&body, engine: engine)
        let remote = Set(engine.remoteDependency(for: body).mboxes)
        let propertyToken = property ?? configuration.propertyToken
        let stamp = time.stampNow()
        let decision = engine.decide(
            request: body,
            conf: DecisioningConf(
                client: configuration.clientCode,
                organizationId: configuration.organizationId,
                propertyToken: propertyToken.isEmpty ? nil : propertyToken,
                telemetryEnabled: false
            ),
            nowMs: stamp.epochMs,
            geo: geo,
            options: DecisionOptions(sessionId: identity.sessionId)
        )
        for item in decision.notifications {
            guard
                let notification = DisplayNotification(
                    deliveryJSON: .object(item),
                    property: property,
                    stampedByBoxClock: stamp.byBoxClock
                )
            else { continue }
            queue(notification, stampedByBoxClockAt: stamp.byBoxClock ? stamp.now : nil)
        }
        return OnDeviceDecision(response: DeliveryResponse.reading(decision.response), remote: remote)
    }

    /// A load's misses decided on the box where the artifact decides them; the others, for one Delivery call.
    func decideOnDevice(
        _ misses: [MissKey],
        profile: [Parameter],
        property: String?
    ) -> (decided: [MissKey: MissOutcome], remote: [MissKey]) {
        if waitsForArtifact {
            return (Dictionary(misses.map { ($0, MissOutcome.failed(reason: "noArtifact")) }) { a, _ in a }, [])
        }
        let mboxes = misses.map { DeliveryMbox(name: $0.name, targeting: $0.targeting) }
        guard let decision = decideOnDevice(execute: mboxes, profile: profile, property: property) else {
            return ([:], misses)
        }
        var decided: [MissKey: MissOutcome] = [:]
        for key in misses where !decision.remote.contains(key.name) {
            if let mbox = decision.response.executed.first(where: { $0.name == key.name }), !mbox.options.isEmpty {
                decided[key] = .decided(mbox.options.map(\.contentText).joined(), data: mbox.data)
            } else {
                decided[key] = .failed(reason: "noContent")
            }
        }
        return (decided, misses.filter { decision.remote.contains($0.name) })
    }
}
