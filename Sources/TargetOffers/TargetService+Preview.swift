import Logging
import PreflightCore
import PreflightProtocol

/// A preview on, as `target.preview` and `status` show it.
public struct PreviewStatus: Sendable, Equatable {
    /// The token's first characters (`QAPreview.masked`).
    public var maskedToken: String
    /// Time left, on the monotonic clock.
    public var expiresIn: Duration
    /// When it ends, in the agent's wall time (for people; the expiry itself is monotonic).
    public var expiresAtMs: Int64
}

extension TargetService {
    // MARK: QA mode preview

    /// The preview on, or nil.
    public var preview: PreviewStatus? {
        let now = clock.now()
        return previewBox.withLock { $0.active(at: now) }.map { status(of: $0, now: now) }
    }

    /// Starts Target's QA mode with `token` for `duration` (replacing any preview on): every Delivery request
    /// carries `qaMode.token` until it ends. The cached offers are dropped, so that every app's next
    /// prefetch gets the preview's. Returns the preview and how many cached offers were dropped.
    public func startPreview(token: String, duration: Duration) -> (preview: PreviewStatus, cleared: Int) {
        let now = clock.now()
        let session = previewBox.withLock { $0.start(token: token, duration: duration, now: now) }
        let cleared = clearCache()
        forgetOffersKeptForApps()
        let status = status(of: session, now: now)
        publish(
            .targetPreview,
            [
                "state": "on", "token": .string(status.maskedToken),
                "expiresInMs": .integer(status.expiresIn.wholeMilliseconds), "cleared": .integer(Int64(cleared)),
            ]
        )
        logger.notice(
            "Target preview on: every Delivery request carries the QA mode token until it ends",
            metadata: [
                "token": "\(status.maskedToken)", "seconds": "\(duration.components.seconds)",
                "cachedOffersDropped": "\(cleared)",
            ]
        )
        return (status, cleared)
    }

    /// Ends the preview now (`target.preview` with `end`); returns how many cached offers were dropped, or nil
    /// when no preview was on.
    public func endPreview() -> Int? {
        previewBox.withLock { $0.end() }.map { previewEnded($0, .ended) }
    }

    /// Ends the preview once its time has run out; the notification sender calls it every turn.
    func endPreviewIfExpired() {
        let now = clock.now()
        guard let ended = previewBox.withLock({ $0.endIfExpired(now: now) }) else { return }
        previewEnded(ended, .expired)
    }

    /// Ends the preview Target refused the token of, so the box does not stay without offers (each request
    /// refused) until it would have expired.
    func endRefusedPreview(_ session: QAPreview.Session, detail: String) {
        guard let ended = previewBox.withLock({ $0.endRefused(generation: session.generation) }) else { return }
        logger.error(
            "Target refused the preview's QA mode token; the preview is ended and requests go without it",
            metadata: ["token": "\(ended.maskedToken)", "detail": "\(detail)"]
        )
        previewEnded(ended, .refused)
    }

    /// The preview's offers go with it: they must not be shown or counted as the live activities'.
    @discardableResult
    private func previewEnded(_ session: QAPreview.Session, _ ending: QAPreview.Ending) -> Int {
        let cleared = clearCache()
        forgetOffersKeptForApps()
        publish(
            .targetPreview,
            [
                "state": "off", "token": .string(session.maskedToken), "reason": .string(ending.rawValue),
                "cleared": .integer(Int64(cleared)),
            ]
        )
        logger.notice(
            "Target preview ended; requests go without the QA mode token",
            metadata: [
                "token": "\(session.maskedToken)", "reason": "\(ending.rawValue)", "cachedOffersDropped": "\(cleared)",
            ]
        )
        return cleared
    }

    private func status(of session: QAPreview.Session, now: MonotonicInstant) -> PreviewStatus {
        PreviewStatus(
            maskedToken: session.maskedToken,
            expiresIn: session.expiresAt - now,
            expiresAtMs: time.epochMilliseconds(at: session.expiresAt)
        )
    }

    // MARK: trace

    /// A `loadRequests` with `trace`: every request goes to Target in one call of its own, never answered
    /// from the cache nor shared with another app's load, and each element carries the mbox's `trace` as
    /// Target sent it (null when it sent none). Returns the whole `result` JSON.
    public func tracedLoad(_ command: TracedLoadCommand) async -> [UInt8] {
        await completeLoad(
            PendingLoad(
                command: command.load,
                answered: Array(repeating: nil, count: command.load.requests.count),
                trace: command.trace
            )
        )
    }
}
