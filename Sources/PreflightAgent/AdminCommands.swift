import PassEntitlement
import PreflightCore
import PreflightProtocol
import TargetOffers

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The admin commands (docs/PROTOCOL.md, "Admin commands"): what `preflightctl` shows and clears.
/// Secrets never appear in any result.
extension CommandDispatcher {
    /// The handlers of the admin commands; an app command (read by `AppCommand`) never reaches here.
    func handleAdmin(_ command: Command, arguments: ArgumentReader) throws(ProtocolError) -> Outcome {
        switch command {
        case .status:
            return .success(statusResult())
        case .stats:
            let result = statsResult()
            if try arguments.optionalBool("reset") == true {
                statistics.reset()
                target.resetCounters()
            }
            return .success(result)
        case .offersList:
            return .success(["offers": .array(target.cache.entries.map(offerSummary))])
        case .offersShow:
            let name = try arguments.requiredString("name")
            let property = try arguments.optionalString("propertyToken")
            guard let offer = target.cache.peek(OfferKey(name, property: target.property(property))) else {
                throw .invalidArgument("name", "no cached offer named \"\(name)\"; preflightctl offers list shows them")
            }
            var detail = offerSummary(offer).objectValue ?? JSONObject()
            detail["content"] = .string(offer.content)
            detail["state"] = offer.state.map { .string($0) } ?? .null
            detail["options"] = .array(
                offer.options.map {
                    [
                        "type": .string($0.type), "content": $0.content,
                        "eventToken": $0.eventToken.map { .string($0) } ?? .null,
                    ]
                }
            )
            return .success(.object(detail))
        case .offersClear:
            return .success(["cleared": .integer(Int64(target.clearCache(name: try arguments.optionalString("name"))))])
        case .targetPreview:
            return .success(preview(try TargetPreviewCommand.decode(arguments)))
        case .notificationsStatus:
            return .success(notificationsResult())
        case .notificationsFlush:
            let target = self.target
            return .later {
                let confirmed = await target.flushNotifications()
                let summary = target.notifications.summary
                return .success(
                    [
                        "confirmed": .integer(Int64(confirmed)),
                        "queued": .integer(Int64(summary.pending + summary.inFlight)),
                        "lastError": summary.counters.lastError.map { .string($0) } ?? .null,
                    ]
                )
            }
        case .configShow:
            return .success(runtime.configuration.redactedJSON)
        case .authList:
            return .success(pass.snapshot().json)
        case .authClear:
            let registration = try arguments.optionalBool("registration") ?? false
            let requestor = try arguments.optionalString("requestor")
            if let requestor, !runtime.configuration.pass.requestors.contains(requestor) {
                throw .invalidArgument(
                    "requestor",
                    "\(requestor) is not a requestor of this box (\(AgentConfiguration.path(of: \.pass.requestors)))"
                )
            }
            return .success(pass.clear(requestor: requestor, registration: registration).json)
        case .targetPrivacy:
            try arguments.onlyKeys(["status"], describing: "target.privacy")
            guard let name = try arguments.optionalString("status") else { return .success(privacyResult()) }
            guard let status = TargetPrivacy(rawValue: name) else {
                throw .invalidArgument("status", "must be one of \(TargetPrivacy.names); got \"\(name)\"")
            }
            let target = self.target
            // In a task: it writes target-privacy.json, and opting out rewrites the journal and visitor file.
            return .later {
                let previous = target.setPrivacy(status)
                var result = self.privacyResult().objectValue ?? [:]
                result["previous"] = .string(previous.rawValue)
                return .success(.object(result))
            }
        case .decisioningEvaluate:
            return try evaluateDecision(arguments)
        case .ping, .prefetch, .loadRequests, .clearPrefetchCache, .clickedLocation, .displayedLocations,
            .preauthorize,
            .checkAuthentication,
            .getAuthentication, .cancelAuthentication, .getAuthorization, .checkAuthorization, .logout, .getMetadata,
            .getSelectedProvider, .setSelectedProvider, .getThirdPartyId, .setThirdPartyId, .getTntId, .setTntId,
            .getSessionId, .setSessionId, .resetExperience, .getVisitorIds, .setMarketingCloudVisitorId,
            .setCustomerIds:
            throw .internalError("\(command.wireName) has no argument reader in AppCommand")
        }
    }

