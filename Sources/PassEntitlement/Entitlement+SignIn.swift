import Logging
import PreflightCore
import PreflightProtocol
import Synchronization

/// How the watcher is getting on with one pending sign-in. Not kept across restarts: a resumed code is
/// checked again from the start.
struct SignInPoll: Sendable, Hashable {
    var nextAt: MonotonicInstant
    /// After a restart: ask `GET sessions/{code}` whether the code still stands before polling.
    var needsStatusCheck: Bool
    /// Polls in a row that got no answer, for the back-off.
    var failures = 0
}

extension Entitlement {
    // MARK: Sign-in with a code on a second screen

    /// `getAuthentication`: the user is signed in already, or the code to show. A live code is shared by
    /// every app asking; concurrent askers share one `POST sessions`.
    public func getAuthentication(_ request: SignInRequest) async -> SignInAnswer {
        let requestor = request.requestor
        guard let deadline = answerDeadline(for: requestor) else {
            return .problem(.agent(.requestorNotOnThisBox(requestor)))
        }
        switch await session(for: requestor, deadline: deadline) {
        case .success(let profile) where request.mvpd == nil || request.mvpd == profile.mvpd:
            return .authenticated(mvpd: profile.mvpd, notAfter: profile.notAfter)
        case .success, .failure(PassFailure.authenticationSessionMissing),
            .failure(PassFailure.authenticationSessionExpired):
            break
        case .adobeError(let status):
            return .problem(.adobe(status))
        case .failure(let failure):
            return .problem(.agent(failure))
        }
        let epoch = clock.epochMilliseconds()
        let live: PendingSignIn? = state.withLock { state in
            guard let pending = state.requestors[requestor]?.signIn, pending.isLive(atEpochMilliseconds: epoch),
                request.mvpd == nil || request.mvpd == pending.mvpd
            else { return nil }
            return pending
        }
        if let live { return .pending(live) }
        return await signIns.run(requestor) { [self] in
            await startSignIn(request, deadline: deadline)
        }
    }

    /// `cancelAuthentication`: forgets the pending code; true when there was one.
    public func cancelAuthentication(requestor: String) -> Bool {
        guard let ended = endSignIn(requestor: requestor, code: nil) else { return false }
        publish(
            .authFailed,
            ["requestor": .string(requestor), "reason": "cancelled", "mvpd": ended.mvpd.map { .string($0) } ?? .null]
        )
        logger.info("sign-in cancelled", metadata: ["requestor": "\(requestor)"])
        return true
    }

    /// `POST sessions`, then keeps the code, tells subscribers and wakes the watcher.
    private func startSignIn(_ request: SignInRequest, deadline: MonotonicInstant) async -> SignInAnswer {
        let requestor = request.requestor
        let mvpd = request.mvpd ?? state.withLock { $0.requestors[requestor]?.selectedProvider }
        let created = await upstream.createSession(
            requestor,
            mvpd: mvpd,
            redirectUrl: request.redirectUrl,
            domainName: request.domainName,
            deadline: deadline
        )
        switch created {
        case .adobeError(let status):
            return .problem(.adobe(status))
        case .failure(let failure):
            return .problem(.agent(failure))
        case .success(.authenticated):
            // Signed in after all (on another app's call, or Adobe knew before we did): Adobe's word.
            switch await session(for: requestor, deadline: deadline, ignoringHeld: true) {
            case .success(let profile): return .authenticated(mvpd: profile.mvpd, notAfter: profile.notAfter)
            case .adobeError(let status): return .problem(.adobe(status))
            case .failure(let failure): return .problem(.agent(failure))
            }
        case .success(.code(let code, let sessionMvpd, let notBefore, let notAfter)):
            let pending = PendingSignIn(
                code: code,
                url: upstream.settings.withLock { "\($0.configuration.baseURL)/api/v2/authenticate" }
                    + "/\(Encoding.percentEncoded(requestor))/\(Encoding.percentEncoded(code))",
                mvpd: sessionMvpd ?? mvpd,
                notBefore: notBefore,
                notAfter: notAfter
            )
            let pollInterval = state.withLock { state in
                state.requestors[requestor]?.signIn = pending
                state.requestors[requestor]?.signInPoll = SignInPoll(
                    nextAt: clock.now() + state.configuration.signInPollInterval,
                    needsStatusCheck: false
                )
                return state.configuration.signInPollInterval
            }
            saveSignIns()
            publishCode(requestor: requestor, pending)
            logger.info(
                "sign-in started: waiting for the user on the second screen",
                metadata: [
                    "requestor": "\(requestor)", "mvpd": "\(pending.mvpd ?? "-")",
                    "expiresInS": "\((notAfter - clock.epochMilliseconds()) / 1000)",
                    "pollEveryS": "\(pollInterval.wholeMilliseconds / 1000)",
                ]
            )
            signInWake.signal()
            return .pending(pending)
        }
    }

