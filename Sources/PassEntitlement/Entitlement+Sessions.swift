import Logging
import PreflightCore
import PreflightProtocol
import Synchronization

extension Entitlement {
    // MARK: Authentication session

    /// The requestor's current profile: from memory while before its `notAfter`; missing or expired
    /// from memory for `sessionRecheckInterval` after a lookup found so, unless the asker wants a
    /// `fresh` answer (LOCAL_CACHE disabled: remembered absence must not pass for Adobe's word, and
    /// with Adobe unreachable the answer is the network error); otherwise from `GET /profiles` (shared
    /// by concurrent askers). A profile held is used even when fresh: the decision call that follows
    /// asks Adobe, which says so if the profile is gone.
    /// With `ignoringHeld`, a profile held is not taken either: Adobe is asked.
    func session(
        for requestor: String,
        deadline: MonotonicInstant,
        fresh: Bool = false,
        ignoringHeld: Bool = false
    ) async -> UpstreamResult<AuthenticatedProfile> {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let known: UpstreamResult<AuthenticatedProfile>? = state.withLock { state in
            guard let requestorState = state.requestors[requestor] else {
                return .failure(.requestorNotOnThisBox(requestor))
            }
            let recheck = state.configuration.sessionRecheckInterval
            switch requestorState.session {
            case .authenticated(let profile) where !ignoringHeld && profile.isValid(atEpochMilliseconds: epoch):
                return .success(profile)
            case .missing(let checkedAt) where !fresh && now - checkedAt < recheck:
                return .failure(.authenticationSessionMissing)
            case .expired(_, let checkedAt) where !fresh && now - checkedAt < recheck:
                return .failure(.authenticationSessionExpired)
            default:
                return nil
            }
        }
        if let known { return known }
        return await sessions.run(requestor) { [self] in
            switch await upstream.fetchProfiles(requestor, deadline: deadline) {
            case .success(let profiles): return applyProfiles(profiles, requestor: requestor)
            case .adobeError(let status): return .adobeError(status)
            case .failure(let failure): return .failure(failure)
            }
        }
    }

    /// Takes the profiles Adobe listed as the requestor's session: the valid one with the latest
    /// `notAfter`; else expired (a listed profile, or the one we held, is past `notAfter`) or missing.
    /// Decisions go whenever the profile changes or goes.
    private func applyProfiles(
        _ profiles: [AuthenticatedProfile],
        requestor: String
    ) -> UpstreamResult<AuthenticatedProfile> {
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        let valid = profiles.filter { $0.isValid(atEpochMilliseconds: epoch) }.max { $0.notAfter < $1.notAfter }
        let (result, event): (UpstreamResult<AuthenticatedProfile>, JSONObject?) = state.withLock { state in
            guard let previous = state.requestors[requestor]?.session else {
                return (.failure(.requestorNotOnThisBox(requestor)), nil)
            }
            let next: SessionState
            let result: UpstreamResult<AuthenticatedProfile>
            if let valid {
                next = .authenticated(valid)
                result = .success(valid)
            } else {
                var expiredMvpd: String??
                if let lapsed = profiles.max(by: { $0.notAfter < $1.notAfter }) {
                    expiredMvpd = .some(lapsed.mvpd)
                } else if case .authenticated(let held) = previous, !held.isValid(atEpochMilliseconds: epoch) {
                    expiredMvpd = .some(held.mvpd)
                } else if case .expired(let mvpd, _) = previous {
                    expiredMvpd = .some(mvpd)
                }
                if let expiredMvpd {
                    next = .expired(mvpd: expiredMvpd, checkedAt: now)
                    result = .failure(.authenticationSessionExpired)
                } else {
                    next = .missing(checkedAt: now)
                    result = .failure(.authenticationSessionMissing)
                }
            }
            if case .authenticated(let held) = previous, next != .authenticated(held) {
                state.forgetDecisions(of: requestor)
            }
            state.requestors[requestor]?.session = next
            return (result, Self.sessionEvent(requestor: requestor, from: previous, to: next))
        }
        if let event { publish(.authSession, event) }
        // The watcher marks the profile expired at its notAfter.
        if case .success = result { signInWake.signal() }
        return result
    }

    /// Adobe said the profile is gone (`authenticated_profile_missing`, `_invalidated`, `_expired`,
    /// top level or per decision): forget the profile and its decisions.
    func noteSessionProblem(_ code: String, requestor: String, profile: AuthenticatedProfile) {
        guard code.hasPrefix("authenticated_profile_") else { return }
        let now = clock.now()
        let next: SessionState =
            code == "authenticated_profile_expired"
            ? .expired(mvpd: profile.mvpd, checkedAt: now) : .missing(checkedAt: now)
        let event: JSONObject? = state.withLock { state in
            guard let previous = state.requestors[requestor]?.session, previous == .authenticated(profile) else {
                return nil
            }
            state.requestors[requestor]?.session = next
            state.forgetDecisions(of: requestor)
            return Self.sessionEvent(requestor: requestor, from: previous, to: next)
        }
        if let event { publish(.authSession, event) }
    }

    static func sessionEvent(
        requestor: String,
        from previous: SessionState,
        to next: SessionState
    ) -> JSONObject? {
        var body: JSONObject = ["requestor": .string(requestor), "state": .string(next.name)]
        switch next {
        case .unknown:
            return nil
        case .authenticated(let profile):
            if previous == next { return nil }
            body["mvpd"] = .string(profile.mvpd)
            body["notAfter"] = .integer(profile.notAfter)
        case .missing:
            if case .missing = previous { return nil }
        case .expired(let mvpd, _):
            if case .expired = previous { return nil }
            if let mvpd { body["mvpd"] = .string(mvpd) }
        }
        return body
    }
}
