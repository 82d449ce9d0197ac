import PreflightProtocol

/// What happens to a matched rule's consequence before it is an mbox, view or page load response
/// (postProcessors.js): execute and prefetch preparation, response tokens, campaign macros.
enum PostProcessing {
    /// `prepareExecuteResponse`: options without a type and content go, event tokens leave the options
    /// (they went into the display notification), and only click metrics stay.
    static func prepareExecute(_ consequence: inout JSONObject) {
        let options = consequence["options"]?.arrayValue ?? []
        consequence["options"] = .array(
            options.compactMap { option in
                guard case .object(var object) = option else { return option }
                if object["type"] == nil, object["content"] == nil { return nil }
                object["eventToken"] = nil
                return .object(object)
            }
        )
        let clicks = (consequence["metrics"]?.arrayValue ?? []).filter { $0["type"] == "click" }
        consequence["metrics"] = clicks.isEmpty ? nil : .array(clicks)
    }

    /// `preparePrefetchResponse`: an option without an event token takes the display metric's at its
    /// position; metrics stay on views only.
    static func preparePrefetch(_ consequence: inout JSONObject, isView: Bool) {
        let metrics = consequence["metrics"]?.arrayValue ?? []
        let options = consequence["options"]?.arrayValue ?? []
        consequence["options"] = .array(
            options.enumerated().map { position, option in
                guard case .object(var object) = option, object["eventToken"] == nil else { return option }
                if position < metrics.count, metrics[position]["type"] == "display" {
                    object["eventToken"] = metrics[position]["eventToken"]
                }
                return .object(object)
            }
        )
        if !isView { consequence["metrics"] = nil }
    }

    /// `addResponseTokens`: every option gets the rule's tokens and the request's.
    static func addResponseTokens(_ consequence: inout JSONObject, ruleTokens: JSONObject, requestTokens: JSONObject) {
        var tokens = ruleTokens
        for (key, value) in requestTokens { tokens[key] = value }
        let options = consequence["options"]?.arrayValue ?? []
        consequence["options"] = .array(
            options.map { option in
                guard case .object(var object) = option else { return option }
                object["responseTokens"] = .object(tokens)
                return .object(object)
            }
        )
    }

    /// The response tokens a rule's `meta` supplies, when the account enables them.
    static let metaTokenKeys = [
        "activity.id", "activity.name", "activity.type", "experience.id", "experience.name", "location.id",
        "location.name", "location.type", "offer.id", "offer.name", "option.id", "option.name",
    ]

    static func ruleTokens(meta: JSONObject, enabled: Set<String>) -> JSONObject {
        var tokens = JSONObject()
        for key in metaTokenKeys where enabled.contains(key) {
            if let value = meta[key] { tokens[key] = value }
        }
        return tokens
    }

    /// The tokens every option of a request gets: `activity.decisioningMethod` and the enabled geo ones.
    static func requestTokens(geo: JSONValue, enabled: Set<String>) -> JSONObject {
        var tokens: JSONObject = ["activity.decisioningMethod": "on-device"]
        for (token, key) in [
            ("geo.city", "city"), ("geo.country", "country"), ("geo.state", "region"), ("geo.latitude", "latitude"),
            ("geo.longitude", "longitude"),
        ] where enabled.contains(token) {
            if let value = geo[key] { tokens[token] = value }
        }
        return tokens
    }

    /// `replaceCampaignMacros`: `${...}` in html content and in each action's content becomes the
    /// value it names in the rule's meta, the request detail or its parameters.
    static func replaceMacros(_ consequence: inout JSONObject, meta: JSONObject, detail: JSONObject) {
        let options = consequence["options"]?.arrayValue ?? []
        consequence["options"] = .array(
            options.map { option in
                guard case .object(var object) = option else { return option }
                switch object["type"] {
                case .string("html")?:
                    object["content"] = Macros.replace(object["content"], meta: meta, detail: detail)
                case .string("actions")?:
                    guard case .array(let actions) = object["content"] else { return option }
                    object["content"] = .array(
                        actions.map { action in
                            guard case .object(var step) = action else { return action }
                            step["content"] = Macros.replace(step["content"], meta: meta, detail: detail)
                            return .object(step)
                        }
                    )
                default:
                    break
                }
                return .object(object)
            }
        )
    }
}

/// Campaign macros in offer content (`${activity.id}`, `${campaign.name}`, `${mbox.name}`,
/// `${mbox.someParameter}`...), replaced as the Node.js engine replaces them.
enum Macros {
    /// Content that is not a string stays as it is.
    static func replace(_ content: JSONValue?, meta: JSONObject, detail: JSONObject) -> JSONValue? {
        guard case .string(let text) = content, JavaScript.includes(text, "${") else { return content }
        let units = Array(text.utf16)
        var result: [UInt16] = []
        result.reserveCapacity(units.count)
        var index = 0
        while index < units.count {
            if units[index] == 0x24, index + 1 < units.count, units[index + 1] == 0x7B {
                var end = index + 2
                while end < units.count, isMacroCharacter(units[end]) { end += 1 }
                if end < units.count, units[end] == 0x7D {
                    let key = String(decoding: units[(index + 2)..<end], as: UTF16.self)
                    let whole = String(decoding: units[index...end], as: UTF16.self)
                    result.append(contentsOf: value(key, meta: meta, detail: detail, otherwise: whole).utf16)
                    index = end + 1
                    continue
                }
            }
            result.append(units[index])
            index += 1
        }
        return .string(String(decoding: result, as: UTF16.self))
    }

    /// `[a-zA-Z0-9_.]`
    private static func isMacroCharacter(_ unit: UInt16) -> Bool {
        (unit >= 0x30 && unit <= 0x39) || (unit >= 0x41 && unit <= 0x5A) || (unit >= 0x61 && unit <= 0x7A)
            || unit == 0x5F || unit == 0x2E
    }

    /// The macro's value: `campaign` is read as `activity` and `recipe` as `experience`, only the last
    /// two dotted parts count, an `mbox` part is dropped, and the key is looked up in the rule's meta,
    /// then the request detail, then its parameters. A macro nothing names stays as written.
    private static func value(_ macro: String, meta: JSONObject, detail: JSONObject, otherwise: String) -> String {
        var parts = renamed(macro).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if parts.count > 2 { parts = Array(parts.suffix(2)) }
        let key = parts.filter { $0 != "mbox" }.joined(separator: ".")
        for haystack in [meta, detail, detail["parameters"]?.objectValue ?? JSONObject()] {
            if let found = haystack[key] { return JavaScript.toString(found) }
        }
        return otherwise
    }

    /// `/campaign|recipe/gi` replaced through a lookup that knows only the lowercase spellings (another
    /// spelling becomes "undefined", as in the Node.js engine).
    private static func renamed(_ macro: String) -> String {
        let units = Array(macro.utf16)
        var result = ""
        var index = 0
        while index < units.count {
            var replaced = false
            for (word, replacement) in [("campaign", "activity"), ("recipe", "experience")] {
                let length = word.utf16.count
                guard index + length <= units.count else { continue }
                let candidate = String(decoding: units[index..<(index + length)], as: UTF16.self)
                guard candidate.lowercased() == word else { continue }
                result += candidate == word ? replacement : "undefined"
                index += length
                replaced = true
                break
            }
            if !replaced {
                result += String(decoding: [units[index]], as: UTF16.self)
                index += 1
            }
        }
        return result
    }
}
