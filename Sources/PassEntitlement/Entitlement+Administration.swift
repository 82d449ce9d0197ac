import Logging
import Synchronization

extension Entitlement {
    // MARK: Administration

    /// Applies a reloaded configuration. Tokens, registration, profiles and decisions stay where still
    /// valid: a new server drops everything but the registration file (which is then replaced at the
    /// next call); a new software statement drops the token; a new device id drops profiles and
    /// decisions; requestors no longer served are forgotten and new ones are configured in the background.
    public func update(configuration: PassConfiguration) {
        let device = DeviceIdentity.resolve(configuration, stateDirectory: stateDirectory, logger: logger)
        let previous = upstream.settings.withLock { settings in
            let previous = settings
            settings = UpstreamSettings(configuration: configuration, device: device)
            return previous
        }
        upstream.pacer.withLock { $0.update(configuration.pacing) }
        let serverChanged = previous.configuration.baseURL != configuration.baseURL
        let statementChanged = previous.configuration.softwareStatement != configuration.softwareStatement
        let deviceChanged = previous.device.identifierHeader != device.identifierHeader
        state.withLock { state in
            let removed = state.configuration.requestors.filter { !configuration.requestors.contains($0) }
            state.configuration = configuration
            var requestors: [String: RequestorState] = [:]
            for requestor in configuration.requestors {
                var requestorState = state.requestors[requestor] ?? RequestorState()
                if serverChanged {
                    requestorState.configuration = .pending
                    requestorState.configurationError = nil
                    requestorState.configurationAttempts = 0
                    requestorState.nextConfigurationAttempt = nil
                    requestorState.lastConfigurationAttempt = nil
                }
                if serverChanged || deviceChanged {
                    // A code and a choice belong to the server and device they were made with.
                    requestorState.session = .unknown
                    requestorState.signIn = nil
                    requestorState.signInPoll = nil
                }
                requestors[requestor] = requestorState
            }
            state.requestors = requestors
            if serverChanged || deviceChanged {
                state.forgetDecisions(of: nil)
            } else {
                for requestor in removed { state.cache.drop(requestor: requestor) }
            }
        }
        if serverChanged || deviceChanged { saveSignIns() }
        signInWake.signal()
        if serverChanged || statementChanged { upstream.credentials.dropToken() }
        wakeUp.signal()
        logger.info(
            "Adobe Pass configuration applied",
            metadata: [
                "requestors": "\(configuration.requestors.count)", "serverChanged": "\(serverChanged)",
                "deviceChanged": "\(deviceChanged)",
            ]
        )
    }

    /// Drops profiles and decisions of one requestor (or all with nil), and with `registration: true`
    /// also the DCR registration (in memory and on disk) and the token. Returns what went.
    public func clear(requestor: String?, registration: Bool) -> ClearedPassState {
        let (profiles, decisions) = state.withLock { state -> (Int, Int) in
            var profiles = 0
            for (name, requestorState) in state.requestors where requestor == nil || name == requestor {
                if case .authenticated = requestorState.session { profiles += 1 }
                state.requestors[name]?.session = .unknown
            }
            return (profiles, state.forgetDecisions(of: requestor))
        }
        let registrationCleared = registration && upstream.credentials.forgetRegistration()
        logger.notice(
            "Adobe Pass state cleared",
            metadata: [
                "requestor": "\(requestor ?? "*")", "profiles": "\(profiles)", "decisions": "\(decisions)",
                "registration": "\(registrationCleared)",
            ]
        )
        return ClearedPassState(
            requestor: requestor,
            profiles: profiles,
            decisions: decisions,
            registration: registrationCleared
        )
    }
}

/// What `Entitlement.clear(requestor:registration:)` dropped: the answer to `auth.clear`.
public struct ClearedPassState: Sendable, Hashable {
    /// The requestor cleared, or nil for all of them.
    public let requestor: String?
    /// How many authenticated profiles went.
    public let profiles: Int
    /// How many cached decisions went.
    public let decisions: Int
    /// Whether a DCR registration went.
    public let registration: Bool
}
