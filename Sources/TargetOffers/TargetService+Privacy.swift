import Logging
import PreflightProtocol
import Synchronization

extension TargetService {
    // MARK: privacy

    /// The privacy status in force (`target.privacy`, or the admin command's).
    public var privacy: TargetPrivacy { privacySetting.status }

    /// Whether the status in force was set by the admin command (kept in `target-privacy.json`) rather
    /// than by configuration.
    public var privacySetByAdmin: Bool { privacySetting.setByAdmin }

    /// The admin command `target.privacy`: sets the status, keeps it across restarts, and applies it.
    /// Writes a state file: call it off the I/O thread. Returns the previous status.
    @discardableResult
    public func setPrivacy(_ status: TargetPrivacy) -> TargetPrivacy {
        var previous = status
        switchPrivacy(to: status, by: "admin") {
            previous = privacySetting.set(status)
            return previous
        }
        return previous
    }

    /// Changes the status by `change` (which returns the previous one, or nil when nothing changed) and applies
    /// it. Opting out forgets the visitor (ids, session, edge host, on disk too), the cached offers, the
    /// notifications not yet confirmed (queue and journal), and the click metrics and deferred displays kept
    /// for apps: nothing the box learned from Target or would tell it stays. That happens before the switch
    /// (whoever sees `optedOut` sees it all gone) and once more after it, for what a call finishing meanwhile
    /// left. `unknown` and `optedIn` drop nothing: the sender holds notifications while the status is not
    /// `optedIn`, and sends them once it is. The artifact and geo pollers fetch nothing while it is not
    /// `optedIn` either; switching to `optedIn` asks each for a turn at once, as a reload does.
    func switchPrivacy(to status: TargetPrivacy, by: String, _ change: () -> TargetPrivacy?) {
        var dropped = status == .optedOut ? forgetEverythingForOptOut() : (offers: 0, notifications: 0)
        guard let previous = change(), previous != status else { return }
        var body: JSONObject = [
            "status": .string(status.rawValue), "previous": .string(previous.rawValue), "by": .string(by),
        ]
        if status == .optedOut {
            let late = forgetEverythingForOptOut()
            dropped = (dropped.offers + late.offers, dropped.notifications + late.notifications)
            body["cleared"] = .integer(Int64(dropped.offers))
            body["notificationsDropped"] = .integer(Int64(dropped.notifications))
            logger.notice(
                "Target privacy is optedOut: nothing is sent to Target; visitor ids, cached offers and queued notifications dropped",
                metadata: [
                    "previous": "\(previous.rawValue)", "by": "\(by)", "cachedOffersDropped": "\(dropped.offers)",
                    "notificationsDropped": "\(dropped.notifications)",
                ]
            )
        } else {
            let held = notifications.summary.pending
            let message: Logger.Message =
                status == .optedIn
                ? "Target privacy is optedIn: requests and notifications go to Target again"
                : "Target privacy is unknown: nothing is sent to Target; notifications are held until optedIn"
            logger.notice(
                message,
                metadata: ["previous": "\(previous.rawValue)", "by": "\(by)", "notificationsHeld": "\(held)"]
            )
        }
        if status == .optedIn {
            // What the pollers skipped is fetched now, not a whole polling interval later.
            requestArtifactFetch()
            requestGeoFetch()
        }
        publish(.targetPrivacy, body)
    }

    /// Drops what opting out must not keep; returns how many cached offers and notifications went.
    @discardableResult
    func forgetEverythingForOptOut() -> (offers: Int, notifications: Int) {
        let droppedNotifications = notifications.dropAll()
        visitor.reset()
        let cleared = cache.clear(name: nil)
        forgetOffersKeptForApps()
        forgetGeo()
        boxClockDisplays.withLock { $0.removeAll() }
        return (cleared, droppedNotifications)
    }
}

extension TargetService {
    /// Forgets the click metrics of loaded mboxes and the displays deferred for `displayedLocations`: with
    /// the cached offers, what was decided under a preview or for a visitor the box no longer is.
    func forgetOffersKeptForApps() {
        loadedClicks.withLock { $0.removeAll() }
        deferredDisplays.withLock { $0.removeAll() }
    }
}

extension TargetService {
    /// Records in a poller's status why it sent nothing (`skipped`, what `status` shows); true when the reason is
    /// new, for the poller to log it once rather than on every turn.
    static func noteSkipped<Held>(
        _ reason: String,
        in held: borrowing Mutex<Held>,
        at skipped: any WritableKeyPath<Held, String?> & Sendable
    ) -> Bool {
        held.withLock { held in
            defer { held[keyPath: skipped] = reason }
            return held[keyPath: skipped] != reason
        }
    }
}
