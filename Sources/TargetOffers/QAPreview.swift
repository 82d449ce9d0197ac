import PreflightCore

/// Target's QA mode for the whole box (admin `target.preview`): while a preview is on, every Delivery
/// request carries `qaMode.token`, so every app shows the activities of a marketer's preview link.
///
/// The rules as a pure value: the caller reads the monotonic clock and passes the instant in, so expiry is
/// tested without sleeping and a wall-clock step (NTP at boot) neither ends nor stretches a preview. It is
/// runtime state only: a restart ends it.
public struct QAPreview: Sendable, Equatable {
    /// The preview on.
    public struct Session: Sendable, Equatable {
        /// The preview link's `at_preview_token`, sent as `qaMode.token`.
        public var token: String
        public var startedAt: MonotonicInstant
        public var expiresAt: MonotonicInstant
        /// The `generation` it began with.
        public var generation: Int

        /// The token as logs, events and `status` show it.
        public var maskedToken: String { QAPreview.masked(token) }
    }

    /// Why a preview ended.
    public enum Ending: String, Sendable {
        /// `target.preview` with `end: true`.
        case ended
        /// Its time ran out.
        case expired
        /// Target refused its token (`Invalid QA mode token`).
        case refused
    }

    /// The preview on, if any; it may have expired since (see `active(at:)`).
    public private(set) var session: Session?
    /// Changes at every start and end: an answer to a request made under another generation (a preview's
    /// offers after its end, offers from before it during it) is not cached.
    public private(set) var generation = 0

    public init() {}

    /// Starts a preview of `token` for `duration` from `now`, replacing any preview on.
    public mutating func start(token: String, duration: Duration, now: MonotonicInstant) -> Session {
        generation += 1
        let started = Session(token: token, startedAt: now, expiresAt: now + duration, generation: generation)
        session = started
        return started
    }

    /// Ends the preview on; returns it, or nil when none was on.
    public mutating func end() -> Session? {
        guard let ended = session else { return nil }
        session = nil
        generation += 1
        return ended
    }

    /// Ends the preview if its time has run out at `now`; returns it when it did.
    public mutating func endIfExpired(now: MonotonicInstant) -> Session? {
        guard let session, now >= session.expiresAt else { return nil }
        return end()
    }

    /// Ends the preview begun at `generation` (whose token Target refused); a preview started since is kept.
    public mutating func endRefused(generation: Int) -> Session? {
        guard session?.generation == generation else { return nil }
        return end()
    }

    /// The preview requests made at `now` carry: nil when none is on or its time has run out (even before
    /// `endIfExpired` has noticed).
    public func active(at now: MonotonicInstant) -> Session? {
        guard let session, now < session.expiresAt else { return nil }
        return session
    }

    /// How many characters of a token are shown.
    public static let shownCharacters = 4

    /// `Xk3p…`: the first 4 characters. A preview token shows the account's unpublished activities to whoever
    /// sends it, and the events socket is open to every app, so it is never shown whole.
    public static func masked(_ token: String) -> String {
        String(String.UnicodeScalarView(token.unicodeScalars.prefix(shownCharacters))) + "…"
    }
}
