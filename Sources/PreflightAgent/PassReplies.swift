import PassAuthorization
import PreflightProtocol

// Adobe Pass's typed answers and its snapshot (`auth.list`, `status`) as PROTOCOL.md's JSON: the one place
// they become reply JSON.

extension PreauthorizeAnswer {
    /// The PreauthorizeResponse: `outcome`, one `resources` element per requested resource (none with a
    /// `status`), and the `status` of a top-level Adobe Pass error or of an agent-side failure.
    var json: JSONValue {
        switch self {
        case .decisions(let decisions):
            return ["outcome": .string(outcome), "resources": .array(decisions.map(\.json))]
        case .adobeError(let status):
            return ["outcome": .string(outcome), "resources": [], "status": status.json]
        case .failure(let failure):
            return ["outcome": .string(outcome), "resources": [], "status": failure.json]
        }
    }
}

extension ResourceDecision {
    /// `{"id", "authorized"}`, with Adobe's item-level `error` when it sent one.
    var json: JSONValue {
        var object: JSONObject = ["id": .string(resource), "authorized": .bool(authorized)]
        if let error { object["error"] = error.json }
        return .object(object)
    }
}

extension AdobeStatus {
    /// Adobe's fields, passed through in their fixed order.
    var json: JSONValue { .object(fields) }
}

extension PassFailure {
    /// The `status` object of an agent-side failure: status 0.
    var json: JSONValue {
        [
            "status": 0, "code": .string(code.rawValue), "message": .string(message),
            "action": .string(action.rawValue),
        ]
    }
}

extension ClearedPassState {
    /// The `auth.clear` result: `{"requestor", "profiles", "decisions", "registration"}`, requestor null
    /// when every requestor was cleared.
    var json: JSONValue {
        [
            "requestor": requestor.map { .string($0) } ?? .null, "profiles": .integer(Int64(profiles)),
            "decisions": .integer(Int64(decisions)), "registration": .bool(registration),
        ]
    }
}

extension PassSnapshot {
    /// `auth.list`'s result (docs/PROTOCOL.md), member for member.
    var json: JSONValue {
        var root: JSONObject = ["serverURL": .string(serverURL)]
        root["upstream"] = upstream.json
        var registration: JSONObject = ["state": .string(self.registration.rawValue)]
        if let registeredAtMs { registration["registeredAt"] = .integer(registeredAtMs) }
        root["registration"] = .object(registration)
        var token: JSONObject = ["state": .string(self.token.rawValue)]
        if let tokenExpiresAtMs { token["expiresAt"] = .integer(tokenExpiresAtMs) }
        if let tokenExpiresInMs { token["expiresInMs"] = .integer(tokenExpiresInMs) }
        root["accessToken"] = .object(token)
        var pacing: JSONObject = ["burstRemaining": .integer(Int64(burstRemaining))]
        if let blockedForMs { pacing["blockedForMs"] = .integer(blockedForMs) }
        root["pacing"] = .object(pacing)
        root["requestors"] = .object(JSONObject(requestors.map { (key: $0.name, value: $0.json) }))
        root["unknownRequestorAnswers"] = .integer(Int64(unknownRequestorAnswers))
        return .object(root)
    }
}

extension PassSnapshot.Requestor {
    /// One requestor of `auth.list`: `{"configuration", "session", "decisions", "counters"}`.
    var json: JSONValue {
        [
            "configuration": configurationJSON,
            "session": sessionJSON,
            "decisions": .array(
                decisions.map {
                    ["mvpd": .string($0.mvpd), "resource": .string($0.resource), "ageMs": .integer($0.ageMs)]
                }
            ),
            "counters": counters.json,
        ]
    }

    /// `{"state"}`, with `configuredAt`, the `mvpds` once configured, `attempts` and `lastError` when known.
    var configurationJSON: JSONValue {
        var configuration: JSONObject = ["state": .string(configurationState.rawValue)]
        if let configuredAtMs { configuration["configuredAt"] = .integer(configuredAtMs) }
        if configurationState == .configured { configuration["mvpds"] = .array(mvpds.map { .string($0) }) }
        if let configurationAttempts { configuration["attempts"] = .integer(Int64(configurationAttempts)) }
        if let configurationError { configuration["lastError"] = .string(configurationError) }
        return .object(configuration)
    }

    /// `{"state"}`, with the session's `mvpd` and `notAfter` when known: in `auth.list` and `status`.
    var sessionJSON: JSONValue {
        var session: JSONObject = ["state": .string(sessionState)]
        if let sessionMvpd { session["mvpd"] = .string(sessionMvpd) }
        if let sessionNotAfterMs { session["notAfter"] = .integer(sessionNotAfterMs) }
        return .object(session)
    }
}

extension AnswerCounters {
    /// `{"outcomes", "codes", "permitted", "denied", "fromCache"}`, outcomes and codes sorted by name.
    var json: JSONValue {
        [
            "outcomes": Self.sorted(outcomes), "codes": Self.sorted(codes), "permitted": .integer(Int64(permitted)),
            "denied": .integer(Int64(denied)), "fromCache": .integer(Int64(fromCache)),
        ]
    }

    private static func sorted(_ counts: [String: Int]) -> JSONValue {
        .object(JSONObject(counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: .integer(Int64($0.value))) }))
    }
}

extension UpstreamHealth {
    /// How Adobe Pass has been answering: `auth.list`'s `upstream`, and `status`'s `upstreams.pass` after
    /// its `url`. Unknown values are null.
    var members: JSONObject {
        [
            "calls": .integer(Int64(calls)),
            "errors": .integer(Int64(errors)),
            "lastSuccessAtMs": lastSuccessAtMs.map { .integer($0) } ?? .null,
            "lastErrorAtMs": lastErrorAtMs.map { .integer($0) } ?? .null,
            "lastErrorCode": lastErrorCode.map { .string($0) } ?? .null,
            "lastErrorStatus": lastErrorStatus.map { .integer(Int64($0)) } ?? .null,
            "lastErrorOperation": lastErrorOperation.map { .string($0) } ?? .null,
        ]
    }

    var json: JSONValue { .object(members) }
}
