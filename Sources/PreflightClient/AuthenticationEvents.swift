import PreflightCore
import PreflightProtocol
import Synchronization

/// What the agent announces about a requestor's sign-in (its `auth.*` events, docs/PROTOCOL.md "Events"): the
/// AccessEnabler's `setAuthenticationStatus` and its sign-in callbacks, for every app of the box at once.
public enum AuthenticationEvent: Sendable, Hashable {
    /// Why a sign-in under way ended without a sign-in (`auth.failed`'s `reason`).
    public struct FailureReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The code expired before the user signed in.
        public static let expired = FailureReason(rawValue: "expired")
        /// An app gave the sign-in up (`cancelAuthentication`).
        public static let cancelled = FailureReason(rawValue: "cancelled")
        /// Adobe Pass refused the code (its `code` and `message` say why).
        public static let error = FailureReason(rawValue: "error")
    }

    /// A requestor's sign-in state (`auth.session`'s `state`).
    public struct SessionState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Signed in with a TV provider.
        public static let authenticated = SessionState(rawValue: "authenticated")
        /// Not signed in (or signed out).
        public static let missing = SessionState(rawValue: "missing")
        /// The sign-in reached its `notAfter`.
        public static let expired = SessionState(rawValue: "expired")
    }

    /// `auth.code`: a sign-in code was issued (or resumed after an agent restart): show it to the user.
    case code(SignInCode)
    /// `auth.authenticated`: the user finished signing in on the second screen.
    case authenticated(mvpd: String, notAfter: Int64)
    /// `auth.failed`: the sign-in under way ended without a sign-in; `code` and `message` of Adobe's error for
    /// reason `error`.
    case failed(reason: FailureReason, code: String?, message: String?)
    /// `auth.logout`: the user was signed out (`logout`, by this app or another).
    case logout(mvpd: String?)
    /// `auth.session`: the sign-in state changed (signed in, signed out, expired), whoever caused it.
    case session(state: SessionState, mvpd: String?, notAfter: Int64?)

    /// The topics this type reads; `auth.decisions` (preauthorize results) is not one.
    static let topics = ["auth.code", "auth.authenticated", "auth.failed", "auth.logout", "auth.session"]

    /// The event of one `auth.*` message, when it is one of these and about `requestor` (any requestor when nil);
    /// nil for anything else, or for a body missing what the protocol promises.
    public init?(_ event: AgentEvent, requestor: String?) {
        guard let body = event.json, body["requestor"]?.stringValue.map({ requestor == nil || $0 == requestor }) == true
        else { return nil }
        switch event.topic {
        case "auth.code":
            guard let code = EntitlementWire.signInCode(from: body) else { return nil }
            self = .code(code)
        case "auth.authenticated":
            guard let mvpd = body["mvpd"]?.stringValue, let notAfter = EntitlementWire.milliseconds(body["notAfter"])
            else { return nil }
            self = .authenticated(mvpd: mvpd, notAfter: notAfter)
        case "auth.failed":
            guard let reason = body["reason"]?.stringValue else { return nil }
            self = .failed(
                reason: FailureReason(rawValue: reason),
                code: body["code"]?.stringValue,
                message: body["message"]?.stringValue
            )
        case "auth.logout":
            self = .logout(mvpd: body["mvpd"]?.stringValue)
        case "auth.session":
            guard let state = body["state"]?.stringValue else { return nil }
            self = .session(
                state: SessionState(rawValue: state),
                mvpd: body["mvpd"]?.stringValue,
                notAfter: EntitlementWire.milliseconds(body["notAfter"])
            )
        default:
            return nil
        }
    }
}

extension PreflightClient {
    /// The sign-in events of this client's requestor, as they happen: an `AsyncStream` fed by an
    /// ``EventSubscriber`` on a thread of its own.
    ///
    /// The subscription starts here: call this before ``getAuthentication(mvpd:redirectUrl:domainName:)``, and
    /// the `.authenticated` (or `.failed`) that ends the sign-in cannot be missed; the agent does not replay
    /// events published before a subscriber connected. The stream runs until the task iterating it stops (or
    /// the stream is released); the subscriber's thread then ends within 100 ms. An agent that restarts is
    /// reconnected to by itself.
    ///
    /// - Parameter endpoint: The agent's events endpoint; by default the one of
    ///   `/etc/preflight/preflight.json`.
    /// - Throws: `.unreachable` when the endpoint has no socket file (the agent is not running) or the
    ///   subscription cannot be made, `.permissionDenied` when this user may not connect to it.
    public func authenticationEvents(
        endpoint: String = PreflightClient.configuredEventsEndpoint()
    ) throws(AgentConnectionError) -> AsyncStream<AuthenticationEvent> {
        let subscription = SubscriberHandOff(
            try EventSubscriber(endpoint: endpoint, topicPrefixes: AuthenticationEvent.topics)
        )
        let requestor = self.requestor
        let (stream, continuation) = AsyncStream.makeStream(of: AuthenticationEvent.self)
        let state = StopFlag()
        continuation.onTermination = { _ in state.stop() }
        do throws(NativeThread.StartError) {
            try NativeThread.startDetached(name: "pf-auth-events") {
                let subscriber = subscription.subscriber
                while !state.isStopped {
                    let event: AgentEvent?
                    do {
                        event = try subscriber.next(timeout: .milliseconds(100))
                    } catch {
                        break
                    }
                    if let event, let typed = AuthenticationEvent(event, requestor: requestor) {
                        continuation.yield(typed)
                    }
                }
                continuation.finish()
            }
        } catch {
            throw .unreachable(endpoint: endpoint, reason: "cannot start the subscriber's thread (error \(error.code))")
        }
        return stream
    }
}

/// Set once by the stream's termination, read by the subscriber's thread between polls.
private final class StopFlag: Sendable {
    private let stopped = Atomic(false)
    var isStopped: Bool { stopped.load(ordering: .acquiring) }
    func stop() { stopped.store(true, ordering: .releasing) }
}

/// Moves a subscriber, made on the calling thread (so that its errors are thrown there and its subscription
/// starts before the call returns), to the thread that alone uses it from then on.
private final class SubscriberHandOff: @unchecked Sendable {
    let subscriber: EventSubscriber
    init(_ subscriber: EventSubscriber) { self.subscriber = subscriber }
}
