import Logging
import PreflightCore
import PreflightProtocol
import Synchronization

extension Entitlement {
    // MARK: Authentication status, authorization, logout, metadata, provider

    /// The answer deadline for a requestor this box serves; nil (and counted) for any other.
    func answerDeadline(for requestor: String) -> MonotonicInstant? {
        let deadline: Duration? = state.withLock { state in
            guard state.requestors[requestor] != nil else {
                state.unknownRequestorAnswers += 1
                return nil
            }
            return state.configuration.answerDeadline
        }
        return deadline.map { clock.now() + $0 }
    }

    /// `checkAuthentication`: from the profile held while it is valid, else (or with `fresh`) Adobe's
    /// `GET profiles`.
    public func checkAuthentication(requestor: String, mvpd: String?, fresh: Bool) async -> AuthenticationAnswer {
        var answer = AuthenticationAnswer(authenticated: false)
        guard let deadline = answerDeadline(for: requestor) else {
            answer.problem = .agent(.requestorNotOnThisBox(requestor))
            return answer
        }
        let result = await session(for: requestor, deadline: deadline, fresh: fresh, ignoringHeld: fresh)
        let epoch = clock.epochMilliseconds()
        state.withLock { state in
            guard let requestorState = state.requestors[requestor] else { return }
            if let pending = requestorState.signIn, pending.isLive(atEpochMilliseconds: epoch) {
                answer.pending = pending
            }
            if case .expired(let lapsed?, _) = requestorState.session { answer.mvpd = lapsed }
        }
        switch result {
        case .success(let profile) where mvpd == nil || mvpd == profile.mvpd:
            answer.authenticated = true
            answer.mvpd = profile.mvpd
            answer.notBefore = profile.notBefore
            answer.notAfter = profile.notAfter
            answer.type = profile.type
        case .success:
            answer.problem = .agent(.authenticationSessionMissing)
        case .adobeError(let status):
            answer.problem = .adobe(status)
        case .failure(let failure):
            answer.problem = .agent(failure)
        }
        return answer
    }

    /// `getAuthorization`: Adobe's authorize decision with the media token. A permit is held (without
    /// the token) until its `notAfter` for `checkAuthorization`; anything else drops a held one.
    public func getAuthorization(requestor: String, resource: String) async -> AuthorizationAnswer {
        var answer = AuthorizationAnswer(resource: resource)
        guard let deadline = answerDeadline(for: requestor) else {
            answer.problem = .agent(.requestorNotOnThisBox(requestor))
            return answer
        }
        let profile: AuthenticatedProfile
        switch await session(for: requestor, deadline: deadline) {
        case .success(let current): profile = current
        case .adobeError(let status):
            answer.problem = .adobe(status)
            return answer
        case .failure(let failure):
            answer.problem = .agent(failure)
            return answer
        }
        let result = await upstream.authorize(requestor, mvpd: profile.mvpd, resource: resource, deadline: deadline)
        let epoch = clock.epochMilliseconds()
        switch result {
        case .success(let decision):
            answer.decision = decision
            state.withLock { state in
                guard case .authenticated(profile)? = state.requestors[requestor]?.session else { return }
                if decision.isPermit {
                    let notAfter =
                        decision.notAfter ?? decision.token?.notAfter
                        ?? epoch + state.configuration.decisionTTL.wholeMilliseconds
                    state.requestors[requestor]?.permits[resource] = HeldPermit(
                        mvpd: profile.mvpd,
                        source: decision.source,
                        notAfter: notAfter
                    )
                } else {
                    state.requestors[requestor]?.permits[resource] = nil
                }
            }
            if let code = decision.error?.code { noteSessionProblem(code, requestor: requestor, profile: profile) }
        case .adobeError(let status):
            answer.problem = .adobe(status)
            state.withLock { $0.requestors[requestor]?.permits[resource] = nil }
            if let code = status.code { noteSessionProblem(code, requestor: requestor, profile: profile) }
        case .failure(let failure):
            answer.problem = .agent(failure)
        }
        logger.debug(
            "getAuthorization answered",
            metadata: [
                "requestor": "\(requestor)", "authorized": "\(answer.decision?.authorized ?? false)",
                "code": "\(answer.problem?.code ?? answer.decision?.error?.code ?? "-")",
            ]
        )
        return answer
    }

