import PreflightCore
import PreflightProtocol

extension TargetService {
    // MARK: notifications

    /// Sends queued display notifications in batches by count and age, retrying with backoff, and
    /// fsyncs the journal every second, until cancelled; then makes one last bounded flush.
    public func run() async {
        var lastSync = clock.now()
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(200))
            await probeIfDue()
            // Back to back while a full batch (or an old one) waits: the queue drains as fast as Target
            // answers instead of one batch per turn, so a burst of loads is not dropped at capacity.
            // A batch Target answered without confirming anything waits for the next turn.
            // While Target is down the notifications wait: sending them would only grow their backoff. Unless
            // the box is opted in, they are held (bounded by the queue's capacity).
            while !Task.isCancelled, circuit?.state.isDown != true, privacy.allowsSending {
                // Between batches too: loads arriving faster than Target confirms keep a batch due for as long
                // as they last, and the journal would then grow unbounded and go unsynced.
                keepUp(lastSync: &lastSync)
                let configuration = self.configuration
                guard
                    notifications.isDue(
                        batchSize: configuration.notificationBatchSize,
                        maxAge: configuration.notificationMaxAge
                    ), await sendNotificationBatch()
                else { break }
            }
            keepUp(lastSync: &lastSync)
        }
        notifications.syncJournal()
    }

    /// The sender's turn's housekeeping: a preview ends on time (even when no request is made), the journal is
    /// compacted once it outgrows what is queued, and fsynced once a second.
    private func keepUp(lastSync: inout MonotonicInstant) {
        endPreviewIfExpired()
        notifications.compactJournalIfLarge()
        if clock.now() - lastSync >= .seconds(1) {
            notifications.syncJournal()
            lastSync = clock.now()
        }
    }

    /// Sends what is queued now, batch by batch, until the queue is empty or a batch settles nothing
    /// (a send failed, or Target confirmed none of it). Returns how many were confirmed by Target.
    @discardableResult
    public func flushNotifications() async -> Int {
        guard privacy.allowsSending else { return 0 }
        notifications.clearBackoff()
        let before = notifications.summary.counters.sent
        while notifications.summary.pending > 0, await sendNotificationBatch() {}
        notifications.syncJournal()
        return notifications.summary.counters.sent - before
    }
}
