import PassEntitlement
import PreflightProtocol

// Adobe Pass's typed answers and its snapshot (`auth.list`, `status`) as PROTOCOL.md's JSON: the one place
// they become reply JSON.

extension PreauthorizeAnswer {
    /// The PreauthorizeResponse: `outcome`, one `resources` element per requested resource (none with a
    /// `status`), and the `status` of a top-level Adobe Pass error or of an agent-side failure. Written
    /// straight out, not made a tree first: an answer from the decision cache is written on the I/O thread
    /// into the reply being made.
    func write(to writer: inout JSONWriter) {
        writer.appendASCII(#"{"outcome":"#)
        writer.writeString(outcome)
        writer.appendASCII(#","resources":["#)
        let status: JSONValue
        switch self {
        case .decisions(let decisions):
            for (index, decision) in decisions.enumerated() {
                if index > 0 { writer.appendASCII(",") }
                decision.write(to: &writer)
            }
            writer.appendASCII("]}")
            return
        case .adobeError(let adobe): status = adobe.json
        case .failure(let failure): status = failure.json
        }
        writer.appendASCII(#"],"status":"#)
        writer.write(status)
        writer.appendASCII("}")
    }

    /// `write(to:)`'s bytes.
    var encoded: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

extension ResourceDecision {
    /// `{"id", "authorized"}`, with Adobe's `source` and item-level `error` when it sent them.
    func write(to writer: inout JSONWriter) {
        writer.appendASCII(#"{"id":"#)
        writer.writeString(resource)
        writer.appendASCII(authorized ? #","authorized":true"# : #","authorized":false"#)
        if let source {
            writer.appendASCII(#","source":"#)
            writer.writeString(source)
        }
        if let error {
            writer.appendASCII(#","error":"#)
            writer.write(error.json)
        }
        writer.appendASCII("}")
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
    /// One requestor of `auth.list`: `{"configuration", "session", "signIn", "selectedProvider", "permits",
    /// "decisions", "counters"}`.
    var json: JSONValue {
        [
            "configuration": configurationJSON,
            "session": sessionJSON,
            "signIn": signInNotAfterMs.map { ["state": "pending", "mvpd": signInMvpd.json, "notAfter": .integer($0)] }
                ?? ["state": "none"],
            "selectedProvider": selectedProvider.json,
            "permits": .integer(Int64(permits)),
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

// MARK: Entitlement (docs/PROTOCOL.md, "Entitlement")

extension PassProblem {
    /// The `status` object: Adobe's error as it sent it, or the agent's (status 0).
    var json: JSONValue {
        switch self {
        case .adobe(let status): status.json
        case .agent(let failure): failure.json
        }
    }
}

extension Optional where Wrapped == String {
    var json: JSONValue { map { .string($0) } ?? .null }
}

extension Optional where Wrapped == Int64 {
    var json: JSONValue { map { .integer($0) } ?? .null }
}

extension PendingSignIn {
    /// `{"code", "url", "notBefore", "notAfter", "mvpd"}`.
    var members: JSONObject {
        [
            "code": .string(code), "url": .string(url), "notBefore": .integer(notBefore),
            "notAfter": .integer(notAfter), "mvpd": mvpd.json,
        ]
    }
}

extension AuthenticationAnswer {
    var json: JSONValue {
        var object: JSONObject = [
            "authenticated": .bool(authenticated), "mvpd": mvpd.json, "notBefore": notBefore.json,
            "notAfter": notAfter.json, "type": type.json,
        ]
        if let problem { object["status"] = problem.json }
        if let pending { object["pending"] = .object(pending.members) }
        return .object(object)
    }
}

extension SignInAnswer {
    var json: JSONValue {
        switch self {
        case .authenticated(let mvpd, let notAfter):
            return ["authenticated": true, "mvpd": .string(mvpd), "notAfter": .integer(notAfter)]
        case .pending(let pending):
            var object: JSONObject = ["authenticated": false]
            for (key, value) in pending.members { object[key] = value }
            return .object(object)
        case .problem(let problem):
            return ["authenticated": false, "status": problem.json]
        }
    }
}

extension AuthorizationAnswer {
    /// `{"resource", "authorized", "source", "mvpd", "notAfter", "mediaToken"?, "error"?, "status"?}`.
    /// The media token is here only: never logged, never kept.
    var json: JSONValue {
        var object: JSONObject = ["resource": .string(resource), "authorized": .bool(decision?.authorized ?? false)]
        if let decision {
            object["source"] = decision.source.json
            object["mvpd"] = decision.mvpd.json
            object["notAfter"] = decision.notAfter.json
            if let token = decision.token {
                object["mediaToken"] = [
                    "serializedToken": .string(token.serializedToken), "notBefore": token.notBefore.json,
                    "notAfter": token.notAfter.json,
                ]
            }
            if let error = decision.error { object["error"] = error.json }
        }
        if fromCache { object["fromCache"] = true }
        if let problem { object["status"] = problem.json }
        return .object(object)
    }
}

extension LogoutAnswer {
    var json: JSONValue {
        var object: JSONObject = ["loggedOut": .bool(!isRequestorUnknown), "mvpd": mvpd.json]
        if let actionName { object["actionName"] = .string(actionName) }
        if let actionType { object["actionType"] = .string(actionType) }
        if let url { object["url"] = .string(url) }
        if let problem { object["status"] = problem.json }
        return .object(object)
    }

    /// Nothing was signed out: the requestor is not one this box serves.
    private var isRequestorUnknown: Bool {
        if case .agent(let failure)? = problem, failure.code == .requestorNotConfigured, mvpd == nil { return true }
        return false
    }
}

extension MetadataAnswer {
    var json: JSONValue {
        switch self {
        case .attributes(let attributes): ["attributes": .object(attributes)]
        case .value(let key, let value): ["key": .string(key), "value": value ?? .null]
        case .problem(let problem): ["attributes": .null, "status": problem.json]
        }
    }
}

extension ProviderAnswer {
    /// `{"selected", "mvpds": [{"id", "displayName", "logoUrl"}]}`; an unknown MVPD is the caller's
    /// `invalid_argument`.
    var result: Result<JSONValue, ProtocolError> {
        switch self {
        case .providers(let selected, let providers):
            let list: [JSONValue] = providers.map {
                ["id": .string($0.id), "displayName": $0.displayName.json, "logoUrl": $0.logoUrl.json]
            }
            return .success(["selected": selected.json, "mvpds": .array(list)])
        case .unknownProvider(let mvpd, let known):
            return .failure(
                .invalidArgument(
                    "mvpd",
                    "\"\(mvpd)\" is not one of this requestor's TV providers (\(known.joined(separator: ", ")))"
                )
            )
        case .problem(let problem):
            return .success(["selected": .null, "mvpds": [], "status": problem.json])
        }
    }
}