    /// `checkAuthorization`: a permit the agent holds (profile unchanged, before its `notAfter`), else
    /// Adobe's decision without its token.
    public func checkAuthorization(requestor: String, resource: String) async -> AuthorizationAnswer {
        let epoch = clock.epochMilliseconds()
        let held: HeldPermit? = state.withLock { state in
            guard let requestorState = state.requestors[requestor], let permit = requestorState.permits[resource],
                permit.notAfter > epoch, case .authenticated(let profile) = requestorState.session,
                profile.mvpd == permit.mvpd, profile.isValid(atEpochMilliseconds: epoch)
            else { return nil }
            return permit
        }
        if let held {
            var decision = AuthorizationDecision(resource: resource, authorized: true)
            decision.mvpd = held.mvpd
            decision.source = held.source
            decision.notAfter = held.notAfter
            return AuthorizationAnswer(resource: resource, decision: decision, fromCache: true)
        }
        var answer = await getAuthorization(requestor: requestor, resource: resource)
        answer.decision?.token = nil
        return answer
    }

    /// `logout`: clears the requestor's local state at once (profile, decisions, permits, a pending
    /// code), then asks Adobe (`GET logout/{mvpd}`) and passes on the browser step it may ask for.
    public func logout(requestor: String, mvpd requested: String?, redirectUrl: String? = nil) async -> LogoutAnswer {
        guard let deadline = answerDeadline(for: requestor) else {
            return LogoutAnswer(problem: .agent(.requestorNotOnThisBox(requestor)))
        }
        var requested = requested
        let knownSignedIn = state.withLock { state in
            guard case .authenticated = state.requestors[requestor]?.session else { return false }
            return true
        }
        if requested == nil, !knownSignedIn {
            // Not known to be signed in here: Adobe may still hold a profile (the agent restarted, or an
            // app never asked). Its word names the provider to sign out of.
            if case .success(let profile) = await session(for: requestor, deadline: deadline, fresh: true) {
                requested = profile.mvpd
            }
        }
        let now = clock.now()
        let (mvpd, previous): (String?, SessionState?) = state.withLock { state in
            guard let requestorState = state.requestors[requestor] else { return (nil, nil) }
            var mvpd = requested
            switch requestorState.session {
            case .authenticated(let profile): mvpd = mvpd ?? profile.mvpd
            case .expired(let lapsed, _): mvpd = mvpd ?? lapsed
            default: break
            }
            mvpd = mvpd ?? requestorState.signIn?.mvpd ?? requestorState.selectedProvider
            state.requestors[requestor]?.session = .missing(checkedAt: now)
            state.forgetDecisions(of: requestor)
            return (mvpd, requestorState.session)
        }
        if let ended = endSignIn(requestor: requestor, code: nil) {
            publish(
                .authFailed,
                [
                    "requestor": .string(requestor), "reason": "cancelled",
                    "mvpd": ended.mvpd.map { .string($0) } ?? .null,
                ]
            )
        }
        if let previous,
            let event = Self.sessionEvent(requestor: requestor, from: previous, to: .missing(checkedAt: now))
        {
            publish(.authSession, event)
        }
        publish(.authLogout, ["requestor": .string(requestor), "mvpd": mvpd.map { .string($0) } ?? .null])
        logger.notice("signed out", metadata: ["requestor": "\(requestor)", "mvpd": "\(mvpd ?? "-")"])
        var answer = LogoutAnswer(mvpd: mvpd)
        guard let mvpd else { return answer }
        switch await upstream.logout(requestor, mvpd: mvpd, redirectUrl: redirectUrl, deadline: deadline) {
        case .success(let action):
            answer.actionName = action.actionName
            answer.actionType = action.actionType
            answer.url = action.url
        case .adobeError(let status):
            answer.problem = .adobe(status)
        case .failure(let failure):
            answer.problem = .agent(failure)
        }
        return answer
    }

    /// `getMetadata`: the signed-in profile's attributes (Adobe's `value` of each), or one of them.
    public func getMetadata(requestor: String, key: String?) async -> MetadataAnswer {
        guard let deadline = answerDeadline(for: requestor) else {
            return .problem(.agent(.requestorNotOnThisBox(requestor)))
        }
        switch await session(for: requestor, deadline: deadline) {
        case .success(let profile):
            var attributes = JSONObject()
            for (name, attribute) in profile.attributes {
                attributes[name] = attribute["value"] ?? attribute
            }
            guard let key else { return .attributes(attributes) }
            return .value(key: key, value: attributes[key])
        case .adobeError(let status): return .problem(.adobe(status))
        case .failure(let failure): return .problem(.agent(failure))
        }
    }

