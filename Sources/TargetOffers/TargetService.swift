import Logging
import OrderedCollections
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization
import UpstreamHTTP

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Counters for `status` and `stats`.
public struct TargetCounters: Sendable, Equatable {
    public var hits = 0
    public var misses = 0
    public var networkLoads = 0
    /// Misses answered by on-device decisioning (`target.decisioningMethod`).
    public var onDeviceLoads = 0
    public var defaultsByReason: [String: Int] = [:]
    public var prefetchCommands = 0
    public var prefetchedMboxes = 0
    /// Click notifications queued by `clickedLocation`.
    public var clicks = 0
    public var upstreamCalls = 0
    public var upstreamErrors = 0
    public var lastSuccessAtMs: Int64?
    public var lastErrorAtMs: Int64?
    public var lastError: String?
    public var lastErrorCode: String?
    /// The most recent upstream latencies in milliseconds (a ring of 1,000), for percentiles.
    public var upstreamLatency = LatencyRing(capacity: 1000)
    /// The samples of `upstreamLatency`, oldest first.
    public var upstreamLatenciesMs: [Double] { upstreamLatency.recent }
}

/// The Target half of the agent: the SDK's prefetch API on the Delivery API.
///
/// Cheap paths (`loadFromCache`, `clearCache`) run on the caller's thread (the agent's I/O thread)
/// behind mutexes; paths that wait on Target are `async`.
public final class TargetService: Sendable {
    /// A `loadRequests` whose cache hits are answered and whose misses still need Target.
    public struct PendingLoad: Sendable {
        let command: LoadRequestsCommand
        /// Per request: its element of the result (`{"name":…,"content":…,"source":…}`) when known.
        let answered: [[UInt8]?]
        /// A traced load's `trace`: its own call, each element with Target's `trace`.
        var trace: TargetTrace?
    }

    struct MissKey: Hashable, Sendable {
        var name: String
        var targeting: MboxTargeting
        var profile: [Parameter]
        var property: String?
        /// The preview generation (`QAPreview`): a load never joins a call made with another preview.
        var preview: Int
    }

    enum MissOutcome: Sendable {
        /// The content, the `data` of a `withData` load and the mbox's `trace` (each nil when Target sent none).
        case content(String, data: JSONObject?, trace: JSONValue?)
        case failed(reason: String)
        /// Decided on the box from the rules artifact (`target.decisioningMethod`).
        case decided(CachedOffer)
    }

