import PreflightProtocol

/// Where a visitor falls in an activity's traffic: a percentage from 0 to 99.99, the same on every
/// call for the same client, activity and visitor (Adobe's `allocationProvider`).
///
/// The device id `"{client}.{activityId}.{visitorId}.0"` (the last part is the campaign bucket salt)
/// is hashed with MurmurHash3 over its UTF-16 code units; the absolute value modulo 10,000 is the
/// bucket, and the bucket as a percentage is rounded to two decimals, in the same floating-point
/// steps as the Node.js engine so that a boundary like `{"<=": [0, allocation]}, {">=": [50, ...]}`
/// splits visitors exactly where Adobe's engines and edge do.
enum Allocation {
    private static let totalBuckets: Int64 = 10_000
    private static let campaignBucketSalt = "0"

    /// The allocation percentage of `visitorId` in `activityId` (already in its string form).
    static func percentage(client: String, activityId: String, visitorId: String) -> Double {
        let deviceId = client + "." + activityId + "." + visitorId + "." + campaignBucketSalt
        let hash = Int64(MurmurHash3.hashUnencodedChars(deviceId))
        let bucket = abs(hash) % totalBuckets
        let value = Double(bucket) / Double(totalBuckets) * 100
        return JavaScript.round(value * 100) / 100
    }

    /// The id a visitor is allocated by: the Marketing Cloud visitor id, else the tntId up to its first
    /// `.` (the part after it is the location hint), else the third-party id, else a new random id
    /// (`getOrCreateVisitorId`; each falls through when absent or empty, as JavaScript's `||` does).
    static func visitorIdentifier(_ id: JSONObject?, makeIdentifier: () -> String) -> String {
        guard let id else { return makeIdentifier() }
        if let marketingCloud = id["marketingCloudVisitorId"], JavaScript.isTruthy(marketingCloud) {
            return JavaScript.toString(marketingCloud)
        }
        if case .string(let tntId) = id["tntId"], !tntId.isEmpty {
            // Up to the first ".", by bytes (the location hint follows it).
            let utf8 = tntId.utf8
            let head = utf8[..<(utf8.firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex)]
            if !head.isEmpty { return String(Substring(head)) }
        }
        if let thirdParty = id["thirdPartyId"], JavaScript.isTruthy(thirdParty) {
            return JavaScript.toString(thirdParty)
        }
        return makeIdentifier()
    }
}
