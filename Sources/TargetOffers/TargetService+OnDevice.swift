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
        guard configuration.decisioningMethod != .serverSide, privacy != .optedOut,
            let engine = artifactBox.withLock({ $0.engine })
        else { return nil }
        let now = clock.now()
        guard previewBox.withLock({ $0.active(at: now) }) == nil else { return nil }
        return engine
    }

    /// `on-device` before any artifact is held: nothing can be decided, and nothing goes to Target either
    /// (the box was told not to ask Target per load). `hybrid` asks Target until then.
    var waitsForArtifact: Bool {
        configuration.decisioningMethod == .onDevice && artifact == nil
    }

    /// Moves `decisionInputs`, after the change it reports.
    func decisionInputsChanged() {
        decisionInputs.add(1, ordering: .releasing)
    }

    /// What decisions made from now on are made under; read before deciding.
    var currentDecisionInputs: DecidedOffers.Inputs {
        DecidedOffers.Inputs(
            service: decisionInputs.load(ordering: .acquiring),
            identity: visitor.identityVersion
        )
    }

    /// An offer decided earlier for this request that still holds (on the I/O thread, at a cache miss).
    @inline(__always)
    func decidedOffer(
        _ name: String,
        targeting: MboxTargeting,
        profile: [Parameter],
        property: String?,
        at epochMs: Int64
    )
        -> CachedOffer?
    {
        decidedOffers.offer(
            for: DecidedOffers.Key(
                name: name,
                targeting: targeting,
                profile: profile,
                property: property
            ),
            at: epochMs,
            inputs: currentDecisionInputs
        )
    }

    /// What the engine decided of a request, and which of its mboxes it left to Target.
    struct OnDeviceDecision {
        var response: DeliveryResponse
        /// The requested mboxes the artifact lists as remote or does not know: Target decides them.
        var remote: Set<String>
        /// The event tokens of the display notification of each executed mbox.
        var displayTokens: [String: [String]]
        var epochMs: Int64
        /// What the decision holds under: `inputs`, or, when the engine gave the visitor its tntId, the
        /// identity that made; nil when the ids changed meanwhile.
        var inputs: DecidedOffers.Inputs?
    }

    /// Decides on the box, as Adobe's engines do, the Delivery request the agent would send for `prefetch`
    /// and `execute`: decided against the artifact with the visitor's ids and the box's context. A visitor
    /// with no id takes the tntId the engine gives it, so that its allocations hold from one decision to the
    /// next (and Target hears of the same visitor).
    func decideOnDevice(
        _ engine: DecisioningEngine,
        prefetch: [DeliveryMbox] = [],
        execute: [DeliveryMbox] = [],
        profile: [Parameter],
        property: String?,
        inputs: DecidedOffers.Inputs? = nil
    ) -> OnDeviceDecision {
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
        let epochMs = time.stampNow().epochMs
        let decision = engine.decide(
            request: body,
            conf: DecisioningConf(
                client: configuration.clientCode,
                organizationId: configuration.organizationId,
                propertyToken: propertyToken.isEmpty ? nil : propertyToken,
                telemetryEnabled: false
            ),
            nowMs: epochMs,
            geo: geo,
            options: DecisionOptions(sessionId: identity.sessionId)
        )
        let response = DeliveryResponse.reading(decision.response)
        var holdsUnder = inputs
        if identity.tntId == nil, let tntId = response.tntId {
            let adopted = visitor.adopt(tntId: tntId, generation: identity.generation, since: inputs?.identity)
            holdsUnder = inputs.flatMap { inputs in
                adopted.map { DecidedOffers.Inputs(service: inputs.service, identity: $0) }
            }
        }
        rememberClicks(of: response.executed, property: property)
        var displayTokens: [String: [String]] = [:]
        for notification in decision.notifications {
            guard let name = notification["mbox"]?["name"]?.stringValue else { continue }
            displayTokens[name, default: []] += (notification["tokens"]?.arrayValue ?? []).compactMap(\.stringValue)
        }
        return OnDeviceDecision(
            response: response,
            remote: remote,
            displayTokens: displayTokens,
            epochMs: epochMs,
            inputs: holdsUnder
        )
    }

    /// A load's misses decided on the box where the artifact decides them; the others, for one Delivery call.
    /// Each decided offer is kept (`DecidedOffers`) for as long as the same load would be decided the same.
    func decideOnDevice(
        _ misses: [MissKey],
        profile: [Parameter],
        property: String?
    ) -> (decided: [MissKey: MissOutcome], remote: [MissKey]) {
        if waitsForArtifact {
            return (Dictionary(misses.map { ($0, MissOutcome.failed(reason: "noArtifact")) }) { a, _ in a }, [])
        }
        // Read before the engine and the ids: a change after this makes what is decided here stale at once.
        let inputs = currentDecisionInputs
        guard !misses.isEmpty, let engine = onDeviceEngine else { return ([:], misses) }
        let mboxes = misses.map { DeliveryMbox(name: $0.name, targeting: $0.targeting) }
        let decision = decideOnDevice(engine, execute: mboxes, profile: profile, property: property, inputs: inputs)
        let now = clock.now()
        var decided: [MissKey: MissOutcome] = [:]
        for key in misses where !decision.remote.contains(key.name) {
            guard let mbox = decision.response.executed.first(where: { $0.name == key.name }), !mbox.options.isEmpty
            else {
                decided[key] = .failed(reason: "noContent")
                continue
            }
            // The notification's tokens, on the options they came from.
            var tokens = (decision.displayTokens[key.name] ?? [])[...]
            let options = mbox.options.map { option in
                OfferOption(type: option.type, content: option.content, eventToken: tokens.popFirst())
            }
            let offer = CachedOffer(
                name: key.name,
                options: options,
                state: mbox.state,
                clickToken: mbox.clickToken,
                data: mbox.data,
                property: property,
                now: now,
                epochMs: decision.epochMs,
                decidedOnDevice: true
            )
            if let inputs = decision.inputs {
                decidedOffers.keep(
                    offer,
                    for: DecidedOffers.Key(
                        name: key.name,
                        targeting: key.targeting,
                        profile: profile,
                        property: property
                    ),
                    span: engine.stableSpan(mbox: key.name, nowMs: decision.epochMs),
                    inputs: inputs
                )
            }
            decided[key] = .decided(offer)
        }
        return (decided, misses.filter { decision.remote.contains($0.name) })
    }
}