    private func offerSummary(_ offer: CachedOffer) -> JSONValue {
        [
            "name": .string(offer.name),
            "propertyToken": offer.property.map { .string($0) } ?? .null,
            "bytes": .integer(Int64(offer.bytes)),
            "cachedAtMs": .integer(offer.cachedAtEpochMs),
            "ageMs": .integer(milliseconds(MonotonicInstant.now - offer.cachedAt)),
            "hits": .integer(Int64(offer.hits)),
            "tokens": .integer(Int64(offer.eventTokens.count)),
            "options": .integer(Int64(offer.optionInfo.count)),
        ]
    }

    private func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }

    func statusResult() -> JSONValue {
        let configuration = runtime.configuration
        let counters = runtime.server?.counters ?? IPCCounters()
        // One snapshot serves both the Pass health and the requestor summary: it is built under the Pass lock.
        let passSnapshot = pass.snapshot()
        return [
            "version": .string(preflightVersion),
            "pid": .integer(Int64(ProcessInfo.processInfo.processIdentifier)),
            "uptimeMs": .integer(runtime.uptimeMs),
            "startedAt": .string(UTCTimestamp.string(from: runtime.startedAtWallClock, fractionalSeconds: false)),
            "configFile": runtime.configurationPath.map { .string($0) } ?? .null,
            "clock": clockResult(),
            "endpoints": [
                "app": .string(configuration.agent.appEndpoint),
                "admin": .string(configuration.agent.adminEndpoint),
                "events": .string(configuration.agent.eventsEndpoint),
            ],
            "ipc": [
                "requests": .integer(Int64(counters.requests)),
                "replies": .integer(Int64(counters.replies)),
                "inFlight": .integer(Int64(counters.inFlight)),
                "refusedOverloaded": .integer(Int64(counters.refusedOverloaded)),
                "repliesToVanishedPeers": .integer(Int64(counters.repliesToVanishedPeers)),
                "repliesDroppedAtHighWaterMark": .integer(Int64(counters.repliesDroppedAtHighWaterMark)),
                "malformedFrames": .integer(Int64(counters.malformedFrames)),
                "eventsPublished": .integer(Int64(counters.eventsPublished)),
            ],
            "upstreams": [
                "target": targetHealth(configuration),
                "pass": passHealth(configuration, passSnapshot),
            ],
            "target": targetResult(configuration),
            "pass": passSummary(passSnapshot),
        ]
    }

    private func targetResult(_ configuration: AgentConfiguration) -> JSONValue {
        var result: JSONObject = [
            "cache": cacheResult(),
            "preview": previewResult(),
            "visitor": visitorResult(),
            "notifications": notificationsResult(),
            "loads": loadsResult(),
            "privacy": privacyResult(),
            "artifact": artifactResult(configuration),
        ]
        if configuration.target.decisioningMethod != DecisioningMethod.serverSide.rawValue {
            result["geo"] = geoResult(configuration)
        }
        return .object(result)
    }

    /// Where Target's geo service located the box, as on-device decisions of geo-targeted rules see it.
    func geoResult(_ configuration: AgentConfiguration) -> JSONValue {
        let status = target.geoStatus
        let answer = status.answer
        func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        func milliseconds(_ value: Int64?) -> JSONValue { value.map { .integer($0) } ?? .null }
        func degrees(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
        var result = JSONObject()
        result["url"] = .string(configuration.target.effectiveGeoURL)
        result["targetsByGeo"] = .bool(target.artifact?.geoTargetingEnabled ?? false)
        result["city"] = text(answer?.city)
        result["regionCode"] = text(answer?.regionCode)
        result["countryCode"] = text(answer?.countryCode)
        result["latitude"] = degrees(answer?.latitude)
        result["longitude"] = degrees(answer?.longitude)
        result["source"] = text(status.source?.rawValue)
        result["fetchedAtMs"] = milliseconds(status.fetchedAtMs)
        result["lastFetchAtMs"] = milliseconds(status.lastFetchAtMs)
        result["lastFetchError"] = text(status.lastFetchError)
        result["skipped"] = text(status.skipped)
        return .object(result)
    }

    /// The rules artifact for on-device decisioning: what is held, and how the last fetch went.
    func artifactResult(_ configuration: AgentConfiguration) -> JSONValue {
        let status = target.artifactStatus
        func optional(_ text: String?) -> JSONValue { text.map { .string($0) } ?? .null }
        func optional(_ number: Int64?) -> JSONValue { number.map { .integer($0) } ?? .null }
        let now = target.time.epochMilliseconds()
        return [
            "decisioningMethod": .string(configuration.target.decisioningMethod),
            "url": .string(configuration.target.effectiveArtifactURL),
            "version": optional(status.version),
            "generatedAt": optional(status.generatedAt),
            "rules": optional(status.rules.map { Int64($0) }),
            "etag": optional(status.etag),
            "source": optional(status.source?.rawValue),
            "ageMs": optional(status.downloadedAtMs.map { max(0, now - $0) }),
            "lastFetchAtMs": optional(status.lastFetchAtMs),
            "lastFetchResult": optional(status.lastFetchResult?.rawValue),
            "lastFetchError": optional(status.lastFetchError),
            "skipped": optional(status.skipped),
        ]
    }

    private func passHealth(_ configuration: AgentConfiguration, _ snapshot: PassSnapshot) -> JSONValue {
        var health: JSONObject = ["url": .string(configuration.pass.effectiveServerURL)]
        for member in snapshot.upstream.members { health[member.key] = member.value }
        for member in circuitMembers(pass.circuit) { health[member.key] = member.value }
        return .object(health)
    }

    /// Per requestor: configuration state and the authentication session (auth.list has the rest).
    private func passSummary(_ snapshot: PassSnapshot) -> JSONValue {
        var requestors = JSONObject()
        for requestor in snapshot.requestors {
            requestors[requestor.name] = [
                "configuration": .string(requestor.configurationState.rawValue),
                "session": requestor.sessionJSON,
                "cachedDecisions": .integer(Int64(requestor.decisions.count)),
            ]
        }
        return [
            "registration": .string(snapshot.registration.rawValue),
            "accessToken": .string(snapshot.token.rawValue),
            "requestors": .object(requestors),
        ]
    }

    private func statsResult() -> JSONValue {
        let counters = target.counters
        var upstream = LatencyRing()
        for sample in counters.upstreamLatenciesMs { upstream.record(milliseconds: sample) }
        let lookups = counters.hits + counters.misses
        return [
            "commands": statistics.json,
            "upstreams": [
                "target": [
                    "calls": .integer(Int64(counters.upstreamCalls)),
                    "errors": .integer(Int64(counters.upstreamErrors)),
                    "latency": upstream.json,
                ]
            ],
            "offers": [
                "hits": .integer(Int64(counters.hits)),
                "misses": .integer(Int64(counters.misses)),
                "hitRatio": lookups == 0 ? .null : .number(Double(counters.hits) / Double(lookups)),
                "evictions": .integer(Int64(target.cache.summary.evictions)),
                "networkLoads": .integer(Int64(counters.networkLoads)),
                "onDeviceLoads": .integer(Int64(counters.onDeviceLoads)),
                "defaultsByReason": defaultsByReason(counters),
                "prefetchCommands": .integer(Int64(counters.prefetchCommands)),
                "prefetchedMboxes": .integer(Int64(counters.prefetchedMboxes)),
                "clicks": .integer(Int64(counters.clicks)),
            ],
            "notifications": notificationsResult(),
        ]
    }

    private func targetHealth(_ configuration: AgentConfiguration) -> JSONValue {
        let counters = target.counters
        var health: JSONObject = [
            "url": .string(configuration.target.effectiveServerURL),
            "calls": .integer(Int64(counters.upstreamCalls)),
            "errors": .integer(Int64(counters.upstreamErrors)),
            "lastSuccessAtMs": counters.lastSuccessAtMs.map { .integer($0) } ?? .null,
            "lastErrorAtMs": counters.lastErrorAtMs.map { .integer($0) } ?? .null,
            "lastErrorCode": counters.lastErrorCode.map { .string($0) } ?? .null,
            "lastError": counters.lastError.map { .string($0) } ?? .null,
        ]
        for member in circuitMembers(target.circuit) { health[member.key] = member.value }
        return .object(health)
    }

    /// `state` up or down, and while down since when, how many calls in a row got no answer and when the
    /// next probe goes.
    private func circuitMembers(_ breaker: CircuitBreaker?) -> JSONObject {
        guard let circuit = breaker?.state else { return [:] }
        guard let downSince = circuit.downSince else { return ["state": "up"] }
        let time = target.time
        return [
            "state": "down",
            "downSinceMs": .integer(time.epochMilliseconds(at: downSince)),
            "failuresInARow": .integer(Int64(circuit.consecutiveFailures)),
            "nextProbeInMs": circuit.nextProbeAt.map { .integer(max(0, ($0 - time.now()).wholeMilliseconds)) } ?? .null,
        ]
    }

    private func cacheResult() -> JSONValue {
        let cache = target.cache.summary
        let counters = target.counters
        return [
            "entries": .integer(Int64(cache.entries)), "bytes": .integer(Int64(cache.bytes)),
            "budgetBytes": .integer(Int64(cache.budget)), "evictions": .integer(Int64(cache.evictions)),
            "hits": .integer(Int64(counters.hits)), "misses": .integer(Int64(counters.misses)),
        ]
    }

    private func visitorResult() -> JSONValue {
        let visitor = target.visitor.current
        return [
            "sessionAgeMs": .integer(milliseconds(visitor.sessionAge)),
            "tntId": visitor.tntId.map { .string($0) } ?? .null,
            "edgeHost": visitor.edgeHost.map { .string($0) } ?? .null,
            "thirdPartyId": visitor.thirdPartyId.map { .string($0) } ?? .null,
        ]
    }

    private func notificationsResult() -> JSONValue {
        let queue = target.notifications.summary
        return [
            "queued": .integer(Int64(queue.pending + queue.inFlight)),
            "inFlight": .integer(Int64(queue.inFlight)),
            "oldestTimestampMs": queue.oldestTimestampMs.map { .integer($0) } ?? .null,
            "sent": .integer(Int64(queue.counters.sent)),
            "failedAttempts": .integer(Int64(queue.counters.failedAttempts)),
            "droppedOverflow": .integer(Int64(queue.counters.droppedOverflow)),
            "replayedFromJournal": .integer(Int64(queue.counters.replayed)),
            "droppedOptedOut": .integer(Int64(queue.counters.droppedOptedOut)),
            "lastError": queue.counters.lastError.map { .string($0) } ?? .null,
            "lastErrorAtMs": queue.counters.lastErrorAtMs.map { .integer($0) } ?? .null,
            "refused": .integer(Int64(queue.counters.refused)),
            "lastRefusal": queue.counters.lastRefusal.map { .string($0) } ?? .null,
            "lastRefusalAtMs": queue.counters.lastRefusalAtMs.map { .integer($0) } ?? .null,
            "journalWriteFailures": .integer(Int64(queue.counters.journalWriteFailures)),
            "journalFailing": .bool(queue.counters.journalFailing),
        ]
    }

    /// The wall time the agent stamps and compares with: the box's clock, or the upstreams' when it is off.
    private func clockResult() -> JSONValue {
        let time = target.time
        let correction = time.correction
        return [
            "nowMs": .integer(time.epochMilliseconds()),
            "boxNowMs": .integer(SystemClock.wallMilliseconds()),
            "source": .string(correction == nil ? "box" : time.isCorrecting ? "upstream" : "box-confirmed"),
            "offsetMs": correction.map { .integer($0.offsetMs) } ?? .null,
        ]
    }

    /// The privacy status in force and who set it (`target.privacy`, `status`).
    private func privacyResult() -> JSONValue {
        [
            "status": .string(target.privacy.rawValue),
            "setBy": .string(target.privacySetByAdmin ? "admin" : "configuration"),
            "configured": .string(runtime.configuration.target.privacy),
        ]
    }

    private func loadsResult() -> JSONValue {
        let counters = target.counters
        return [
            "network": .integer(Int64(counters.networkLoads)),
            "onDevice": .integer(Int64(counters.onDeviceLoads)),
            "defaultsByReason": defaultsByReason(counters),
            "prefetchCommands": .integer(Int64(counters.prefetchCommands)),
        ]
    }

    private func defaultsByReason(_ counters: TargetCounters) -> JSONValue {
        .object(
            JSONObject(
                counters.defaultsByReason.sorted { $0.key < $1.key }.map {
                    (key: $0.key, value: .integer(Int64($0.value)))
                }
            )
        )
    }
}