    public let cache: PrefetchCache
    public let visitor: VisitorSession
    public let notifications: NotificationQueue
    let transport: any HTTPTransport
    /// Whether Target answers at all: the breaker of the transport, when it has one (the agent's does).
    public let circuit: CircuitBreaker?
    /// Monotonic time, and wall time as the upstreams say it is (the box's clock may not be set).
    let clock: any AgentClock
    public let time: UpstreamTime
    let logger: Logger
    let publish: EventPublisher
    let configurationBox: Mutex<TargetConfiguration>
    let counterBox = Mutex(TargetCounters())
    /// `TargetCounters.hits`, `misses` and `onDeviceLoads`, counted on every cached load: kept apart from
    /// `counterBox` (whose copies of them stay zero) as atomics, one add where the lock's take and release were
    /// two. `counters` reads them in.
    let loadHits = Atomic<Int>(0)
    let loadMisses = Atomic<Int>(0)
    let onDeviceLoads = Atomic<Int>(0)
    /// The request a batch of display notifications alone is made from, while what it was made from holds.
    let notificationsTemplate = Mutex<DeliveryCodec.NotificationsTemplate?>(nil)
    /// When each display stamped by the box's clock happened, on the monotonic clock, to stamp it again
    /// by its age once the real time is known. Only displays before the first upstream response are here.
    let boxClockDisplays = Mutex<[String: MonotonicInstant]>([:])
    /// Click metrics of mboxes loaded from Target, by name and property (`clickedLocation`), oldest first.
    let loadedClicks = Mutex<OrderedDictionary<OfferKey, LoadedClick>>([:])
    /// Cached offers loaded with `notifyDisplay: false`, by name and property, until `displayedLocations`
    /// counts them; oldest first.
    let deferredDisplays = Mutex<OrderedDictionary<OfferKey, DeferredDisplay>>([:])
    /// The privacy status in force and the file that keeps the admin's choice.
    let privacySetting: PrivacySetting
    private let inFlightMisses = SingleFlight<MissKey, MissOutcome>()
    /// Target's QA mode for every app (`target.preview`); runtime state only.
    let previewBox = Mutex(QAPreview())
    /// The rules artifact held for on-device decisioning, and what `status` shows of it.
    let artifactBox = Mutex(HeldArtifact())
    /// Where the artifact is downloaded from: its CDN is not the Delivery API, so not behind Target's breaker.
    let artifactTransport: any HTTPTransport
    /// The state directory, where the artifact downloaded last is kept (`target-artifact.*`).
    let stateDirectory: String?
    /// Set by a reload: the artifact is fetched at the poller's next turn.
    let artifactFetchRequested = Atomic<Bool>(false)
    /// Offers decided on the box, answered again on the I/O thread while they hold.
    let decidedOffers = DecidedOffers()
    /// Moves after every change a decision on the box depends on, other than the visitor's ids: the artifact,
    /// the configuration, geo, privacy, a preview, cleared offers (`DecidedOffers.Inputs`).
    let decisionInputs = Atomic<Int>(0)
    /// Where the geo service locates the box, for artifacts that target by geo (`TargetService+Geo`).
    let geoBox = Mutex(HeldGeo())
    /// Taken around `target-geo.json`'s writes and removal with the change of `geoBox` they go with, so an
    /// opt-out's forget comes wholly before or after a lookup's answer is held.
    let geoSaving = Mutex(())
    /// Set by a reload: the location is looked up at the geo poller's next turn.
    let geoFetchRequested = Atomic<Bool>(false)

    public init(
        configuration: TargetConfiguration,
        transport: any HTTPTransport,
        stateDirectory: String?,
        artifactTransport: (any HTTPTransport)? = nil,
        clock: any AgentClock = SystemClock(),
        logger: Logger,
        publish: EventPublisher
    ) {
        self.configurationBox = Mutex(configuration)
        self.transport = transport
        self.artifactTransport = artifactTransport ?? transport
        self.stateDirectory = stateDirectory
        self.circuit = (transport as? CircuitBreakingTransport)?.breaker
        // The agent hands in the UpstreamTime its transport teaches; anything else (tests) gets its own.
        let time = (clock as? UpstreamTime) ?? UpstreamTime(clock)
        self.time = time
        self.clock = time
        self.logger = logger
        self.publish = publish
        self.cache = PrefetchCache(budgetBytes: configuration.cacheBudgetBytes)
        self.visitor = VisitorSession(
            timeout: configuration.sessionTimeout,
            clock: time,
            stateFile: stateDirectory.map { StateFile(path: "\($0)/target-visitor.json", logger: logger) }
        )
        self.notifications = NotificationQueue(
            journalPath: stateDirectory.map { "\($0)/target-notifications.journal" },
            capacity: configuration.notificationQueueCapacity,
            clock: time,
            logger: logger
        )
        self.privacySetting = PrivacySetting(
            configured: configuration.privacy,
            file: stateDirectory.map { StateFile(path: "\($0)/target-privacy.json", logger: logger) }
        )
        if privacySetting.status == .optedOut {
            // Whatever a journal or visitor file holds from before the opt-out goes now, without an event.
            let dropped = forgetEverythingForOptOut()
            logger.notice(
                "Target privacy is optedOut: nothing is sent to Target",
                metadata: ["notificationsDropped": "\(dropped.notifications)"]
            )
        } else if privacySetting.status == .unknown {
            logger.notice("Target privacy is unknown: nothing is sent to Target until it is optedIn")
        }
    }

    public var configuration: TargetConfiguration {
        configurationBox.withLock { $0 }
    }

