import PreflightProtocol

/// The display notifications of a request's executed offers (notificationProvider.js): one per
/// executed consequence with event tokens, each token of an mbox sent once per request.
struct NotificationCollector {
    let timestamp: Int64
    private(set) var notifications: [JSONObject] = []
    private var sentTokens: Set<String> = []

    init(timestamp: Int64) {
        self.timestamp = timestamp
    }

    /// Records the display of `consequence`'s options; returns the notification, or nil when none of
    /// its options has an event token not already sent for that mbox.
    mutating func add(_ consequence: JSONObject, makeIdentifier: () -> String) -> JSONObject? {
        let name = consequence["name"]
        var tokens: [JSONValue] = []
        for option in consequence["options"]?.arrayValue ?? [] {
            guard let token = option["eventToken"] else { continue }
            let key = JavaScript.toString(name) + "-" + JavaScript.toString(token)
            if sentTokens.insert(key).inserted { tokens.append(token) }
        }
        guard !tokens.isEmpty else { return nil }
        var mbox = JSONObject()
        mbox["name"] = name
        let notification: JSONObject = [
            "id": .string(makeIdentifier()),
            "impressionId": .string(makeIdentifier()),
            "timestamp": .integer(timestamp),
            "type": "display",
            "mbox": .object(mbox),
            "tokens": .array(tokens),
        ]
        notifications.append(notification)
        return notification
    }
}

extension DecisioningEngine {
    /// The features a telemetry entry reports about a request (target-tools `getFeatures`): only those
    /// present, and the decisioning method.
    static func telemetryFeatures(_ request: JSONObject) -> JSONObject {
        var features = JSONObject()
        let execute = request["execute"]?.objectValue
        let prefetch = request["prefetch"]?.objectValue
        if execute?["pageLoad"]?.objectValue != nil { features["executePageLoad"] = true }
        if let count = execute?["mboxes"]?.arrayValue?.count, count > 0 {
            features["executeMboxCount"] = .integer(Int64(count))
        }
        if prefetch?["pageLoad"]?.objectValue != nil { features["prefetchPageLoad"] = true }
        if let count = prefetch?["mboxes"]?.arrayValue?.count, count > 0 {
            features["prefetchMboxCount"] = .integer(Int64(count))
        }
        if let count = prefetch?["views"]?.arrayValue?.count, count > 0 {
            features["prefetchViewCount"] = .integer(Int64(count))
        }
        features["decisioningMethod"] = "on-device"
        return features
    }
}
