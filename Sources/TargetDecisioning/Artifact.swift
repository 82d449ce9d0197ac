import PreflightProtocol

/// Why a rules artifact was refused.
public struct ArtifactError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a caller can switch on.
    public enum Code: Sendable, Equatable {
        /// Not JSON, or not a JSON object.
        case unreadable
        /// The major `version` is not 1 (or there is none); the engine reads version 1 only.
        case unsupportedVersion
    }

    public let code: Code
    public let message: String

    public var description: String { message }
}

/// A Target on-device decisioning artifact (`rules.json`), read once into the form the engine decides
/// from: conditions compiled, rules grouped by mbox and view, lists as sets where the engine looks up.
///
/// Only the major version 1 is accepted, as Adobe's engines accept only it
/// (`SUPPORTED_ARTIFACT_MAJOR_VERSION`).
public struct DecisioningArtifact: Sendable {
    /// The deepest nesting an artifact may have (conditions nest a few levels; the limit only stops a
    /// hostile file from exhausting the stack).
    public static let maxDepth = 512

    /// `version`, for example "1.0.0".
    public let version: String
    /// `meta`: `clientCode`, `environment`, and in published artifacts `generatedAt`.
    public let meta: JSONObject
    /// The name the page load is decided under (`globalMbox`, default `target-global-mbox`).
    public let globalMbox: String
    /// Whether rules use geo (`geoTargetingEnabled`): then a request carrying only an IP address needs
    /// that address looked up.
    public let geoTargetingEnabled: Bool
    /// The response tokens the account has enabled.
    public let responseTokens: [String]
    /// Mboxes with activities the box can decide (`localMboxes`).
    public let localMboxes: [String]
    /// Mboxes with activities only Target's edge can decide (`remoteMboxes`).
    public let remoteMboxes: [String]
    public let localViews: [String]
    public let remoteViews: [String]

    let mboxRules: [String: [Rule]]
    /// How the clock enters each mbox's decisions (`stableSpan`).
    let mboxTimeDependence: [String: TimeDependence]
    let viewRules: [String: [Rule]]
    /// Every view's rules, views in the order JavaScript lists the artifact's keys.
    let allViewRules: [Rule]
    let responseTokenSet: Set<String>

    /// When Target generated the artifact (`meta.generatedAt`), if it says.
    public var generatedAt: String? { meta["generatedAt"]?.stringValue }
    /// The number of rules for mboxes and views.
    public var rulesCount: Int { mboxRules.values.reduce(0) { $0 + $1.count } + allViewRules.count }

    /// Reads an artifact from its JSON bytes.
    public init(json bytes: [UInt8]) throws(ArtifactError) {
        let value: JSONValue
        do {
            value = try JSONReader.read(bytes, maxDepth: DecisioningArtifact.maxDepth)
        } catch {
            throw ArtifactError(code: .unreadable, message: "The artifact is not JSON: \(error)")
        }
        try self.init(value)
    }

    /// Reads an artifact already parsed as JSON.
    public init(_ json: JSONValue) throws(ArtifactError) {
        guard case .object(let artifact) = json else {
            throw ArtifactError(code: .unreadable, message: "The artifact is not a JSON object")
        }
        guard case .string(let version) = artifact["version"] else {
            throw ArtifactError(code: .unsupportedVersion, message: "The artifact has no version")
        }
        let major = version.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard JavaScript.parseInt(String(major)) == 1 else {
            throw ArtifactError(
                code: .unsupportedVersion,
                message: "The artifact version (\(version)) is not supported: only major version 1 is"
            )
        }
        self.version = version
        meta = artifact["meta"]?.objectValue ?? JSONObject()
        globalMbox = DecisioningArtifact.nonEmptyString(artifact["globalMbox"]) ?? "target-global-mbox"
        geoTargetingEnabled = JavaScript.isTruthy(artifact["geoTargetingEnabled"])
        responseTokens = DecisioningArtifact.strings(artifact["responseTokens"])
        responseTokenSet = Set(responseTokens)
        localMboxes = DecisioningArtifact.strings(artifact["localMboxes"])
        remoteMboxes = DecisioningArtifact.strings(artifact["remoteMboxes"])
        localViews = DecisioningArtifact.strings(artifact["localViews"])
        remoteViews = DecisioningArtifact.strings(artifact["remoteViews"])
        let rules = artifact["rules"]?.objectValue ?? JSONObject()
        mboxRules = DecisioningArtifact.rulesByName(rules["mboxes"], tokens: responseTokenSet)
        viewRules = DecisioningArtifact.rulesByName(rules["views"], tokens: responseTokenSet)
        mboxTimeDependence = mboxRules.mapValues(TimeDependence.init(rules:))
        let viewNames = JavaScript.propertyOrder(rules["views"]?.objectValue?.keys ?? [])
        allViewRules = viewNames.flatMap { [viewRules] name in viewRules[name] ?? [] }
    }

    private static func nonEmptyString(_ value: JSONValue?) -> String? {
        guard case .string(let text) = value, !text.isEmpty else { return nil }
        return text
    }

    private static func strings(_ value: JSONValue?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    private static func rulesByName(_ value: JSONValue?, tokens: Set<String>) -> [String: [Rule]] {
        var result: [String: [Rule]] = [:]
        for (name, list) in value?.objectValue ?? JSONObject() {
            result[name] = (list.arrayValue ?? []).compactMap { rule in
                rule.objectValue.map { Rule($0, enabledTokens: tokens) }
            }
        }
        return result
    }
}

/// One rule: when `condition` holds, `consequence` is the offer, with `meta` for response tokens,
/// macros and traces. A class, so that walking an mbox's rules copies one reference per rule, not
/// every field.
final class Rule: Sendable {
    /// Rules of one activity experience share a key; a page load takes one consequence per key.
    let ruleKey: String
    /// `meta["activity.id"]` as JavaScript joins it into the allocation's device id.
    let activityKey: String
    let meta: JSONObject
    let condition: JsonLogic
    /// The condition as written, for traces.
    let conditionJSON: JSONValue
    let consequence: JSONObject
    /// When not empty, the rule applies only to requests for one of these properties.
    let propertyTokens: [String]
    /// `meta["audience.ids"]`, for traces.
    let audienceIds: [JSONValue]
    /// The response tokens the rule's meta gives every option, as far as the account enables them.
    let responseTokens: JSONObject

    init(_ rule: JSONObject, enabledTokens: Set<String>) {
        // A missing key groups with other missing keys, as `undefined` does in a JavaScript Set.
        switch rule["ruleKey"] {
        case nil: ruleKey = "undefined"
        case .string(let key): ruleKey = "s" + key
        case let key?: ruleKey = "v" + JSONWriter.string(key)
        }
        meta = rule["meta"]?.objectValue ?? JSONObject()
        switch meta["activity.id"] {
        case nil, .null: activityKey = ""
        case let id: activityKey = JavaScript.toString(id)
        }
        conditionJSON = rule["condition"] ?? .null
        condition = JsonLogic(compiling: conditionJSON)
        consequence = rule["consequence"]?.objectValue ?? JSONObject()
        propertyTokens = rule["propertyTokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
        audienceIds = meta["audience.ids"]?.arrayValue ?? []
        responseTokens = PostProcessing.ruleTokens(meta: meta, enabled: enabledTokens)
    }

    /// `byPropertyToken`: rules without property tokens apply to every request; rules with them only
    /// to requests for one of their properties.
    func applies(toProperty token: String?) -> Bool {
        propertyTokens.isEmpty || token.map(propertyTokens.contains) == true
    }
}