    /// Applies a reloaded configuration; the cache, the session and the queue are kept. A new server
    /// drops the edge host the old one handed out: it would otherwise replace the new server's host
    /// (PROTOCOL.md) until the session expires, so the new address would not apply at once.
    public func update(configuration: TargetConfiguration) {
        let previous = configurationBox.withLock { box in
            let previous = box
            box = configuration
            return previous
        }
        if previous.serverURL != configuration.serverURL {
            visitor.forgetEdgeHost()
        }
        cache.setBudget(configuration.cacheBudgetBytes)
        visitor.setTimeout(configuration.sessionTimeout)
        decisionInputsChanged()
        if privacySetting.configures(configuration.privacy) {
            switchPrivacy(to: configuration.privacy, by: "configuration") {
                privacySetting.configure(configuration.privacy)
            }
        }
    }

    public var counters: TargetCounters {
        var counters = counterBox.withLock { $0 }
        counters.hits = loadHits.load(ordering: .relaxed)
        counters.misses = loadMisses.load(ordering: .relaxed)
        counters.onDeviceLoads = onDeviceLoads.load(ordering: .relaxed)
        return counters
    }

    /// The property an app's `propertyToken` names: nil for none or the configured one, so that apps asking
    /// for the configured property by name share its cache with those that do not name one.
    public func property(_ token: String?) -> String? {
        guard let token else { return nil }
        return token == configuration.propertyToken ? nil : token
    }

    public func resetCounters() {
        counterBox.withLock { $0 = TargetCounters() }
        loadHits.store(0, ordering: .relaxed)
        loadMisses.store(0, ordering: .relaxed)
        onDeviceLoads.store(0, ordering: .relaxed)
    }

    // MARK: loadRequests

    /// Answers what the cache can, at once: each hit queues a display notification. When every
    /// request hit, appends the `result` JSON to `reply` and returns nil; otherwise returns the load
    /// to finish with `completeLoad` (and `reply` holds nothing useful).
    ///
    /// The cached path: a hit appends the element prepared when the offer was cached, so a reply is
    /// one buffer written once, with no JSON built on the way.
    public func loadFromCache(_ command: LoadRequestsCommand, appendingResultTo reply: inout JSONWriter) -> PendingLoad?
    {
        let stamp = time.stampNow()
        let property = self.property(command.propertyToken)
        let count = command.requests.count
        // Which offer answered each request, kept only when a miss could need it (more than one request).
        var offers: [CachedOffer?] = []
        if count > 1 { offers.reserveCapacity(count) }
        var hits = 0
        // Misses answered by a decision made on the box earlier that still holds (`DecidedOffers`).
        var decided = 0
        reply.appendASCII("{\"contents\":[")
        for request in command.requests {
            let answer = self.answer(
                request.name,
                targeting: request.targeting,
                profile: command.profileParameters,
                property: property,
                stamp
            )
            let offer = answer?.offer
            if let answer {
                if answer.decided { decided += 1 } else { hits += 1 }
            }
            if count > 1 { offers.append(offer) }
            guard let offer else { continue }
            if hits + decided > 1 { reply.appendASCII(",") }
            if command.withData {
                offer.writeLoadResultElementWithData(&reply)
            } else {
                reply.writeRaw(offer.loadResultElement)
            }
            displayed(
                offer,
                targeting: request.targeting,
                profileParameters: command.profileParameters,
                notify: command.notifyDisplay,
                stamp
            )
        }
        countLoaded(requests: count, hits: hits, decided: decided)
        if hits + decided == count {
            reply.appendASCII("]}")
            return nil
        }
        return PendingLoad(
            command: command,
            answered: count > 1 ? offers.map { $0?.resultElement(withData: command.withData) } : [nil]
        )
    }

