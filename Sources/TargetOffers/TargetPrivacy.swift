import PreflightProtocol
import StateFiles
import Synchronization

/// The box's privacy status for Target, with AEP's three values (`MobilePrivacyStatus`).
///
/// - `optedIn`: everything is sent (today's behaviour and the default).
/// - `optedOut`: nothing is sent to Target; loads get their default content; the visitor ids, the prefetch
///   cache, the queued notifications and the box's location are dropped when it is set.
/// - `unknown`: nothing is sent to Target and nothing is dropped; offers already cached are still shown and
///   their notifications held (bounded by the queue's capacity) until the status becomes `optedIn` (they go)
///   or `optedOut` (they are dropped). Loads that need Target get their default content.
///
/// "Nothing is sent to Target" is every request to Target's services: Delivery calls, notifications, the
/// probe of a Target that is down, the rules artifact and the geo lookup. Each asks `allowsSending`.
public enum TargetPrivacy: String, Sendable, CaseIterable, Hashable {
    case optedIn
    case optedOut
    case unknown

    /// Whether Target's services may be called: Delivery (work, notifications, the probe), the rules artifact's
    /// host and the geo service. The one test of every request the box makes to Target.
    public var allowsSending: Bool { self == .optedIn }

    /// Why nothing is sent while `allowsSending` is false, as `status` and the log say it.
    public var notSentReason: String { "Target privacy is \(rawValue)" }

    /// The accepted wire and configuration values, for messages.
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
}

/// The status in force, and `target-privacy.json`, which keeps a status set by the admin command across
/// restarts: a household's opt-out must not end with a reboot.
///
/// Configuration and the admin command both set it, and the later of the two wins: the file records the
/// configured value the admin's choice overrode, so a start or reload finding the same configured value
/// keeps the admin's choice, and one finding a new configured value (the operator changed it since) applies
/// that.
final class PrivacySetting: Sendable {
    private struct State: Sendable {
        var status: TargetPrivacy
        /// The configured value in force when the status was last decided.
        var configured: TargetPrivacy
        /// Whether the admin command set the status (else configuration did).
        var byAdmin: Bool
    }

    private let state: Mutex<State>
    private let file: StateFile?

    init(configured: TargetPrivacy, file: StateFile?) {
        self.file = file
        let stored = file?.read()
        let storedStatus = stored?["status"]?.stringValue.flatMap(TargetPrivacy.init(rawValue:))
        let storedConfigured = stored?["configured"]?.stringValue.flatMap(TargetPrivacy.init(rawValue:))
        if let storedStatus, storedConfigured == configured {
            state = Mutex(State(status: storedStatus, configured: configured, byAdmin: true))
        } else {
            state = Mutex(State(status: configured, configured: configured, byAdmin: false))
        }
    }

    var status: TargetPrivacy { state.withLock { $0.status } }

    /// Whether the status in force was set by the admin command (and kept in the file).
    var setByAdmin: Bool { state.withLock { $0.byAdmin } }

    /// The admin command: sets and keeps `status`. Returns the previous status.
    func set(_ status: TargetPrivacy) -> TargetPrivacy {
        let (previous, configured) = state.withLock { state in
            let previous = state.status
            state.status = status
            state.byAdmin = true
            return (previous, state.configured)
        }
        file?.write(["status": .string(status.rawValue), "configured": .string(configured.rawValue)])
        return previous
    }

    /// Whether `configure(configured)` would change the configured value (and so maybe the status).
    func configures(_ configured: TargetPrivacy) -> Bool {
        state.withLock { $0.configured != configured }
    }

    /// A reloaded configuration: a changed configured value applies (and replaces the admin's choice);
    /// the same one changes nothing. Returns the previous status when the status in force changed.
    func configure(_ configured: TargetPrivacy) -> TargetPrivacy? {
        let change = state.withLock { state -> (previous: TargetPrivacy, dropFile: Bool)? in
            guard configured != state.configured else { return nil }
            let previous = state.status
            let dropFile = state.byAdmin
            state = State(status: configured, configured: configured, byAdmin: false)
            return (previous, dropFile)
        }
        guard let change else { return nil }
        if change.dropFile, let file { try? FileSystem.remove(file.path) }
        return change.previous == configured ? nil : change.previous
    }
}
