import Logging
import PreflightProtocol
import StateFiles

/// The DCR client credentials of this box, and what they were issued for. Registering is meant to happen
/// once per box: a registration belongs to one server and one software statement, and is replaced only
/// when either changes or the token endpoint says the client is invalid.
struct Registration: Sendable, Hashable {
    var clientID: String
    /// A secret: never logged, never shown.
    var clientSecret: String
    /// The `serverURL` it was issued by.
    var serverURL: String
    /// SHA-256 (hex) of the software statement it was issued for; the statement itself is not stored.
    var softwareStatementDigest: String
    /// Wall-clock milliseconds since the epoch.
    var registeredAt: Int64

    func isIssued(for configuration: PassConfiguration) -> Bool {
        serverURL == configuration.baseURL
            && softwareStatementDigest == Registration.digest(of: configuration.softwareStatement)
    }

    static func digest(of softwareStatement: String) -> String {
        Encoding.hex(SHA256.hash(Array(softwareStatement.utf8)))
    }

    var json: JSONValue {
        [
            "client_id": .string(clientID), "client_secret": .string(clientSecret), "server_url": .string(serverURL),
            "software_statement_sha256": .string(softwareStatementDigest), "registered_at": .integer(registeredAt),
        ]
    }

    init(
        clientID: String,
        clientSecret: String,
        serverURL: String,
        softwareStatementDigest: String,
        registeredAt: Int64
    ) {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.serverURL = serverURL
        self.softwareStatementDigest = softwareStatementDigest
        self.registeredAt = registeredAt
    }

    init?(json: JSONValue) {
        guard let clientID = json["client_id"]?.stringValue, !clientID.isEmpty,
            let clientSecret = json["client_secret"]?.stringValue, !clientSecret.isEmpty,
            let serverURL = json["server_url"]?.stringValue,
            let digest = json["software_statement_sha256"]?.stringValue,
            let registeredAt = json["registered_at"]?.doubleValue
        else { return nil }
        self.init(
            clientID: clientID,
            clientSecret: clientSecret,
            serverURL: serverURL,
            softwareStatementDigest: digest,
            registeredAt: Int64(registeredAt)
        )
    }
}

/// `{stateDirectory}/pass-registration.json`: mode 0600, replaced atomically, a corrupt one moved aside
/// (`.corrupt-<epoch ms>`) with a log line rather than a crash.
struct RegistrationStore: Sendable {
    static let fileName = "pass-registration.json"

    let directory: String
    let logger: Logger

    var path: String { "\(directory)/\(Self.fileName)" }

    /// The stored registration, or nil when there is none (or it was unreadable and moved aside).
    func load(epochMilliseconds: Int64) -> Registration? {
        let bytes: [UInt8]?
        do {
            bytes = try FileSystem.readFile(path)
        } catch {
            logger.error(
                "cannot read the Adobe Pass registration; registering anew",
                metadata: ["path": "\(path)", "error": "\(error)"]
            )
            return nil
        }
        guard let bytes else { return nil }
        if let json = try? JSONReader.read(bytes), let registration = Registration(json: json) {
            return registration
        }
        do {
            let aside = try FileSystem.moveAside(path, stamp: epochMilliseconds)
            logger.warning(
                "the Adobe Pass registration file is corrupt; moved it aside and will register anew",
                metadata: ["path": "\(path)", "movedTo": "\(aside)"]
            )
        } catch {
            logger.error(
                "the Adobe Pass registration file is corrupt and cannot be moved aside",
                metadata: ["path": "\(path)", "error": "\(error)"]
            )
        }
        return nil
    }

    /// Writes the registration (mode 0600, atomically), creating the state directory (0700) if needed.
    func save(_ registration: Registration) throws(SystemCallError) {
        try FileSystem.makeDirectory(directory, mode: 0o700)
        try FileSystem.writeAtomically(JSONWriter.encode(registration.json), to: path, mode: 0o600)
    }

    func remove() throws(SystemCallError) {
        try FileSystem.remove(path)
    }
}