    /// The cached load apps send most, read in place (`PlainLoad`): one mbox of the configured property, no
    /// parameters, its notification queued. When the cache (or a decision made on the box that still holds)
    /// answers it, appends the `result` JSON to `reply`, as `loadFromCache` would, and returns true; else
    /// returns false with nothing changed or written, and the load goes the general way.
    /// `receivedAt`: when the request was received, on the system's monotonic clock.
    public func loadPlain(
        _ name: UnsafeBufferPointer<UInt8>,
        receivedAt: MonotonicInstant,
        appendingResultTo reply: inout JSONWriter
    ) -> Bool {
        let stamp = time.stampNow(receivedAt: receivedAt)
        // Looked up by its bytes in the cache, then among the offers decided on the box (`answer`'s order):
        // no `String` of the name is made.
        guard
            let answer = cache.hit(name, now: stamp.now).map({ (offer: $0, decided: false) })
                ?? decidedOffers.offer(name: name, at: stamp.epochMs, inputs: currentDecisionInputs).map({
                    (offer: $0, decided: true)
                })
        else {
            return false
        }
        countLoaded(requests: 1, hits: answer.decided ? 0 : 1, decided: answer.decided ? 1 : 0)
        // One append: the offer holds its element between the result's brackets.
        reply.writeRaw(answer.offer.loadResult)
        displayed(answer.offer, targeting: nil, profileParameters: [], notify: true, stamp)
        return true
    }

    /// Counts a load's requests answered at once: every request the cache did not hold is a miss, those a
    /// decision made on the box answered included (they are counted as on-device loads too).
    @inline(__always)
    private func countLoaded(requests: Int, hits: Int, decided: Int) {
        if hits > 0 { loadHits.add(hits, ordering: .relaxed) }
        if requests > hits { loadMisses.add(requests - hits, ordering: .relaxed) }
        if decided > 0 { onDeviceLoads.add(decided, ordering: .relaxed) }
    }

    /// The offer that answers one request of a load at once: the cache's (counted as a hit), or a decision
    /// made on the box earlier that still holds (`DecidedOffers`); nil when it must be fetched or decided.
    @inline(__always)
    func answer(
        _ name: String,
        targeting: @autoclosure () -> MboxTargeting,
        profile: [Parameter],
        property: String?,
        _ stamp: (now: MonotonicInstant, epochMs: Int64, byBoxClock: Bool)
    ) -> (offer: CachedOffer, decided: Bool)? {
        let cached =
            property == nil
            ? cache.hit(name, now: stamp.now) : cache.hit(OfferKey(name, property: property), now: stamp.now)
        if let cached { return (cached, false) }
        let decided = decidedOffer(
            name,
            targeting: targeting(),
            profile: profile,
            property: property,
            at: stamp.epochMs
        )
        return decided.map { ($0, true) }
    }

    /// The display of an offer a load answered: its notification queued, or kept for `displayedLocations`
    /// when the app said it notifies itself (`notifyDisplay: false`). `targeting` nil: none.
    @inline(__always)
    func displayed(
        _ offer: CachedOffer,
        targeting: MboxTargeting?,
        profileParameters: [Parameter],
        notify: Bool,
        _ stamp: (now: MonotonicInstant, epochMs: Int64, byBoxClock: Bool)
    ) {
        guard notify else {
            deferDisplay(of: offer, targeting: targeting ?? MboxTargeting(), profileParameters: profileParameters)
            return
        }
        // The plain cached load's display (no targeting, a prefetched offer, the real time known): queued as a
        // record, not an object (`QueuedNotification`). `case .none` looks at the targeting in place (`== nil`
        // copied it).
        if case .none = targeting, profileParameters.isEmpty, !offer.decidedOnDevice, !stamp.byBoxClock {
            notifications.enqueueDisplay(of: offer, timestampMs: stamp.epochMs)
            return
        }
        let notification = DisplayNotification.display(
            of: offer,
            targeting: targeting,
            profileParameters: profileParameters,
            timestampMs: stamp.epochMs,
            stampedByBoxClock: stamp.byBoxClock
        )
        queue(notification, stampedByBoxClockAt: stamp.byBoxClock ? stamp.now : nil)
    }

    /// Queues a notification; one stamped by the box's clock is remembered to be stamped again when sent.
    @inline(__always)
    func queue(_ notification: DisplayNotification, stampedByBoxClockAt now: MonotonicInstant?) {
        if let now {
            // Bounded: with no Date header ever (a proxy that strips it) every display lands here;
            // past the queue's capacity a display is stamped again by the offset instead.
            let capacity = configuration.notificationQueueCapacity
            boxClockDisplays.withLock { if $0.count < capacity { $0[notification.id] = now } }
        }
        notifications.enqueue(notification)
    }

