import PreflightCore
import PreflightProtocol

/// An upstream call, by name: in log lines, `upstream.error` events and counters.
enum PassOperation: String, Sendable {
    case register
    case token
    case configuration
    case profiles
    case preauthorize
    case createSession
    case sessionStatus
    case profileForCode
    case authorize
    case logout

    /// `url` as a log line may show it: the registration code at the end of a sign-in call's path is
    /// replaced (codes are shown to the user, never written to the journal).
    func loggable(_ url: String) -> String {
        guard self == .sessionStatus || self == .profileForCode, let slash = url.lastIndex(of: "/") else {
            return url
        }
        return url[...slash] + "(code)"
    }
}

/// What an upstream call can come back with: the value, a top-level Adobe Pass error (passed through to
/// apps as outcome response), or a reason the agent could not get an answer.
enum UpstreamResult<Value: Sendable>: Sendable {
    case success(Value)
    case adobeError(AdobeStatus)
    case failure(PassFailure)
}

/// What upstream calls read of the configuration, swapped whole when it is reloaded.
struct UpstreamSettings: Sendable, Equatable {
    var configuration: PassConfiguration
    var device: DeviceIdentity
}

/// A TV provider (MVPD) a requestor integrates with, for an app's provider picker.
public struct Provider: Sendable, Hashable {
    public var id: String
    public var displayName: String?
    public var logoUrl: String?

    init?(json: JSONValue) {
        guard let id = json["id"]?.stringValue, !id.isEmpty else { return nil }
        self.id = id
        displayName = json["displayName"]?.stringValue
        logoUrl = json["logoUrl"]?.stringValue
    }

    public init(id: String, displayName: String? = nil, logoUrl: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.logoUrl = logoUrl
    }
}

/// A requestor's configuration as far as the agent uses it.
struct RequestorConfiguration: Sendable, Hashable {
    /// The MVPDs with an active integration, in Adobe's order.
    var providers: [Provider]

    var mvpds: [String] { providers.map(\.id) }

    init?(json: JSONValue) {
        guard case .object(let object) = json else { return nil }
        providers = (object["requestor"]?["mvpds"]?.arrayValue ?? []).compactMap(Provider.init(json:))
    }
}

/// An authenticated profile (`MvpdProfileResponse`), as far as the agent uses it.
struct AuthenticatedProfile: Sendable, Hashable {
    var mvpd: String
    /// Wall-clock milliseconds since the epoch.
    var notBefore: Int64
    var notAfter: Int64
    /// `regular`, `temporary` (TempPass), … as Adobe names it.
    var type = "regular"
    /// The user metadata: name to Adobe's `{"value", "state"}` object.
    var attributes = JSONObject()

    /// Only `notAfter` decides: a box whose clock runs a little behind must not refuse a fresh login.
    func isValid(atEpochMilliseconds now: Int64) -> Bool { now < notAfter }

    /// The `profiles` map of a `ProfilesResponse`; nil when the body is not one.
    static func list(from json: JSONValue) -> [AuthenticatedProfile]? {
        guard case .object(let object) = json else { return nil }
        guard let profiles = object["profiles"] else { return [] }
        guard case .object(let byMvpd) = profiles else { return nil }
        var list: [AuthenticatedProfile] = []
        for (mvpd, profile) in byMvpd {
            guard let notAfter = profile["notAfter"]?.doubleValue else { return nil }
            let notBefore = profile["notBefore"]?.doubleValue ?? 0
            list.append(
                AuthenticatedProfile(
                    mvpd: mvpd,
                    notBefore: Int64(notBefore),
                    notAfter: Int64(notAfter),
                    type: profile["type"]?.stringValue ?? "regular",
                    attributes: profile["attributes"]?.objectValue ?? [:]
                )
            )
        }
        return list
    }
}

/// A DCR access token. Kept in memory only.
struct AccessToken: Sendable, Hashable {
    /// A secret: never logged, never shown.
    var value: String
    /// When to get the next one: 60 s or a fifth of the lifetime (the smaller) before expiry.
    var refreshAt: MonotonicInstant
    var expiresAt: MonotonicInstant
    /// Wall-clock expiry, for the admin view.
    var expiresAtEpochMilliseconds: Int64

    init(value: String, lifetime: Duration, now: MonotonicInstant, epochMilliseconds: Int64) {
        self.value = value
        let margin = min(Duration.seconds(60), lifetime / 5)
        refreshAt = now + lifetime - margin
        expiresAt = now + lifetime
        expiresAtEpochMilliseconds = epochMilliseconds + lifetime.wholeMilliseconds
    }
}

/// How Adobe Pass has been answering, for `status`: the technician's first question.
public struct UpstreamHealth: Sendable, Equatable {
    public var calls = 0
    public var errors = 0
    public var lastSuccessAtMs: Int64?
    public var lastErrorAtMs: Int64?
    public var lastErrorCode: String?
    public var lastErrorStatus: Int?
    public var lastErrorOperation: String?
}
