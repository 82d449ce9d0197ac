import Logging
import PreflightProtocol
import StateFiles

/// A second-screen sign-in under way: the registration code Adobe Pass issued (`POST sessions`), shown
/// to the user, until they sign in on a phone or computer, the code expires, or an app cancels.
public struct PendingSignIn: Sendable, Hashable {
    /// The registration code. Meant to be shown to the user; never logged all the same.
    public var code: String
    /// What the user opens: Adobe's `/api/v2/authenticate/{serviceProvider}/{code}` page.
    public var url: String
    /// The provider the session was created with; nil when the user picks it on the second screen.
    public var mvpd: String?
    /// Wall-clock milliseconds since the epoch (Adobe's, through the agent's corrected clock).
    public var notBefore: Int64
    public var notAfter: Int64

    init(code: String, url: String, mvpd: String?, notBefore: Int64, notAfter: Int64) {
        self.code = code
        self.url = url
        self.mvpd = mvpd
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Whether the code is still usable at `epoch`.
    func isLive(atEpochMilliseconds epoch: Int64) -> Bool { epoch < notAfter }

    var json: JSONValue {
        [
            "code": .string(code), "url": .string(url), "mvpd": mvpd.map { .string($0) } ?? .null,
            "notBefore": .integer(notBefore), "notAfter": .integer(notAfter),
        ]
    }

    init?(json: JSONValue) {
        guard let code = json["code"]?.stringValue, !code.isEmpty, let url = json["url"]?.stringValue,
            let notAfter = json["notAfter"]?.doubleValue
        else { return nil }
        self.init(
            code: code,
            url: url,
            mvpd: json["mvpd"]?.stringValue,
            notBefore: Int64(json["notBefore"]?.doubleValue ?? 0),
            notAfter: Int64(notAfter)
        )
    }
}

/// `{stateDirectory}/pass-signin.json` (mode 0600): per requestor, the pending sign-in and the selected
/// provider, so that a restart resumes a code the user may be typing right now instead of showing a new
/// one. Tied to the server it was issued by: a code from another server is not resumed.
struct SignInStore: Sendable {
    static let fileName = "pass-signin.json"

    struct Entry: Sendable, Hashable {
        var signIn: PendingSignIn?
        var selectedProvider: String?
    }

    let file: StateFile

    init(directory: String, logger: Logger) {
        file = StateFile(path: "\(directory)/\(Self.fileName)", logger: logger)
    }

    /// What was kept for `serverURL`, by requestor.
    func load(serverURL: String) -> [String: Entry] {
        guard let object = file.read(), object["serverURL"]?.stringValue == serverURL,
            let requestors = object["requestors"]?.objectValue
        else { return [:] }
        var entries: [String: Entry] = [:]
        for (requestor, value) in requestors {
            entries[requestor] = Entry(
                signIn: value["signIn"].flatMap(PendingSignIn.init(json:)),
                selectedProvider: value["selectedProvider"]?.stringValue
            )
        }
        return entries
    }

    func save(_ entries: [String: Entry], serverURL: String) {
        var requestors = JSONObject()
        for (requestor, entry) in entries.sorted(by: { $0.key < $1.key })
        where entry.signIn != nil || entry.selectedProvider != nil {
            requestors[requestor] = [
                "signIn": entry.signIn?.json ?? .null,
                "selectedProvider": entry.selectedProvider.map { .string($0) } ?? .null,
            ]
        }
        file.write(["serverURL": .string(serverURL), "requestors": .object(requestors)])
    }
}