    /// Fetches the misses of a load in one `execute` call (sharing calls already in flight for the
    /// same mbox and parameters) and returns the whole `result` JSON, in request order.
    public func completeLoad(_ pending: PendingLoad) async -> [UInt8] {
        let command = pending.command
        let property = self.property(command.propertyToken)
        let preview = previewBox.withLock { $0.generation }
        var keys: [Int: MissKey] = [:]
        for (index, request) in command.requests.enumerated() where pending.answered[index] == nil {
            keys[index] = MissKey(
                name: request.name,
                targeting: request.targeting,
                profile: command.profileParameters,
                property: property,
                preview: preview
            )
        }
        // Join calls in flight for identical misses; start one call for the rest, in request order. A traced
        // load has a call of its own: the trace is of its request.
        let profile = command.profileParameters
        let misses = keys.sorted { $0.key < $1.key }.map(\.value)
        // On-device decisioning answers the mboxes its rules artifact decides; only the others go to Target.
        let (decided, batch) =
            pending.trace == nil
            ? decideOnDevice(misses, profile: profile, property: property) : ([:], misses)
        let shared: @Sendable () async -> [MissKey: MissOutcome]
        if batch.isEmpty {
            shared = { [:] }
        } else if let trace = pending.trace {
            shared = { await self.execute(batch, profile: profile, property: property, trace: trace) }
        } else {
            shared = {
                await self.inFlightMisses.run(batch: batch) { fresh in
                    await self.execute(fresh, profile: profile, property: property)
                }
            }
        }
        // An app that asked for less than `target.timeout` gets its defaults at its own deadline.
        var outcomes: [MissKey: MissOutcome]
        if let limit = command.timeout, limit < configuration.timeout {
            outcomes =
                await within(limit, clock: clock, shared)
                ?? Dictionary(
                    batch.map { ($0, MissOutcome.failed(reason: "timeout")) },
                    uniquingKeysWith: { a, _ in a }
                )
        } else {
            outcomes = await shared()
        }
        outcomes.merge(decided) { _, local in local }
        // When the answers are shown: the time their display notifications carry.
        let stamp = decided.isEmpty ? nil : time.stampNow()
        var result = JSONWriter(reservingCapacity: pending.answered.reduce(64) { $0 + ($1?.count ?? 64) + 1 })
        var network = 0
        var onDevice = 0
        var defaults: [String: Int] = [:]
        let traced = pending.trace != nil
        result.appendASCII("{\"contents\":[")
        for (index, request) in command.requests.enumerated() {
            if index > 0 { result.appendASCII(",") }
            if let element = pending.answered[index] {
                result.writeRaw(element)
                continue
            }
            switch keys[index].flatMap({ outcomes[$0] }) ?? .failed(reason: "network") {
            case .decided(let offer):
                // A traced load is never decided on the box: no trace member to add.
                result.writeRaw(offer.resultElement(withData: command.withData))
                displayed(
                    offer,
                    targeting: request.targeting,
                    profileParameters: command.profileParameters,
                    notify: command.notifyDisplay,
                    stamp ?? time.stampNow()
                )
                onDevice += 1
            case .content(let text, let data, let trace):
                writeLoadResultElement(
                    &result,
                    name: request.name,
                    content: text,
                    source: "network",
                    data: command.withData ? data ?? [:] : nil,
                    trace: traced ? .some(trace ?? .null) : .none
                )
                network += 1
            case .failed(let reason):
                writeLoadResultElement(
                    &result,
                    name: request.name,
                    content: request.defaultContent,
                    source: "default",
                    data: command.withData ? [:] : nil,
                    trace: traced ? .some(.null) : .none
                )
                defaults[reason, default: 0] += 1
            }
        }
        result.appendASCII("]}")
        if onDevice > 0 { onDeviceLoads.add(onDevice, ordering: .relaxed) }
        counterBox.withLock { counters in
            counters.networkLoads += network
            counters.defaultsByReason.merge(defaults, uniquingKeysWith: +)
        }
        return result.bytes
    }

