import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import TargetDecisioning
import UpstreamHTTP

extension TargetService {
    // MARK: the box's location (on-device decisioning with geo targeting)

    /// The literal Adobe's engines take for "the caller's own address": the geo service then locates the
    /// box itself, as Target's edge would locate it.
    static let unknownIpAddress = "unknownIpAddress"

    /// What `status` shows of the location.
    public var geoStatus: GeoStatus { geoBox.withLock { $0.status } }

    /// Counts the changes of the location decisions use: a decision remembered with another count was made
    /// for another place and must be made again.
    public var geoGeneration: Int { geoBox.withLock { $0.status.generation } }

    /// Asks the geo poller to look the location up at its next turn (a reload).
    public func requestGeoFetch() {
        geoFetchRequested.store(true, ordering: .relaxed)
    }

    /// For an on-device decision of `body` by `engine`: when its artifact targets by geo, the request says
    /// the box's address is unknown (`context.geo.ipAddress` `unknownIpAddress`) and the location held is
    /// returned for `decide(..., geo:)`. nil (geo rules do not match) while no location is known: a load
    /// never waits for the lookup.
    func geoForDecision(_ body: inout JSONObject, engine: DecisioningEngine) -> JSONObject? {
        guard engine.artifact.geoTargetingEnabled else { return nil }
        var context = body["context"]?.objectValue ?? JSONObject()
        var geo = context["geo"]?.objectValue ?? JSONObject()
        geo["ipAddress"] = .string(Self.unknownIpAddress)
        context["geo"] = .object(geo)
        body["context"] = .object(context)
        return geoBox.withLock { $0.status.answer?.json }
    }

