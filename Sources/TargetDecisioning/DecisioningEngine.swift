import PreflightProtocol

/// Adobe Target's on-device decisioning: a Delivery API request decided from a rules artifact, with
/// no network and no clock of its own, as Adobe's Node.js and Java SDKs decide it (and passing Adobe's
/// conformance cases).
///
/// The engine is a value: build it once per artifact (conditions are compiled then), and call
/// `decide` from any thread. A decision needs the time (`nowMs`) and, when the artifact targets by geo
/// and the request carries only an IP address, the geo service's answer; without one the decision is
/// made without geo and says which address to look up (`Decision.geoLookup`).
public struct DecisioningEngine: Sendable {
    /// The rules the engine decides from.
    public let artifact: DecisioningArtifact
    private let cache = ContextCache()

    public init(artifact: DecisioningArtifact) {
        self.artifact = artifact
    }

    /// An engine for an artifact's JSON bytes.
    public init(artifactJSON bytes: [UInt8]) throws(ArtifactError) {
        artifact = try DecisioningArtifact(json: bytes)
    }

    /// Which of a request's mboxes and views need Target's edge (the rest the engine decides).
    public func remoteDependency(for request: JSONObject) -> RemoteDependency {
        RemoteDependency(artifact: artifact, request: request)
    }

    /// The address to look up before deciding `request`, if the artifact needs geo the request lacks.
    public func geoLookup(for request: JSONObject) -> GeoLookup? {
        let context = request["context"]?.objectValue
        return RequestPreparation.geo(context?["geo"], geoTargeting: artifact.geoTargetingEnabled, answer: nil).lookup
    }

    /// Decides a Delivery API request (`execute` and `prefetch` with `mboxes`, `views` and `pageLoad`).
    ///
    /// - Parameters:
    ///   - request: the Delivery API request body.
    ///   - conf: the client, organization and default property.
    ///   - nowMs: the time, in milliseconds since the epoch: rules' `current_timestamp`, `current_day`
    ///     and `current_time` (UTC), and the notifications' timestamp.
    ///   - geo: the geo service's answer (`x-geo-city`, `x-geo-latitude`...) for the request's IP address.
    ///   - options: session, location hint, trace details and the source of random ids.
    public func decide(
        request: JSONObject,
        conf: DecisioningConf,
        nowMs: Int64,
        geo: JSONObject? = nil,
        options: DecisionOptions = DecisionOptions()
    ) -> Decision {
        let makeIdentifier = options.makeIdentifier
        let requestId: JSONValue =
            JavaScript.isTruthy(request["requestId"]) ? request["requestId"]! : .string(makeIdentifier())
        let id = RequestPreparation.visitorId(
            request["id"]?.objectValue,
            locationHint: options.locationHint,
            makeIdentifier: makeIdentifier
        )
        var context = request["context"]?.objectValue ?? JSONObject()
        let geoPreparation = RequestPreparation.geo(
            context["geo"],
            geoTargeting: artifact.geoTargetingEnabled,
            answer: geo
        )
        context["geo"] = .object(geoPreparation.geo)
        let requestContext = RequestContext(nowMs: nowMs, context: context, geo: geoPreparation.geo, cache: cache)
        var run = DecisionRun(
            artifact: artifact,
            client: conf.client,
            context: requestContext,
            propertyToken: RequestPreparation.propertyToken(request, conf: conf),
            visitorId: Allocation.visitorIdentifier(id, makeIdentifier: makeIdentifier),
            notifications: NotificationCollector(timestamp: nowMs),
            traceBase: traceBase(request, id: id, client: conf.client, options: options),
            makeIdentifier: makeIdentifier,
            cache: cache
        )
        let dependency = remoteDependency(for: request)
        var response: JSONObject = [
            "status": dependency.isNeeded ? 206 : 200,
            "remoteMboxes": .array(dependency.mboxes.map(JSONValue.string)),
            "remoteViews": .array(dependency.views.map(JSONValue.string)),
            "requestId": requestId,
            "id": .object(id),
            "client": .string(conf.client),
        ]
        if case .object(let execute) = request["execute"] {
            response["execute"] = .object(run.decide(.execute, execute))
        }
        if case .object(let prefetch) = request["prefetch"] {
            response["prefetch"] = .object(run.decide(.prefetch, prefetch))
        }
        var notificationBase: JSONObject = ["id": .object(id), "context": .object(context)]
        notificationBase["experienceCloud"] = request["experienceCloud"]
        return Decision(
            response: response,
            notifications: run.notifications.notifications,
            geoLookup: geoPreparation.lookup,
            notificationBase: notificationBase,
            requestId: JavaScript.toString(requestId),
            timestamp: nowMs,
            features: DecisioningEngine.telemetryFeatures(request),
            telemetryEnabled: conf.telemetryEnabled
        )
    }