    private func execute(
        _ keys: [MissKey],
        profile: [Parameter],
        property: String?,
        trace: TargetTrace? = nil
    ) async -> [MissKey: MissOutcome] {
        let mboxes = keys.map { DeliveryMbox(name: $0.name, targeting: $0.targeting) }
        let answer = await deliver(
            operation: "execute",
            prefetch: [],
            execute: mboxes,
            profile: profile,
            property: property,
            trace: trace
        )
        switch answer {
        case .success(let response):
            rememberClicks(of: response.executed, property: property)
            var outcomes: [MissKey: MissOutcome] = [:]
            for key in keys {
                if let mbox = response.executed.first(where: { $0.name == key.name }), !mbox.options.isEmpty {
                    outcomes[key] = .content(
                        mbox.options.map(\.contentText).joined(),
                        data: mbox.data,
                        trace: mbox.trace
                    )
                } else {
                    outcomes[key] = .failed(reason: "noContent")
                }
            }
            return outcomes
        case .failure(let failure):
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, MissOutcome.failed(reason: failure.reason)) })
        }
    }

    // MARK: prefetch

    /// One Delivery call for the whole array; caches every mbox Target returned content for.
    public func prefetch(_ command: PrefetchCommand) async -> PrefetchResult {
        let mboxes = command.mboxes.map { DeliveryMbox(name: $0.name, targeting: $0.targeting) }
        counterBox.withLock { $0.prefetchCommands += 1 }
        // Offers decided for a visitor reset meanwhile are not cached for the new one, nor offers decided
        // under another preview (a preview's after its end, the live activities' during it).
        let generation = visitor.current.generation
        let profile = command.profileParameters
        let property = self.property(command.propertyToken)
        if waitsForArtifact {
            return PrefetchResult(success: false, mboxes: command.mboxes.map { .init(name: $0.name, cached: false) })
        }
        // On-device decisioning decides the mboxes its artifact decides; only the others go to Target.
        let previewBefore = previewBox.withLock { $0.generation }
        let onDevice = onDeviceEngine.map { decideOnDevice($0, prefetch: mboxes, profile: profile, property: property) }
        let decided = onDevice.map { decision in
            decision.response.prefetched.filter { !decision.remote.contains($0.name) }
        }
        let remote = onDevice.map { decision in mboxes.filter { decision.remote.contains($0.name) } } ?? mboxes
        var fetched: [DeliveryResponse.Mbox] = []
        var fetchedUnderPreview = previewBefore
        var success = true
        if !remote.isEmpty {
            let call: @Sendable () async -> Result<DeliveryResponse, DeliveryFailure> = {
                await self.deliver(
                    operation: "prefetch",
                    prefetch: remote,
                    execute: [],
                    profile: profile,
                    property: property
                )
            }
            // An app that asked for less than `target.timeout` is answered at its own deadline (not cached).
            let answered: Result<DeliveryResponse, DeliveryFailure>
            if let limit = command.timeout, limit < configuration.timeout {
                answered = await within(limit, clock: clock, call) ?? .failure(.timeout)
            } else {
                answered = await call()
            }
            switch answered {
            case .success(let response):
                fetched = response.prefetched
                fetchedUnderPreview = response.previewGeneration
            case .failure:
                success = false
            }
        }
        // What the box decided is cached even when Target failed for the rest: it holds without Target.
        let previewAfter = previewBox.withLock { $0.generation }
        let sameVisitor = visitor.current.generation == generation
        // (A preview Target refused ends during the call, which is then made again without it: what it fetched
        // is the live activities', as what the box decides now would be.)
        let decidedHolds = sameVisitor && previewAfter == previewBefore
        let fetchedHolds = success && sameVisitor && fetchedUnderPreview == previewAfter
        let kept = (decidedHolds ? decided ?? [] : []) + (fetchedHolds ? fetched : [])
        success = fetchedHolds && (decided?.isEmpty ?? true || decidedHolds)
        let now = clock.now()
        let epoch = clock.epochMilliseconds()
        var cachedNames = Set<String>()
        var evicted = 0
        for mbox in kept where !mbox.options.isEmpty {
            evicted += cache.store(
                CachedOffer(
                    name: mbox.name,
                    options: mbox.options,
                    state: mbox.state,
                    clickToken: mbox.clickToken,
                    data: mbox.data,
                    property: property,
                    now: now,
                    epochMs: epoch
                )
            )
            cachedNames.insert(mbox.name)
        }
        let names = command.mboxes.map(\.name)
        if success || !cachedNames.isEmpty {
            counterBox.withLock { $0.prefetchedMboxes += cachedNames.count }
            publish(
                .offersPrefetched,
                [
                    "mboxes": .array(names.map { .string($0) }),
                    "cached": .array(names.filter(cachedNames.contains).map { .string($0) }),
                    "evicted": .integer(Int64(evicted)),
                ]
            )
        }
        return PrefetchResult(success: success, mboxes: names.map { .init(name: $0, cached: cachedNames.contains($0)) })
    }

    // MARK: clear

    /// Empties the cache (or drops one entry); returns how many entries were removed.
    public func clearCache(name: String? = nil) -> Int {
        let cleared = cache.clear(name: name)
        // Decisions made on the box go too: a preview starting or ending, and an opt-out, clear through here.
        decisionInputsChanged()
        decidedOffers.removeAll()
        var body: JSONObject = ["cleared": .integer(Int64(cleared))]
        if let name { body["name"] = .string(name) }
        publish(.offersCleared, body)
        return cleared
    }
}

