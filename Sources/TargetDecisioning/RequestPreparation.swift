import PreflightProtocol

/// What the engine settles about a request before deciding (requestProvider.js, geoProvider.js and
/// the dependency check in utils.js).
enum RequestPreparation {
    static let unknownIpAddress = "unknownIpAddress"

    /// `validVisitorId`: a request with no tntId, Marketing Cloud visitor id, authenticated customer id
    /// or third-party id gets a new tntId (with the location hint, when there is one).
    static func visitorId(_ id: JSONObject?, locationHint: String?, makeIdentifier: () -> String) -> JSONObject {
        var result = id ?? JSONObject()
        let hasId =
            JavaScript.isTruthy(result["tntId"]) || JavaScript.isTruthy(result["marketingCloudVisitorId"])
            || JavaScript.isTruthy(authenticatedCustomerId(result)) || JavaScript.isTruthy(result["thirdPartyId"])
        if !hasId {
            let hint = locationHint.flatMap { JavaScript.trimmed($0).isEmpty ? nil : ".\($0)_0" } ?? ""
            result["tntId"] = .string(makeIdentifier() + hint)
        }
        return result
    }

    private static func authenticatedCustomerId(_ id: JSONObject) -> JSONValue? {
        guard case .array(let customerIds) = id["customerIds"] else { return nil }
        return customerIds.first { $0["authenticatedState"] == .string("authenticated") }?["id"]
    }

    /// The request's geo as the engine uses it (`validGeoRequestContext`): an unknown or invalid IP
    /// address is dropped; when the artifact targets by geo and the request has an address but no geo
    /// values, the geo service's answer (`x-geo-*`) fills them in, or a lookup is asked for.
    static func geo(
        _ requested: JSONValue?,
        geoTargeting: Bool,
        answer: JSONObject?
    ) -> (geo: JSONObject, lookup: GeoLookup?) {
        let geo = requested?.objectValue ?? JSONObject()
        var validated = geo
        let address = geo["ipAddress"]
        let isUnknown = address == .string(unknownIpAddress)
        let isValid = address?.stringValue.map(isValidIPAddress) ?? false
        if isUnknown || !isValid { validated["ipAddress"] = nil }
        let hasValues = ["latitude", "longitude", "countryCode", "stateCode", "city"].contains { geo[$0] != nil }
        guard geoTargeting, isUnknown || isValid, !hasValues else { return (validated, nil) }
        guard let answer else {
            return (validated, GeoLookup(ipAddress: isUnknown ? nil : address?.stringValue))
        }
        for (key, value) in geoValues(answer) { validated[key] = value }
        return (validated, nil)
    }

    /// `createGeoObjectFromPayload`: the geo service's headers as Delivery API geo fields.
    static func geoValues(_ answer: JSONObject) -> JSONObject {
        var result = JSONObject()
        for (header, key, isNumber) in [
            ("x-forwarded-for", "ipAddress", false), ("x-geo-latitude", "latitude", true),
            ("x-geo-longitude", "longitude", true), ("x-geo-country-code", "countryCode", false),
            ("x-geo-region-code", "stateCode", false), ("x-geo-city", "city", false),
        ] {
            guard let value = answer[header], value != .null else { continue }
            result[key] = isNumber ? JavaScript.jsonNumber(JavaScript.parseFloat(JavaScript.toString(value))) : value
        }
        return result
    }

    /// target-tools' `isValidIpAddress`: an IPv4 or IPv6 address (IPv6 with an optional `%zone`),
    /// white space around it allowed.
    static func isValidIPAddress(_ text: String) -> Bool {
        let address = JavaScript.trimmed(text)
        if isIPv4(address) { return true }
        var body = address
        if let percent = address.firstIndex(of: "%") {
            guard address.index(after: percent) < address.endIndex else { return false }
            body = address[..<percent]
        }
        return isIPv6(body)
    }

    /// Four decimal parts 0 to 255, without leading zeros.
    private static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), let value = Int(part), value <= 255
                else { return false }
                return String(value) == part
            }
    }

    /// Up to eight groups of one to four hex digits, `::` at most once standing for missing groups, and
    /// an IPv4 address in place of the last two groups.
    private static func isIPv6(_ text: Substring) -> Bool {
        guard !text.isEmpty else { return false }
        let halves = text.split(separator: "::", omittingEmptySubsequences: false).map(String.init)
        guard halves.count <= 2 else { return false }
        func groups(_ part: String, allowIPv4: Bool) -> Int? {
            if part.isEmpty { return 0 }
            var count = 0
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if allowIPv4, index == pieces.count - 1, piece.contains(".") {
                    guard isIPv4(piece) else { return nil }
                    count += 2
                } else {
                    guard (1...4).contains(piece.count), piece.allSatisfy(\.isHexDigit), piece.allSatisfy(\.isASCII)
                    else { return nil }
                    count += 1
                }
            }
            return count
        }
        if halves.count == 1 {
            return groups(halves[0], allowIPv4: true) == 8
        }
        guard let head = groups(halves[0], allowIPv4: false), let tail = groups(halves[1], allowIPv4: true) else {
            return false
        }
        return head + tail <= 7
    }

    /// The property a request is for: its own `property.token`, else the configuration's.
    static func propertyToken(_ request: JSONObject, conf: DecisioningConf) -> String? {
        if case .string(let token) = request["property"]?["token"], !token.isEmpty { return token }
        if let token = conf.propertyToken, !token.isEmpty { return token }
        return nil
    }
}

/// Which requested mboxes and views only Target's edge can decide.
public struct RemoteDependency: Sendable, Equatable {
    /// Requested mboxes the artifact lists as remote, or does not list as local.
    public let mboxes: [String]
    /// Requested views the artifact lists as remote, or does not list as local (all the artifact's
    /// remote views when a view is requested without a name).
    public let views: [String]

    public var isNeeded: Bool { !mboxes.isEmpty || !views.isEmpty }

    /// `hasRemoteDependency`. A page load counts as a request for the global mbox.
    init(artifact: DecisioningArtifact, request: JSONObject) {
        var requestedMboxes: [String] = []
        var requestedViews: [String] = []
        var wantsAllViews = false
        for mode in ["prefetch", "execute"] {
            let part = request[mode]?.objectValue
            for mbox in part?["mboxes"]?.arrayValue ?? [] {
                if let name = mbox["name"]?.stringValue { requestedMboxes.append(name) }
            }
            for view in part?["views"]?.arrayValue ?? [] {
                if let name = view["name"]?.stringValue, !name.isEmpty {
                    requestedViews.append(name)
                } else {
                    wantsAllViews = true
                }
            }
        }
        for mode in ["execute", "prefetch"] where request[mode]?["pageLoad"]?.objectValue != nil {
            requestedMboxes.append("target-global-mbox")
        }
        let local = Set(artifact.localMboxes)
        mboxes = RemoteDependency.unique(
            artifact.remoteMboxes.filter(requestedMboxes.contains) + requestedMboxes.filter { !local.contains($0) }
        )
        let localViews = Set(artifact.localViews)
        var views =
            artifact.remoteViews.filter(requestedViews.contains) + requestedViews.filter { !localViews.contains($0) }
        if wantsAllViews { views = artifact.remoteViews + views }
        self.views = RemoteDependency.unique(views)
    }

    private static func unique(_ names: [String]) -> [String] {
        var seen: Set<String> = []
        return names.filter { seen.insert($0).inserted }
    }
}