    /// What every trace of the request shows, when the request asks for a trace (`"trace"` present).
    private func traceBase(
        _ request: JSONObject,
        id: JSONObject,
        client: String,
        options: DecisionOptions
    ) -> RequestTracer.Base? {
        guard request["trace"] != nil else { return nil }
        var visitorId = id
        if case .string(let tntId) = id["tntId"] {
            let parts = tntId.split(separator: ".", omittingEmptySubsequences: false)
            visitorId["tntId"] = .string(String(parts[0]))
            visitorId["profileLocation"] = parts.count > 1 ? .string(String(parts[1])) : nil
        } else {
            visitorId["tntId"] = nil
            visitorId["profileLocation"] = nil
        }
        var artifactTrace = options.artifactTrace
        artifactTrace["artifactVersion"] = .string(artifact.version)
        for (key, value) in artifact.meta { artifactTrace[key] = value }
        return RequestTracer.Base(
            clientCode: client,
            artifact: .object(artifactTrace),
            profile: ["visitorId": .object(visitorId)],
            sessionId: options.sessionId
        )
    }
}

/// One request being decided: the request's context and what it accumulates (allocations,
/// notifications), mode by mode (decisionProvider.js `getDecisions`).
struct DecisionRun {
    enum Mode: String {
        case execute, prefetch
    }

    private enum DetailKind {
        case mbox, view
    }

    let artifact: DecisioningArtifact
    let client: String
    let context: RequestContext
    let propertyToken: String?
    let visitorId: String
    var notifications: NotificationCollector
    let traceBase: RequestTracer.Base?
    let makeIdentifier: () -> String
    let cache: ContextCache
    private var allocations: [String: Double] = [:]
    private let requestTokens: JSONObject

    init(
        artifact: DecisioningArtifact,
        client: String,
        context: RequestContext,
        propertyToken: String?,
        visitorId: String,
        notifications: NotificationCollector,
        traceBase: RequestTracer.Base?,
        makeIdentifier: @escaping () -> String,
        cache: ContextCache
    ) {
        self.artifact = artifact
        self.client = client
        self.context = context
        self.propertyToken = propertyToken
        self.visitorId = visitorId
        self.notifications = notifications
        self.traceBase = traceBase
        self.makeIdentifier = makeIdentifier
        self.cache = cache
        requestTokens = PostProcessing.requestTokens(geo: context.geo, enabled: artifact.responseTokenSet)
    }

    /// The execute or prefetch part of the response: `mboxes`, `views` (prefetch only), `pageLoad`.
    mutating func decide(_ mode: Mode, _ part: JSONObject) -> JSONObject {
        var tracer = RequestTracer(base: traceBase, environment: artifact.meta["environment"])
        var response = JSONObject()
        if let mboxes = part["mboxes"], JavaScript.isTruthy(mboxes) {
            var results: [JSONValue] = []
            for case .object(let mbox) in mboxes.arrayValue ?? [] {
                var unused: JSONValue?
                let decided = decideMbox(mode, mbox, &tracer, pageLoadTrace: &unused, isPageLoad: false)
                results += decided.map(JSONValue.object)
            }
            response["mboxes"] = .array(results)
        }
        if mode == .prefetch, let views = part["views"], JavaScript.isTruthy(views) {
            var results: [JSONValue] = []
            for case .object(let view) in views.arrayValue ?? [] {
                results += decideView(mode, view, &tracer).map(JSONValue.object)
            }
            response["views"] = .array(results)
        }
        if let pageLoad = part["pageLoad"], JavaScript.isTruthy(pageLoad) {
            response["pageLoad"] = .object(decidePageLoad(mode, pageLoad.objectValue ?? JSONObject(), &tracer))
        }
        return response
    }

    /// An mbox's offer: the first matching rule's, or for the global mbox one per matching experience;
    /// an mbox nothing matches comes back with its name and index only.
    private mutating func decideMbox(
        _ mode: Mode,
        _ detail: JSONObject,
        _ tracer: inout RequestTracer,
        pageLoadTrace: inout JSONValue?,
        isPageLoad: Bool
    ) -> [JSONObject] {
        let name = detail["name"]
        let isGlobal = name == .string(artifact.globalMbox)
        tracer.traceRequest(mode: mode.rawValue, type: "mbox", detail: detail, page: context.page)
        let detailContext = DetailContext(request: context, detail: detail, cache: cache)
        var consequences: [JSONObject] = []
        var matchedKeys: Set<String> = []
        for rule in artifact.mboxRules[JavaScript.toString(name)] ?? [] where rule.applies(toProperty: propertyToken) {
            if isGlobal, matchedKeys.contains(rule.ruleKey) { continue }
            guard var consequence = decideRule(rule, mode, .mbox, detail, detailContext, &tracer) else { continue }
            if isPageLoad {
                pageLoadTrace = consequence["trace"]
                for key in ["index", "name", "trace"] { consequence[key] = nil }
            }
            consequences.append(consequence)
            matchedKeys.insert(rule.ruleKey)
            if !isGlobal { break }
        }
        if !isGlobal, consequences.isEmpty {
            var blank = JSONObject()
            blank["name"] = name
            blank["index"] = detail["index"]
            blank["trace"] = tracer.result()
            consequences.append(blank)
        }
        return consequences
    }