extension TargetService {
    // MARK: visitor

    /// `resetExperience` (AEP's): a new Target visitor. Display notifications already queued are sent
    /// first, under the old visitor they belong to (one bounded flush; what Target does not confirm stays
    /// queued and goes later, under the new identity). Then tntId, thirdPartyId, session and edge host are
    /// forgotten, as AEP does, and, unlike AEP, the cached offers too: they were decided for the old
    /// visitor (a box handed to a new household must not show or count them). Returns how many cached
    /// offers were dropped.
    public func resetExperience() async -> Int {
        // Bounded: a backlog of thousands is not worth holding an app's reply for.
        let sent = await within(configuration.timeout, clock: clock) { await self.flushNotifications() } ?? 0
        let left = notifications.summary.pending
        visitor.reset()
        let cleared = cache.clear(name: nil)
        publish(.targetReset, ["cleared": .integer(Int64(cleared)), "by": "resetExperience"])
        logger.notice(
            "Target visitor reset: new tntId, thirdPartyId, session and edge host; cached offers dropped",
            metadata: [
                "cachedOffersDropped": "\(cleared)", "notificationsSent": "\(sent)", "notificationsLeft": "\(left)",
            ]
        )
        return cleared
    }
}

extension TargetService {
    // MARK: clicks

    /// Why `clickedLocation` sent nothing.
    public enum ClickRefusal: Error, Sendable, Hashable {
        /// Neither prefetched nor loaded from Target on this run.
        case unknownMbox
        /// Target sent no click metric for it.
        case noClickMetric
        /// The box opted out of Target (`target.privacy`).
        case optedOut
    }

    /// The most network-loaded mboxes whose click metric is kept (AEP keeps them all; a box runs for months).
    static let loadedClickCapacity = 1_000

    /// Keeps the click metrics of mboxes loaded from Target (`execute`) under `property`, for `clickedLocation`.
    func rememberClicks(of mboxes: [DeliveryResponse.Mbox], property: String?) {
        let clicks = mboxes.compactMap { mbox in
            mbox.clickToken.map { (OfferKey(mbox.name, property: property), LoadedClick(state: mbox.state, token: $0)) }
        }
        guard !clicks.isEmpty else { return }
        loadedClicks.withLock { kept in
            for (name, click) in clicks {
                kept.set(click, forKey: name, keepingAtMost: Self.loadedClickCapacity)
            }
        }
    }