    /// `getSelectedProvider`: the requestor's MVPDs (from its configuration) and the one chosen.
    public func providers(requestor: String) async -> ProviderAnswer {
        guard let deadline = answerDeadline(for: requestor) else {
            return .problem(.agent(.requestorNotOnThisBox(requestor)))
        }
        if let failure = await ensureConfigured(requestor, deadline: deadline) { return .problem(.agent(failure)) }
        return state.withLock { state in
            let requestorState = state.requestors[requestor]
            return .providers(selected: requestorState?.selectedProvider, requestorState?.providers ?? [])
        }
    }

    /// `setSelectedProvider`: keeps the choice (in `pass-signin.json`) for the next sign-in; nil clears
    /// it. An MVPD the requestor does not integrate with changes nothing.
    public func selectProvider(requestor: String, mvpd: String?) async -> ProviderAnswer {
        guard let deadline = answerDeadline(for: requestor) else {
            return .problem(.agent(.requestorNotOnThisBox(requestor)))
        }
        if let failure = await ensureConfigured(requestor, deadline: deadline) { return .problem(.agent(failure)) }
        let answer: ProviderAnswer = state.withLock { state in
            let providers = state.requestors[requestor]?.providers ?? []
            if let mvpd, !providers.contains(where: { $0.id == mvpd }) {
                return .unknownProvider(mvpd, known: providers.map(\.id))
            }
            state.requestors[requestor]?.selectedProvider = mvpd
            return .providers(selected: mvpd, providers)
        }
        if case .providers = answer {
            saveSignIns()
            logger.info("provider selected", metadata: ["requestor": "\(requestor)", "mvpd": "\(mvpd ?? "-")"])
        }
        return answer
    }

    /// Takes a profile Adobe gave (a finished sign-in) as the requestor's session.
    func adoptProfile(_ profile: AuthenticatedProfile, requestor: String) {
        let event: JSONObject? = state.withLock { state in
            guard let previous = state.requestors[requestor]?.session else { return nil }
            if previous != .authenticated(profile) { state.forgetDecisions(of: requestor) }
            state.requestors[requestor]?.session = .authenticated(profile)
            return Self.sessionEvent(requestor: requestor, from: previous, to: .authenticated(profile))
        }
        if let event { publish(.authSession, event) }
        signInWake.signal()
    }

    /// Profiles held past their `notAfter` become expired at that moment, with `auth.session` saying so,
    /// rather than when an app next asks. Returns when the next held profile expires.
    func expireProfiles() -> Int64? {
        let epoch = clock.epochMilliseconds()
        let now = clock.now()
        let (events, next): ([JSONObject], Int64?) = state.withLock { state in
            var events: [JSONObject] = []
            var next: Int64?
            for (requestor, requestorState) in state.requestors {
                guard case .authenticated(let profile) = requestorState.session else { continue }
                if profile.isValid(atEpochMilliseconds: epoch) {
                    next = min(next ?? profile.notAfter, profile.notAfter)
                    continue
                }
                let expired = SessionState.expired(mvpd: profile.mvpd, checkedAt: now)
                state.requestors[requestor]?.session = expired
                state.forgetDecisions(of: requestor)
                if let event = Self.sessionEvent(requestor: requestor, from: requestorState.session, to: expired) {
                    events.append(event)
                }
            }
            return (events, next)
        }
        for event in events {
            publish(.authSession, event)
            logger.notice(
                "the authenticated profile expired",
                metadata: ["requestor": "\(event["requestor"]?.stringValue ?? "-")"]
            )
        }
        return next
    }
}

extension PassState {
    /// Drops a requestor's cached preauthorize decisions and held authorize permits: its profile changed
    /// or went.
    @discardableResult
    mutating func forgetDecisions(of requestor: String?) -> Int {
        if let requestor {
            requestors[requestor]?.permits = [:]
        } else {
            for name in requestors.keys { requestors[name]?.permits = [:] }
        }
        return cache.drop(requestor: requestor)
    }
}
