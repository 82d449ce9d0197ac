import PassAuthorization
import PreflightProtocol

// Adobe Pass's typed answers as PROTOCOL.md's JSON: the one place they become reply JSON.

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