    /// `clickedLocation` (AEP's): queues a click notification with the click metric's token Target sent for
    /// the mbox (its prefetched offer first, else its last load from Target), journaled and sent as display
    /// notifications are. Nothing is queued when there is no such metric.
    public func clickedLocation(_ command: ClickedLocationCommand) -> Result<Void, ClickRefusal> {
        if privacy == .optedOut { return .failure(.optedOut) }
        let key = OfferKey(command.name, property: property(command.propertyToken))
        let click: LoadedClick
        if let offer = cache.peek(key) {
            guard let token = offer.clickToken else { return .failure(.noClickMetric) }
            click = LoadedClick(state: offer.state, token: token)
        } else if let loaded = loadedClicks.withLock({ $0[key] }) {
            click = loaded
        } else {
            return .failure(.unknownMbox)
        }
        let stamp = time.stampNow()
        let notification = DisplayNotification.click(
            mbox: command.name,
            property: key.property,
            state: click.state,
            token: click.token,
            targeting: command.targeting,
            profileParameters: command.profileParameters,
            timestampMs: stamp.epochMs,
            stampedByBoxClock: stamp.byBoxClock
        )
        queue(notification, stampedByBoxClockAt: stamp.byBoxClock ? stamp.now : nil)
        counterBox.withLock { $0.clicks += 1 }
        return .success(())
    }
}

/// A network-loaded mbox's click metric.
struct LoadedClick: Sendable, Hashable {
    var state: String?
    var token: String
}

extension TargetService {
    // MARK: displays the app reports

    /// What `displayedLocations` did with each name.
    public struct DisplayedLocations: Sendable, Hashable {
        /// Names whose display notification is now queued.
        public var notified: [String] = []
        /// Names with nothing to count: not loaded from the cache with `notifyDisplay: false` since their
        /// last count (a default load already counted it, Target counted a load from Target, or the offer
        /// was never loaded).
        public var skipped: [String] = []
    }

    /// The most deferred displays kept; the oldest go first past it (their impressions are then lost, as
    /// an app that never shows an offer loses it).
    static let deferredDisplayCapacity = 1_000

    func deferDisplay(of offer: CachedOffer, targeting: MboxTargeting, profileParameters: [Parameter]) {
        let deferred = DeferredDisplay(offer: offer, targeting: targeting, profileParameters: profileParameters)
        deferredDisplays.withLock { kept in
            kept.set(deferred, forKey: offer.key, keepingAtMost: Self.deferredDisplayCapacity)
        }
    }

    /// `displayedLocations` (AEP's): queues the display notification of each offer the app loaded from the
    /// cache with `notifyDisplay: false`, once: a name counted is forgotten until it is loaded so again.
    public func displayedLocations(_ command: DisplayedLocationsCommand) -> DisplayedLocations {
        var result = DisplayedLocations()
        let stamp = time.stampNow()
        let property = self.property(command.propertyToken)
        for name in command.names {
            guard
                let deferred = deferredDisplays.withLock({ $0.removeValue(forKey: OfferKey(name, property: property)) })
            else {
                result.skipped.append(name)
                continue
            }
            let notification = DisplayNotification.display(
                of: deferred.offer,
                targeting: command.targeting ?? deferred.targeting,
                profileParameters: command.profileParameters ?? deferred.profileParameters,
                timestampMs: stamp.epochMs,
                stampedByBoxClock: stamp.byBoxClock
            )
            queue(notification, stampedByBoxClockAt: stamp.byBoxClock ? stamp.now : nil)
            result.notified.append(name)
        }
        return result
    }
}

/// A cached offer the app loaded with `notifyDisplay: false`, waiting for `displayedLocations`.
struct DeferredDisplay: Sendable {
    var offer: CachedOffer
    var targeting: MboxTargeting
    var profileParameters: [Parameter]
}

extension OrderedDictionary {
    /// Sets `value` for `key`. A key not yet held, past `capacity`, first evicts the oldest entry (a key
    /// already held keeps its place). A plain dictionary's `keys.first` is any key, not the oldest: the
    /// clicks and deferred displays kept lost a recent entry as often as an old one.
    mutating func set(_ value: Value, forKey key: Key, keepingAtMost capacity: Int) {
        if index(forKey: key) == nil, count >= capacity {
            removeFirst()
        }
        self[key] = value
    }
}
