/// Every event the agent publishes on its events endpoint (`[topic][JSON body]`), declared once: its
/// topic and the fields of its body. Publishing takes an `EventTopic`, so no topic is spelled twice;
/// docs/PROTOCOL.md's "Events" table is `EventTopic.markdownTable` (a test keeps them equal).
public enum EventTopic: String, CaseIterable, Sendable {
    case agentReady = "agent.ready"
    case agentStopping = "agent.stopping"
    case agentReloaded = "agent.reloaded"
    case offersPrefetched = "offers.prefetched"
    case offersCleared = "offers.cleared"
    case targetPreview = "target.preview"
    case targetReset = "target.reset"
    case targetPrivacy = "target.privacy"
    case artifactUpdated = "artifact.updated"
    case geoUpdated = "geo.updated"
    case upstreamError = "upstream.error"
    case upstreamDown = "upstream.down"
    case upstreamUp = "upstream.up"
    case authSession = "auth.session"
    case authDecisions = "auth.decisions"
    case authCode = "auth.code"
    case authAuthenticated = "auth.authenticated"
    case authFailed = "auth.failed"
    case authLogout = "auth.logout"

    /// The topic frame.
    public var topic: String { rawValue }

    /// The body's fields besides `topic` and `uptimeMs`, and when it is published, for the docs.
    public var summary: (fields: String, when: String) {
        switch self {
        case .agentReady: ("`version`", "the endpoints are bound and the agent answers")
        case .agentStopping: ("`reason`", "a stop began: new requests get `shutting_down`")
        case .agentReloaded: ("`applied`, `error`", "after SIGHUP: whether the new configuration applies")
        case .offersPrefetched: ("`mboxes`, `cached`, `evicted`", "a `prefetch` Target answered")
        case .offersCleared: ("`cleared`, `name` when one entry was cleared", "the prefetch cache was emptied")
        case .targetPreview:
            (
                "`state` (on, off), `token` (its first 4 characters), `expiresInMs` (on), `reason` (off: ended, "
                    + "expired, refused), `cleared` (cached offers dropped)",
                "a Target preview (QA mode) began or ended (`target.preview`)"
            )
        case .targetReset:
            ("`cleared` (cached offers dropped), `by` (the command)", "a new Target visitor began (`resetExperience`)")
        case .targetPrivacy:
            (
                "`status`, `previous`, `by` (admin or configuration); with optedOut, `cleared` (cached offers) "
                    + "and `notificationsDropped`",
                "the box's Target privacy status changed"
            )
        case .artifactUpdated:
            (
                "`version`, `rules` (count), `etag`",
                "a new Target rules artifact was downloaded and now decides (on-device decisioning)"
            )
        case .geoUpdated:
            (
                "`city`, `regionCode`, `countryCode` (each null when the geo service did not say)",
                "Target's geo service located the box somewhere new (on-device decisioning of geo-targeted rules)"
            )
        case .upstreamError:
            ("`service` (target or pass), `operation`, `code`, and `message` or `status`", "an upstream call failed")
        case .upstreamDown:
            ("`service`, `failures` (calls in a row without an answer)", "an upstream stopped answering")
        case .upstreamUp: ("`service`, `downForMs`", "an upstream that was down answered again")
        case .authSession:
            (
                "`requestor`, `state` (authenticated, missing, expired), `mvpd`, `notAfter`",
                "a requestor's session changed"
            )
        case .authDecisions:
            (
                "`requestor`, `mvpd`, `permitted`, `denied`, `source` (cache or network), `fromCache`",
                "a `preauthorize` answered"
            )
        case .authCode:
            (
                "`requestor`, `code`, `url`, `notAfter`, `mvpd` (null until chosen)",
                "a sign-in code was issued (or resumed after a restart): show it to the user"
            )
        case .authAuthenticated:
            ("`requestor`, `mvpd`, `notAfter`", "the user finished signing in on the second screen")
        case .authFailed:
            (
                "`requestor`, `reason` (expired, cancelled, error), `code` and `message` of the error",
                "a pending sign-in ended without a sign-in"
            )
        case .authLogout:
            ("`requestor`, `mvpd`", "the user was signed out (`logout`)")
        }
    }

    /// docs/PROTOCOL.md's "Events" table.
    public static var markdownTable: String {
        (["| topic | fields | published when |", "|---|---|---|"]
            + allCases.map { "| `\($0.topic)` | \($0.summary.fields) | \($0.summary.when) |" })
            .joined(separator: "\n")
    }
}

extension EventTopic {
    /// The topic's bit in a set of topics (`EventTopic.allCases` order; there are fewer than 64).
    public var bit: UInt64 { Self.bits[self] ?? 0 }

    private static let bits: [EventTopic: UInt64] = Dictionary(
        uniqueKeysWithValues: allCases.enumerated().map { ($0.element, UInt64(1) << UInt64($0.offset)) }
    )

    /// The topics a subscription to `prefix` receives: those whose topic frame starts with it (ZeroMQ's
    /// subscriptions match prefixes of the first frame), as a set of `bit`s.
    public static func bits(matching prefix: some Collection<UInt8>) -> UInt64 {
        allCases.reduce(0) { set, topic in topic.topic.utf8.starts(with: prefix) ? set | topic.bit : set }
    }
}

/// How a service publishes an event: the body is built, and the event sent, only when some subscriber
/// wants the topic. An event nobody receives costs a check; building and encoding its body cost about
/// 12,000 instructions for `auth.decisions`, on every `preauthorize` answered from the cache.
public struct EventPublisher: Sendable {
    private let wants: @Sendable (EventTopic) -> Bool
    private let send: @Sendable (EventTopic, JSONObject) -> Void

    /// - Parameters:
    ///   - wants: whether some subscriber receives the topic; called from any thread.
    ///   - send: sends the event (topic, body without the fields every event carries); from any thread,
    ///     never under a service's lock.
    public init(
        wants: @escaping @Sendable (EventTopic) -> Bool = { _ in true },
        send: @escaping @Sendable (EventTopic, JSONObject) -> Void
    ) {
        self.wants = wants
        self.send = send
    }

    /// Publishes nothing.
    public static let none = EventPublisher(wants: { _ in false }, send: { _, _ in })

    /// Publishes `topic` with `body`, built only if some subscriber wants it.
    public func callAsFunction(_ topic: EventTopic, _ body: @autoclosure () -> JSONObject) {
        guard wants(topic) else { return }
        send(topic, body())
    }
}
