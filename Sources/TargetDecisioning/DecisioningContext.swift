import PreflightProtocol

/// What every rule of one request sees (contextProvider.js `createDecisioningContext`): the time in
/// UTC, the browser, the page and referring addresses, and geo.
struct RequestContext: Sendable {
    /// `current_timestamp`: milliseconds since the epoch.
    let timestamp: Int64
    /// `current_time`: "HHmm", UTC.
    let time: String
    /// `current_day`: 1 for Monday to 7 for Sunday, UTC.
    let day: Int
    let user: JSONValue
    let page: JSONValue
    let referring: JSONValue
    let geo: JSONValue

    init(nowMs: Int64, context: JSONObject, geo: JSONObject, cache: ContextCache = ContextCache()) {
        timestamp = nowMs
        let dayLength: Int64 = 86_400_000
        let days = nowMs >= 0 ? nowMs / dayLength : (nowMs - dayLength + 1) / dayLength
        let millisecondsToday = nowMs - days * dayLength
        let hours = millisecondsToday / 3_600_000
        let minutes = millisecondsToday % 3_600_000 / 60_000
        time = (hours < 10 ? "0" : "") + String(hours) + (minutes < 10 ? "0" : "") + String(minutes)
        let weekday = Int(((days + 4) % 7 + 7) % 7)  // 1970-01-01 was a Thursday; 0 is Sunday
        day = weekday == 0 ? 7 : weekday
        let userAgent = context["userAgent"]?.stringValue ?? ""
        let hints = context["clientHints"].map(JSONWriter.string) ?? ""
        user = cache.user(key: userAgent + "\u{0}" + hints) { RequestContext.user(context) }
        let address = context["address"]?.objectValue
        page = cache.page(url: address?["url"]?.stringValue ?? "")
        referring = cache.page(url: address?["referringUrl"]?.stringValue ?? "")
        self.geo = RequestContext.geo(geo)
    }

    /// `user`: browser type and major version, platform, and a locale the engines always give as "en".
    private static func user(_ context: JSONObject) -> JSONValue {
        var hints: UserAgent.BrowserHints?
        if case .object(let clientHints) = context["clientHints"] {
            var platform: String?? = nil
            switch clientHints["platform"] {
            case nil: platform = nil
            case .string(let name): platform = .some(name)
            case .some: platform = .some(nil)
            }
            hints = UserAgent.BrowserHints(
                fullVersionList: clientHints["browserUAWithFullVersion"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
                majorVersionList: clientHints["browserUAWithMajorVersion"]?.stringValue,
                platform: platform
            )
        }
        let agent = UserAgent(userAgent: context["userAgent"]?.stringValue ?? "", clientHints: hints)
        return [
            "browserType": .string(agent.browserType),
            "platform": agent.platform.map(JSONValue.string) ?? .null,
            "locale": "en",
            "browserVersion": JavaScript.jsonNumber(agent.browserVersion),
        ]
    }

    /// `geo` from the request's (validated) geo: country and region codes, city, latitude, longitude.
    private static func geo(_ geo: JSONObject) -> JSONValue {
        var result = JSONObject()
        for (key, source) in [
            ("country", "countryCode"), ("region", "stateCode"), ("city", "city"), ("latitude", "latitude"),
            ("longitude", "longitude"),
        ] {
            if let value = geo[source] { result[key] = value }
        }
        return .object(result)
    }
}

/// What one request detail (an mbox, a view or the page load) adds: its own address when it has one,
/// and its parameters as `mbox`.
struct DetailContext: Sendable {
    let request: RequestContext
    let page: JSONValue
    let referring: JSONValue
    let mbox: JSONValue

    init(request: RequestContext, detail: JSONObject, cache: ContextCache = ContextCache()) {
        self.request = request
        if let address = detail["address"] {
            // A detail's own address replaces the request's page. Its referring address is its own
            // `referringUrl`, as the Java engine reads it (the Node.js engine reads `url` twice here).
            page = cache.page(url: address["url"]?.stringValue ?? "")
            referring = cache.page(url: address["referringUrl"]?.stringValue ?? "")
        } else {
            page = request.page
            referring = request.referring
        }
        mbox = .object(DetailContext.parameters(detail["parameters"]?.objectValue ?? JSONObject()))
    }

    /// `createMboxContext`: dotted parameter names become nested objects ("a.b" is `mbox.a.b`), and
    /// every string gets a lowercase `_lc` copy beside it, at every level.
    static func parameters(_ parameters: JSONObject) -> JSONObject {
        withLowercaseCopies(unflatten(parameters))
    }

    private static func unflatten(_ parameters: JSONObject) -> JSONObject {
        var result = JSONObject()
        for (key, value) in parameters {
            if isExpandable(key) {
                setNested(&result, key.split(separator: ".").map(String.init)[...], value)
            } else {
                result[key] = value
            }
        }
        return result
    }

    /// A key with a dot that neither starts nor ends it, and no two dots in a row.
    private static func isExpandable(_ key: String) -> Bool {
        JavaScript.includes(key, ".") && !JavaScript.includes(key, "..") && !key.hasPrefix(".") && !key.hasSuffix(".")
    }

    /// `setNestedValue`. A truthy non-object already in the way makes JavaScript throw; the key is
    /// skipped here instead.
    private static func setNested(_ object: inout JSONObject, _ keys: ArraySlice<String>, _ value: JSONValue) {
        guard let key = keys.first else { return }
        if keys.count == 1 {
            object[key] = value
            return
        }
        var child: JSONObject
        switch object[key] {
        case .object(let existing): child = existing
        case let existing where JavaScript.isTruthy(existing): return
        default: child = JSONObject()
        }
        setNested(&child, keys.dropFirst(), value)
        object[key] = .object(child)
    }

    private static func withLowercaseCopies(_ object: JSONObject) -> JSONObject {
        var result = object
        for (key, value) in object {
            switch value {
            case .string(let text): result[key + "_lc"] = .string(text.lowercased())
            case .object(let child): result[key] = .object(withLowercaseCopies(child))
            default: break
            }
        }
        return result
    }
}

/// What a rule's condition reads with `var`: the request and detail context and the visitor's
/// allocation in the rule's activity.
struct RuleContext: LogicData {
    let detail: DetailContext
    let allocation: Double

    func lookup(_ path: VariablePath) -> JSONValue? {
        guard let segments = path.segments else { return wholeValue }
        let root: JSONValue?
        switch path.contextKey {
        case .allocation: root = .number(allocation)
        case .mbox: root = detail.mbox
        case .page: root = detail.page
        case .referring: root = detail.referring
        case .user: root = detail.request.user
        case .geo: root = detail.request.geo
        case .currentTimestamp: root = .integer(detail.request.timestamp)
        case .currentTime: root = .string(detail.request.time)
        case .currentDay: root = .integer(Int64(detail.request.day))
        case .other: root = nil
        }
        guard let root else { return nil }
        return ValueData.resolve(root, segments.dropFirst())
    }

    /// The whole context, in the Node.js engine's member order (also what traces show).
    var wholeValue: JSONValue? {
        [
            "current_timestamp": .integer(detail.request.timestamp),
            "current_time": .string(detail.request.time),
            "current_day": .integer(Int64(detail.request.day)),
            "user": detail.request.user,
            "page": detail.page,
            "referring": detail.referring,
            "geo": detail.request.geo,
            "mbox": detail.mbox,
            "allocation": JavaScript.jsonNumber(allocation),
        ]
    }
}