    private func publishCode(requestor: String, _ pending: PendingSignIn) {
        publish(
            .authCode,
            [
                "requestor": .string(requestor), "code": .string(pending.code), "url": .string(pending.url),
                "notAfter": .integer(pending.notAfter), "mvpd": pending.mvpd.map { .string($0) } ?? .null,
            ]
        )
    }

    /// Removes the pending sign-in of `requestor` (only if it is still `code`, when given) and saves.
    /// Returns what was removed.
    @discardableResult
    func endSignIn(requestor: String, code: String?) -> PendingSignIn? {
        let ended: PendingSignIn? = state.withLock { state in
            guard let pending = state.requestors[requestor]?.signIn, code == nil || pending.code == code else {
                return nil
            }
            state.requestors[requestor]?.signIn = nil
            state.requestors[requestor]?.signInPoll = nil
            return pending
        }
        if ended != nil { saveSignIns() }
        return ended
    }

    /// Writes the pending sign-ins and selected providers. The snapshot is taken under the save lock, so
    /// the last write always holds the latest state.
    func saveSignIns() {
        saving.withLock { _ in
            let (entries, serverURL) = state.withLock { state in
                (
                    state.requestors.mapValues {
                        SignInStore.Entry(signIn: $0.signIn, selectedProvider: $0.selectedProvider)
                    },
                    state.configuration.baseURL
                )
            }
            signInStore.save(entries, serverURL: serverURL)
        }
    }

    /// Takes the pending sign-ins and selected providers kept by the last run; each code is checked
    /// again (`GET sessions/{code}`) before it is polled.
    func loadSignIns() {
        let now = clock.now()
        let resumed: [(String, PendingSignIn)] = state.withLock { state in
            var resumed: [(String, PendingSignIn)] = []
            for (requestor, entry) in signInStore.load(serverURL: state.configuration.baseURL)
            where state.requestors[requestor] != nil {
                state.requestors[requestor]?.selectedProvider = entry.selectedProvider
                if let signIn = entry.signIn {
                    state.requestors[requestor]?.signIn = signIn
                    state.requestors[requestor]?.signInPoll = SignInPoll(nextAt: now, needsStatusCheck: true)
                    resumed.append((requestor, signIn))
                }
            }
            return resumed
        }
        for (requestor, signIn) in resumed {
            logger.info(
                "resuming a pending sign-in kept from the last run",
                metadata: ["requestor": "\(requestor)", "mvpd": "\(signIn.mvpd ?? "-")"]
            )
        }
    }

    // MARK: Watching

    /// Polls every pending sign-in within Adobe's pacing until the user signs in, the code expires or an
    /// app cancels. Runs until cancelled.
    func watchSignIns() async {
        loadSignIns()
        while !Task.isCancelled {
            let now = clock.now()
            let due: [(String, PendingSignIn, SignInPoll)] = state.withLock { state in
                state.requestors.compactMap { requestor, requestorState in
                    guard let pending = requestorState.signIn, let poll = requestorState.signInPoll, poll.nextAt <= now
                    else { return nil }
                    return (requestor, pending, poll)
                }
            }
            for (requestor, pending, poll) in due where !Task.isCancelled {
                await check(requestor: requestor, pending, poll)
            }
            var next = state.withLock { state in state.requestors.values.compactMap(\.signInPoll?.nextAt).min() }
            if let expiry = expireProfiles() {
                // Wall-clock distance carried on the monotonic clock; a step of the wall clock is caught
                // at the next wake-up.
                let at = clock.now() + .milliseconds(max(0, expiry - clock.epochMilliseconds()))
                next = min(next ?? at, at)
            }
            await signInWake.wait(timeout: (next ?? clock.now() + .seconds(3600)) - clock.now(), clock: clock)
        }
    }

