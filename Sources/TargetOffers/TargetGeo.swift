import PreflightCore
import PreflightProtocol
import UpstreamHTTP

/// Where Target's geo service locates the box: its answer to `GET /v1/geo` (Adobe's engines call it
/// `https://assets.adobetarget.com/v1/geo`), as the `x-geo-*` response headers that
/// `DecisioningEngine.decide(..., geo:)` takes. A box does not know its public address, so it asks
/// without `x-forwarded-for` and the service locates the caller: the location Target's edge would see.
public struct GeoAnswer: Sendable, Equatable {
    /// The headers of the answer, the ones the engine reads: `x-geo-latitude`, `x-geo-longitude`,
    /// `x-geo-country-code`, `x-geo-region-code`, `x-geo-city` (strings, as the service sends them).
    public static let headerNames = [
        "x-geo-latitude", "x-geo-longitude", "x-geo-country-code", "x-geo-region-code", "x-geo-city",
    ]

    /// The `x-geo-*` headers the service sent, by lower-cased name.
    public let headers: [String: String]

    /// nil when the answer carries none of the `x-geo-*` headers (the service could not locate the box).
    public init?(headers: [String: String]) {
        var kept: [String: String] = [:]
        for name in Self.headerNames {
            if let value = headers[name], !value.isEmpty { kept[name] = value }
        }
        guard !kept.isEmpty else { return nil }
        self.headers = kept
    }

    public var city: String? { headers["x-geo-city"] }
    public var countryCode: String? { headers["x-geo-country-code"] }
    public var regionCode: String? { headers["x-geo-region-code"] }
    public var latitude: Double? { headers["x-geo-latitude"].flatMap(Double.init) }
    public var longitude: Double? { headers["x-geo-longitude"].flatMap(Double.init) }

    /// The answer as the engine takes it (`decide(..., geo:)`) and as the state file keeps it.
    public var json: JSONObject {
        var object = JSONObject()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { object[name] = .string(value) }
        return object
    }

    /// Reads the headers kept by `json`; nil when none is there.
    public init?(json: JSONObject) {
        var headers: [String: String] = [:]
        for name in Self.headerNames {
            if let value = json[name]?.stringValue { headers[name] = value }
        }
        self.init(headers: headers)
    }
}

/// What `status` shows of the location (`target.geo`), and what the geo poller knows.
public struct GeoStatus: Sendable, Equatable {
    /// The answer decisions use: the last one the service gave (this run, or kept by an earlier one).
    public var answer: GeoAnswer?
    /// When that answer was fetched (epoch ms; kept across restarts).
    public var fetchedAtMs: Int64?
    /// `network` (this run) or `disk` (read from the state directory at start).
    public var source: ArtifactSource?
    /// The address the answer came from.
    public var url: String?
    public var lastFetchAtMs: Int64?
    /// Why the last lookup failed; nil after a success.
    public var lastFetchError: String?
    public var failuresInARow = 0
    /// Why the lookup last due was not made (`TargetPrivacy.notSentReason`: the box is not opted in to Target);
    /// nil once a lookup is made.
    public var skipped: String?
    /// Counts the changes of `answer` (a new location, or the first one): decisions made with an older
    /// count were made for another place.
    public var generation = 0

    public init() {}
}

/// The pure part of the location lookup: what an answer means, when to ask again.
public enum GeoPolling {
    /// Target's geo service, as Adobe's engines build its address (`{CDN}/v1/geo`).
    public static let defaultURL = "https://assets.adobetarget.com/v1/geo"

    /// What an answer of the geo service means.
    public enum Answer: Sendable, Equatable {
        case located(GeoAnswer)
        case failed(String)
    }

    /// A 200 with at least one `x-geo-*` header is a location; a 200 without any (the service could not
    /// place the box) and any other status are failures: the location held stays.
    public static func interpret(_ response: HTTPResponse) -> Answer {
        guard response.status == 200 else { return .failed("HTTP \(response.status)") }
        guard let answer = GeoAnswer(headers: response.headers) else {
            return .failed("no x-geo-* headers in the answer")
        }
        return .located(answer)
    }

}

/// The location held and what is known about it, behind one lock.
struct HeldGeo: Sendable {
    var status = GeoStatus()
    /// Counts forgets (opt-outs): the answer to a lookup started before one, or a kept copy read before one,
    /// is not held.
    private(set) var forgets = 0

    /// Forgets the location and what is known about it; a location held going counts as a change of it.
    /// Returns whether one was held.
    mutating func forget() -> Bool {
        let held = status.answer != nil
        let generation = status.generation + (held ? 1 : 0)
        self = HeldGeo(forgets: forgets + 1)
        status.generation = generation
        return held
    }
}
