import PreflightProtocol

/// What a trace shows of one execute or prefetch part of a request, when the request asks for a trace
/// (`"trace": {...}`): the request detail, the activities that matched (campaigns) and every activity
/// whose rules were evaluated, with the context they saw (traceProvider.js `RequestTracer`).
///
/// Each mbox, view or page load response carries the trace as it stood when its offer was decided.
struct RequestTracer {
    /// What every trace of the request repeats (`TraceProvider`): client, artifact, visitor, session.
    struct Base {
        let clientCode: String
        let artifact: JSONValue
        let profile: JSONValue
        let sessionId: String?
    }

    private let base: Base?
    private let environment: JSONValue?
    private var request = JSONObject()
    private var campaigns: [JSONObject] = []
    private var campaignIndex: [String: Int] = [:]
    private var targets: [Target] = []
    private var targetIndex: [String: Int] = [:]

    private struct Target {
        var json: JSONObject
        var matchedSegments: [JSONValue] = []
        var unmatchedSegments: [JSONValue] = []
        var matchedConditions: [JSONValue] = []
        var unmatchedConditions: [JSONValue] = []
    }

    /// A tracer that records only when `base` is given (the request asked for a trace).
    init(base: Base?, environment: JSONValue?) {
        self.base = base
        self.environment = environment
    }

    var isTracing: Bool { base != nil }

    /// `traceRequest`: which detail is being decided, with the request's own page address.
    mutating func traceRequest(mode: String, type: String, detail: JSONObject, page: JSONValue) {
        guard isTracing else { return }
        var traced = detail
        traced["type"] = .string(mode)
        request = ["pageURL": page["url"] ?? .null, "host": page["domain"] ?? .null]
        request[type] = .object(traced)
    }

    /// `traceRuleEvaluated`: a matched rule's activity becomes a campaign (once); every evaluated rule
    /// adds its audiences and condition to its activity's evaluated targets.
    mutating func ruleEvaluated(_ rule: Rule, context: RuleContext, satisfied: Bool) {
        guard isTracing else { return }
        let key = RequestTracer.activityKey(rule)
        if satisfied, campaignIndex[key] == nil {
            var campaign = JSONObject()
            campaign["id"] = rule.meta["activity.id"]
            campaign["campaignType"] = rule.meta["activity.type"]
            campaign["branchId"] = rule.meta["experience.id"]
            campaign["offers"] = .array(rule.meta["offer.id"].map { [$0] } ?? [])
            campaign["environment"] = environment
            campaignIndex[key] = campaigns.count
            campaigns.append(campaign)
        }
        if targetIndex[key] == nil {
            var json = JSONObject()
            json["context"] = context.wholeValue
            json["campaignId"] = rule.meta["activity.id"]
            json["campaignType"] = rule.meta["activity.type"]
            targetIndex[key] = targets.count
            targets.append(Target(json: json))
        }
        guard let index = targetIndex[key] else { return }
        for audience in rule.audienceIds {
            if satisfied {
                RequestTracer.insert(audience, into: &targets[index].matchedSegments)
            } else {
                RequestTracer.insert(audience, into: &targets[index].unmatchedSegments)
            }
        }
        if satisfied {
            targets[index].matchedConditions.append(rule.conditionJSON)
        } else {
            targets[index].unmatchedConditions.append(rule.conditionJSON)
        }
    }

    /// `traceNotification`: the matched campaign gets a `notifications` list (empty when the offer has
    /// no event token), and the notification when there is one.
    mutating func notificationTraced(_ rule: Rule, _ notification: JSONObject?) {
        guard isTracing, let index = campaignIndex[RequestTracer.activityKey(rule)] else { return }
        var list = campaigns[index]["notifications"]?.arrayValue ?? []
        if let notification { list.append(.object(notification)) }
        campaigns[index]["notifications"] = .array(list)
    }

    /// `getTraceResult`: the trace as it stands, or nil when the request asked for none.
    func result() -> JSONValue? {
        guard let base else { return nil }
        var traceRequest = JSONObject()
        if let sessionId = base.sessionId { traceRequest["sessionId"] = .string(sessionId) }
        for (key, value) in request { traceRequest[key] = value }
        let evaluated: [JSONValue] = targets.map { target in
            var json = target.json
            json["matchedSegmentIds"] = .array(target.matchedSegments)
            json["unmatchedSegmentIds"] = .array(target.unmatchedSegments)
            json["matchedRuleConditions"] = .array(target.matchedConditions)
            json["unmatchedRuleConditions"] = .array(target.unmatchedConditions)
            return .object(json)
        }
        return [
            "clientCode": .string(base.clientCode),
            "artifact": base.artifact,
            "profile": base.profile,
            "request": .object(traceRequest),
            "campaigns": .array(campaigns.map(JSONValue.object)),
            "evaluatedCampaignTargets": .array(evaluated),
        ]
    }

    /// Activities are keyed as JavaScript keys an object by `meta["activity.id"]`.
    private static func activityKey(_ rule: Rule) -> String {
        JavaScript.toString(rule.meta["activity.id"])
    }

    /// A JavaScript `Set` add: no duplicates.
    private static func insert(_ value: JSONValue, into list: inout [JSONValue]) {
        if !list.contains(where: { JavaScript.strictEquals($0, value) }) { list.append(value) }
    }
}