    /// The geo poller: unless decisioning is `server-side`, reads the location kept in the state directory
    /// (once); then, while the artifact held targets by geo, looks it up when such an artifact is adopted
    /// (until this run has a location), every `artifactPollingInterval` and when a reload asks, backing off
    /// after failures (the location held stays). While the box is not opted in to Target, a lookup due is not
    /// made and stays due (opting in asks for one at once). Runs until cancelled.
    public func runGeoPolling() async {
        var generator = SystemRandomNumberGenerator()
        var readDisk = false
        var due: MonotonicInstant?
        var adopted: String?
        while !Task.isCancelled {
            let configuration = self.configuration
            if configuration.decisioningMethod != .serverSide {
                if !readDisk {
                    readDisk = true
                    loadKeptGeo()
                }
                if geoFetchRequested.exchange(false, ordering: .relaxed) {
                    due = clock.now()
                    geoBox.withLock { $0.status.failuresInARow = 0 }
                }
                let (targetsByGeo, adoption) = artifactBox.withLock { box in
                    (
                        box.artifact?.geoTargetingEnabled ?? false,
                        "\(box.status.version ?? "")|\(box.status.etag ?? "")|\(box.status.downloadedAtMs ?? 0)"
                    )
                }
                // An artifact adopted that targets by geo is decided with a location from this run as soon as
                // one can be had; once this run has one, the cadence and reloads refresh it.
                if targetsByGeo, adoption != adopted {
                    adopted = adoption
                    if geoBox.withLock({ $0.status.source }) != .network { due = clock.now() }
                }
                if targetsByGeo, let next = due, clock.now() >= next, let answer = await fetchGeo(configuration) {
                    let failures = geoBox.withLock { $0.status.failuresInARow }
                    var failed = false
                    if case .failed = answer { failed = true }
                    due = ArtifactPolling.delay(
                        failed: failed,
                        failuresInARow: failures,
                        interval: configuration.artifactPollingInterval,
                        using: &generator
                    ).map { clock.now() + $0 }
                }
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// One lookup, without `x-forwarded-for` (the service locates the caller). A location replaces the one
    /// held, is kept in the state directory and, when it differs, counts as a change (`geo.updated`); a
    /// failure keeps the one held. An answer that comes after the location was forgotten (an opt-out while
    /// the lookup was in flight) changes nothing, in `status` or on disk. Nothing is asked unless the box is
    /// opted in to Target (`TargetPrivacy.allowsSending`): nil then, the location held is kept (an opt-out
    /// already forgot it), and `status` says why (`skipped`).
    @discardableResult
    public func fetchGeo(_ configuration: TargetConfiguration? = nil) async -> GeoPolling.Answer? {
        let configuration = configuration ?? self.configuration
        let url = configuration.geoURL
        // Read before the privacy status: an opt-out switched after that read forgets the location after it.
        let forgets = geoBox.withLock { $0.forgets }
        let privacy = self.privacy
        guard privacy.allowsSending else {
            let reason = privacy.notSentReason
            if Self.noteSkipped(reason, in: geoBox, at: \.status.skipped) {
                logger.info(
                    "box location not looked up: nothing is sent to Target until it is optedIn",
                    metadata: [
                        "url": "\(url)", "reason": "\(reason)", "cityHeld": "\(geoStatus.answer?.city ?? "none")",
                    ]
                )
            }
            return nil
        }
        let request = HTTPRequest(
            method: "GET",
            url: url,
            headers: [("User-Agent", configuration.device.userAgent)],
            timeout: .seconds(10)
        )
        let started = time.epochMilliseconds()
        let answer: GeoPolling.Answer
        do {
            answer = GeoPolling.interpret(try await artifactTransport.send(request))
        } catch {
            answer = .failed(error.description)
        }
        let now = time.epochMilliseconds()
        switch answer {
        case .located(let location):
            let held = unlessForgotten(since: forgets, from: url) {
                // Kept first: whoever sees the new location in `status` finds the file written.
                keepGeo(location, url: url, fetchedAtMs: now)
                return geoBox.withLock { box in
                    let changed = box.status.answer != location
                    box.status.answer = location
                    box.status.fetchedAtMs = now
                    box.status.source = .network
                    box.status.url = url
                    box.status.lastFetchAtMs = started
                    box.status.lastFetchError = nil
                    box.status.failuresInARow = 0
                    box.status.skipped = nil
                    if changed { box.status.generation += 1 }
                    return changed
                }
            }
            guard let changed = held else { break }
            if changed {
                // Offers decided on the box for the old location are decided again.
                decisionInputsChanged()
                logger.notice(
                    "box located by Target's geo service",
                    metadata: [
                        "url": "\(url)", "city": "\(location.city ?? "-")", "region": "\(location.regionCode ?? "-")",
                        "country": "\(location.countryCode ?? "-")",
                    ]
                )
                publish(.geoUpdated, Self.geoEventBody(location))
            } else {
                logger.debug("box location unchanged", metadata: ["url": "\(url)"])
            }
        case .failed(let reason):
            let recorded = unlessForgotten(since: forgets, from: url) {
                geoBox.withLock { box in
                    box.status.lastFetchAtMs = started
                    box.status.lastFetchError = reason
                    box.status.failuresInARow += 1
                    box.status.skipped = nil
                    return box.status.answer?.city ?? "none"
                }
            }
            guard let cityHeld = recorded else { break }
            logger.warning(
                "box location not looked up; the location held is kept",
                metadata: ["url": "\(url)", "error": "\(reason)", "cityHeld": "\(cityHeld)"]
            )
        }
        return answer
    }

    /// Runs `hold` (a change of the location held, and of its file) unless the location was forgotten since
    /// `forgets` was read: what a lookup or a read begun before an opt-out brings is not held, on disk either.
    /// `forgetGeo` takes the same lock, so it comes wholly before or after. nil (and a log line) when forgotten.
    private func unlessForgotten<Held: Sendable>(since forgets: Int, from source: String, _ hold: () -> Held) -> Held? {
        let held = geoSaving.withLock { _ -> Held? in
            guard geoBox.withLock({ $0.forgets }) == forgets else { return nil }
            return hold()
        }
        if held == nil {
            logger.info(
                "the box location was forgotten (an opt-out) while it was looked up or read; what came is not kept",
                metadata: ["from": "\(source)"]
            )
        }
        return held
    }

    static func geoEventBody(_ location: GeoAnswer) -> JSONObject {
        func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        return [
            "city": optional(location.city), "regionCode": optional(location.regionCode),
            "countryCode": optional(location.countryCode),
        ]
    }

    /// Forgets the location (an opt-out): nothing derived from the box's address is kept, on disk either.
    /// Once opted in again, the poller places the box afresh at its next turn.
    /// A lookup in flight meanwhile (or a read of the kept copy) holds nothing of what it brings.
    func forgetGeo() {
        let held = geoSaving.withLock { _ in
            let held = geoBox.withLock { $0.forget() }
            geoFile?.remove()
            return held
        }
        geoFetchRequested.store(true, ordering: .relaxed)
        if held { decisionInputsChanged() }
    }

    // MARK: kept in the state directory

    private var geoFile: StateFile? {
        stateDirectory.map { StateFile(path: "\($0)/target-geo.json", logger: logger) }
    }

    /// `target-geo.json`: the service's `x-geo-*` headers, its address and when it answered.
    private func keepGeo(_ location: GeoAnswer, url: String, fetchedAtMs: Int64) {
        geoFile?.write([
            "headers": .object(location.json), "url": .string(url), "fetchedAtMs": .integer(fetchedAtMs),
        ])
    }

    /// Reads the location kept by an earlier run, so that a box that starts offline decides with the last
    /// place it was located in.
    func loadKeptGeo() {
        let forgets = geoBox.withLock { $0.forgets }
        guard let file = geoFile, let kept = file.read() else { return }
        guard let location = kept["headers"]?.objectValue.flatMap(GeoAnswer.init(json:)) else {
            logger.error("the kept box location cannot be read; waiting for a lookup")
            return
        }
        let loaded = unlessForgotten(since: forgets, from: file.path) {
            geoBox.withLock { box in
                guard box.status.answer == nil else { return false }
                box.status.answer = location
                box.status.fetchedAtMs = kept["fetchedAtMs"]?.doubleValue.map { Int64($0) }
                box.status.source = .disk
                box.status.url = kept["url"]?.stringValue
                box.status.generation += 1
                return true
            }
        }
        if loaded == true {
            decisionInputsChanged()
            logger.notice(
                "box location read from the state directory",
                metadata: ["city": "\(location.city ?? "-")", "country": "\(location.countryCode ?? "-")"]
            )
        }
    }
}