    /// One look at a pending sign-in: its status after a restart, then its profile.
    private func check(requestor: String, _ pending: PendingSignIn, _ poll: SignInPoll) async {
        let deadline = clock.now() + state.withLock { $0.configuration.answerDeadline }
        var pending = pending
        if poll.needsStatusCheck {
            switch await upstream.sessionStatus(requestor, code: pending.code, deadline: deadline) {
            case .success(let status):
                pending.notAfter = status.notAfter ?? pending.notAfter
                pending.mvpd = status.mvpd ?? pending.mvpd
                let updated = pending
                let current = state.withLock { state in
                    guard state.requestors[requestor]?.signIn?.code == updated.code else { return false }
                    state.requestors[requestor]?.signIn = updated
                    state.requestors[requestor]?.signInPoll?.needsStatusCheck = false
                    return true
                }
                // A code resumed from the last run is announced again once Adobe confirmed it: apps
                // that showed it may have restarted too (or they ask getAuthentication, which gives it).
                if current { publishCode(requestor: requestor, updated) }
            case .adobeError(let status):
                return fail(requestor: requestor, pending, problem: .adobe(status))
            case .failure(let failure):
                return retryLater(requestor: requestor, pending, failure)
            }
        }
        switch await upstream.profilesForCode(requestor, code: pending.code, deadline: deadline) {
        case .success(let profiles):
            let epoch = clock.epochMilliseconds()
            if let profile = profiles.filter({ $0.isValid(atEpochMilliseconds: epoch) }).max(by: {
                $0.notAfter < $1.notAfter
            }) {
                return succeed(requestor: requestor, pending, profile)
            }
            if !pending.isLive(atEpochMilliseconds: epoch) {
                return fail(requestor: requestor, pending, problem: nil)
            }
            state.withLock { state in
                guard state.requestors[requestor]?.signIn?.code == pending.code else { return }
                state.requestors[requestor]?.signInPoll?.failures = 0
                state.requestors[requestor]?.signInPoll?.nextAt = clock.now() + state.configuration.signInPollInterval
            }
        case .adobeError(let status):
            fail(requestor: requestor, pending, problem: .adobe(status))
        case .failure(let failure):
            retryLater(requestor: requestor, pending, failure)
        }
    }

    private func succeed(requestor: String, _ pending: PendingSignIn, _ profile: AuthenticatedProfile) {
        guard endSignIn(requestor: requestor, code: pending.code) != nil else { return }
        adoptProfile(profile, requestor: requestor)
        publish(
            .authAuthenticated,
            ["requestor": .string(requestor), "mvpd": .string(profile.mvpd), "notAfter": .integer(profile.notAfter)]
        )
        logger.notice(
            "signed in on the second screen",
            metadata: ["requestor": "\(requestor)", "mvpd": "\(profile.mvpd)", "notAfter": "\(profile.notAfter)"]
        )
    }

    /// The code is gone: expired (by Adobe's word or by its `notAfter`) or refused.
    private func fail(requestor: String, _ pending: PendingSignIn, problem: PassProblem?) {
        guard endSignIn(requestor: requestor, code: pending.code) != nil else { return }
        let expired =
            problem == nil || problem?.code == "authentication_session_expired"
            || !pending.isLive(atEpochMilliseconds: clock.epochMilliseconds())
        var body: JSONObject = [
            "requestor": .string(requestor), "reason": .string(expired ? "expired" : "error"),
            "mvpd": pending.mvpd.map { .string($0) } ?? .null,
        ]
        if let problem {
            body["code"] = .string(problem.code)
            if case .adobe(let status) = problem, let message = status.fields["message"] { body["message"] = message }
        }
        publish(.authFailed, body)
        logger.notice(
            "sign-in ended without a sign-in",
            metadata: [
                "requestor": "\(requestor)", "reason": "\(expired ? "expired" : "error")",
                "code": "\(problem?.code ?? "-")",
            ]
        )
    }

    /// No answer: poll again after a growing pause (never sooner than the poll interval), while the code
    /// lives; its `notAfter` ends it even when Adobe never answers again.
    private func retryLater(requestor: String, _ pending: PendingSignIn, _ failure: PassFailure) {
        if !pending.isLive(atEpochMilliseconds: clock.epochMilliseconds()) {
            return fail(requestor: requestor, pending, problem: .agent(failure))
        }
        state.withLock { state in
            guard state.requestors[requestor]?.signIn?.code == pending.code,
                var poll = state.requestors[requestor]?.signInPoll
            else { return }
            poll.failures += 1
            poll.nextAt =
                clock.now()
                + max(state.configuration.signInPollInterval, Self.retryBackoff.delay(attempt: poll.failures))
            state.requestors[requestor]?.signInPoll = poll
        }
    }
}
