import PreflightCore
import PreflightProtocol
import TargetDecisioning

/// `decisioning.evaluate` (admin): what the on-device engine answers a Delivery API request from a
/// given artifact, without touching the agent's state (no cache, no queue, no visitor, no artifact of
/// the box's own). How technicians and tests ask "what would this box get".
struct DecisioningEvaluation: Sendable {
    static let keys = ["artifact", "request", "conf", "now", "geo", "sessionId", "locationHint"]

    let artifact: JSONValue
    let request: JSONObject
    let conf: DecisioningConf
    let nowMs: Int64
    let geo: JSONObject?
    let sessionId: String?
    let locationHint: String?

    /// Reads and checks every argument but the artifact's content (read in the task: it can be large).
    /// `conf` members default to the agent's configuration, `now` to its corrected wall clock.
    static func decode(
        _ arguments: ArgumentReader,
        defaults: DecisioningConf,
        now: () -> Int64
    ) throws(ProtocolError) -> DecisioningEvaluation {
        try arguments.onlyKeys(keys, describing: "decisioning.evaluate")
        guard let artifact = arguments.object["artifact"] else {
            throw .invalidArgument("artifact", "artifact is required (the rules artifact, rules.json, as an object)")
        }
        guard case .object = artifact else {
            throw .invalidArgument("artifact", "artifact must be an object (rules.json), got \(artifact.typeName)")
        }
        guard let request = try arguments.optionalObject("request") else {
            throw .invalidArgument("request", "request is required (a Delivery API request, as an object)")
        }
        var conf = defaults
        if let given = try arguments.optionalObject("conf") {
            try given.onlyKeys(["client", "organizationId", "propertyToken", "telemetryEnabled"], describing: "conf")
            conf.client = try given.optionalString("client") ?? conf.client
            conf.organizationId = try given.optionalString("organizationId") ?? conf.organizationId
            if given.has("propertyToken") { conf.propertyToken = try given.optionalString("propertyToken") }
            conf.telemetryEnabled = try given.optionalBool("telemetryEnabled") ?? conf.telemetryEnabled
        }
        return DecisioningEvaluation(
            artifact: artifact,
            request: request.object,
            conf: conf,
            nowMs: try arguments.optionalInteger("now") ?? now(),
            geo: try arguments.optionalObject("geo")?.object,
            sessionId: try arguments.optionalString("sessionId"),
            locationHint: try arguments.optionalString("locationHint")
        )
    }

    /// `{"response", "notifications", "notificationRequest"}`, and `geoLookup` when the artifact
    /// targets by geo, the request carries only an IP address and no `geo` was given. An artifact the
    /// engine refuses is an `invalid_argument` on `artifact` with the engine's message.
    func evaluate() -> CommandDispatcher.CommandResult {
        let clock = ContinuousClock()
        let loadStart = clock.now
        let engine: DecisioningEngine
        do {
            engine = DecisioningEngine(artifact: try DecisioningArtifact(artifact))
        } catch {
            return .failure(.invalidArgument("artifact", error.message))
        }
        let loading = clock.now - loadStart
        let options = DecisionOptions(
            sessionId: sessionId,
            locationHint: locationHint,
            artifactTrace: ["artifactLocation": "decisioning.evaluate", "pollingInterval": 0, "pollingHalted": true]
        )
        let decideStart = clock.now
        let decision = engine.decide(request: request, conf: conf, nowMs: nowMs, geo: geo, options: options)
        let execution = clock.now - decideStart
        // The telemetry the box would send with these notifications: the artifact's load (as the SDKs
        // report a download) and this decision's own entry.
        let load: JSONObject = [
            "requestId": "ArtifactDownload", "timestamp": .integer(nowMs),
            "execution": .number(Self.milliseconds(loading)),
        ]
        let entry = decision.telemetryEntry(execution: Self.milliseconds(execution), parsing: 0)
        var result: JSONObject = [
            "response": .object(decision.response),
            "notifications": .array(decision.notifications.map(JSONValue.object)),
            "notificationRequest": decision.notificationRequest(telemetry: [load, entry]).map(JSONValue.object)
                ?? .null,
        ]
        if let lookup = decision.geoLookup {
            result["geoLookup"] = ["ipAddress": lookup.ipAddress.map(JSONValue.string) ?? .null]
        }
        return .success(.object(result))
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}

extension CommandDispatcher {
    /// `decisioning.evaluate`: arguments checked here, the artifact read and the request decided in a
    /// task (an artifact can be hundreds of kilobytes of rules to compile).
    func evaluateDecision(_ arguments: ArgumentReader) throws(ProtocolError) -> Outcome {
        let configuration = runtime.configuration.target
        let defaults = DecisioningConf(
            client: configuration.clientCode,
            organizationId: configuration.organizationId,
            propertyToken: configuration.propertyToken.isEmpty ? nil : configuration.propertyToken
        )
        let time = target.time
        let evaluation = try DecisioningEvaluation.decode(arguments, defaults: defaults) { time.epochMilliseconds() }
        return .later { evaluation.evaluate() }
    }
}