    /// A view's offers, one response per view name with every matching experience's options (all
    /// views when the request names none).
    private mutating func decideView(_ mode: Mode, _ detail: JSONObject, _ tracer: inout RequestTracer) -> [JSONObject]
    {
        tracer.traceRequest(mode: mode.rawValue, type: "view", detail: detail, page: context.page)
        let name = detail["name"]
        let rules =
            JavaScript.isTruthy(name) ? artifact.viewRules[JavaScript.toString(name)] ?? [] : artifact.allViewRules
        let detailContext = DetailContext(request: context, detail: detail, cache: cache)
        var byName: [String: JSONObject] = [:]
        var names: [String] = []
        var matchedKeys: Set<String> = []
        for rule in rules where rule.applies(toProperty: propertyToken) && !matchedKeys.contains(rule.ruleKey) {
            guard let consequence = decideRule(rule, mode, .view, detail, detailContext, &tracer) else { continue }
            matchedKeys.insert(rule.ruleKey)
            let key = JavaScript.toString(consequence["name"])
            guard var existing = byName[key] else {
                byName[key] = consequence
                names.append(key)
                continue
            }
            for list in ["options", "metrics"] {
                let merged = (existing[list]?.arrayValue ?? []) + (consequence[list]?.arrayValue ?? [])
                existing[list] = .array(merged)
            }
            byName[key] = existing
        }
        return JavaScript.propertyOrder(names).compactMap { byName[$0] }
    }

    /// The page load: the global mbox's matching experiences, their options together, their metrics
    /// once per event token, and the trace of the last.
    private mutating func decidePageLoad(
        _ mode: Mode,
        _ pageLoad: JSONObject,
        _ tracer: inout RequestTracer
    ) -> JSONObject {
        var detail = pageLoad
        detail["name"] = .string(artifact.globalMbox)
        var trace: JSONValue?
        let consequences = decideMbox(mode, detail, &tracer, pageLoadTrace: &trace, isPageLoad: true)
        var result: JSONObject = ["options": .array(consequences.flatMap { $0["options"]?.arrayValue ?? [] })]
        result["trace"] = trace
        var metrics: [String: JSONValue] = [:]
        var tokens: [String] = []
        for consequence in consequences {
            for metric in consequence["metrics"]?.arrayValue ?? [] {
                let token = JavaScript.toString(metric["eventToken"])
                if metrics[token] == nil { tokens.append(token) }
                metrics[token] = metric
            }
        }
        if !tokens.isEmpty { result["metrics"] = .array(JavaScript.propertyOrder(tokens).compactMap { metrics[$0] }) }
        return result
    }

    /// A rule evaluated for a request detail (ruleEvaluator.js): its consequence post-processed when the
    /// condition holds. A condition that cannot be evaluated does not hold (as in the Java engine).
    private mutating func decideRule(
        _ rule: Rule,
        _ mode: Mode,
        _ kind: DetailKind,
        _ detail: JSONObject,
        _ detailContext: DetailContext,
        _ tracer: inout RequestTracer
    ) -> JSONObject? {
        let ruleContext = RuleContext(detail: detailContext, allocation: allocation(rule))
        guard let satisfied = try? rule.condition.isSatisfied(by: ruleContext) else { return nil }
        tracer.ruleEvaluated(rule, context: ruleContext, satisfied: satisfied)
        guard satisfied else { return nil }
        var consequence = rule.consequence
        consequence["index"] = detail["index"]
        switch mode {
        case .execute:
            let notification = notifications.add(consequence, makeIdentifier: makeIdentifier)
            tracer.notificationTraced(rule, notification)
            PostProcessing.prepareExecute(&consequence)
        case .prefetch:
            PostProcessing.preparePrefetch(&consequence, isView: kind == .view)
        }
        PostProcessing.addResponseTokens(&consequence, ruleTokens: rule.responseTokens, requestTokens: requestTokens)
        PostProcessing.replaceMacros(&consequence, meta: rule.meta, detail: detail)
        consequence["trace"] = tracer.result()
        return consequence
    }

    /// The visitor's allocation in the rule's activity, computed once per activity and request.
    private mutating func allocation(_ rule: Rule) -> Double {
        if let known = allocations[rule.activityKey] { return known }
        let value = Allocation.percentage(client: client, activityId: rule.activityKey, visitorId: visitorId)
        allocations[rule.activityKey] = value
        return value
    }
}
