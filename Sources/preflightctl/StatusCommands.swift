import ArgumentParser
import Foundation
import PreflightProtocol

struct Ping: AgentCommand {
    static let configuration = CommandConfiguration(abstract: "Check that the agent answers, and how fast.")

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let started = ContinuousClock.now
        let result = try options.call(Command.ping.wireName)
        let elapsed = ContinuousClock.now - started
        if options.json {
            printJSON(result)
        } else {
            let version = result["version"]?.stringValue ?? "?"
            let uptime = result["uptimeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "?"
            print("preflightd \(version) answered in \(formatRoundTrip(elapsed)), up \(uptime)")
        }
    }
}

struct Status: AgentCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the agent, its upstreams' health, the offer cache and the notification queue."
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    func run() throws {
        let result = try options.call(Command.status.wireName)
        if options.json {
            printJSON(result)
            return
        }
        // The agent's time: right even on a box whose clock is not set, where the agent's times are Adobe's.
        let agentNow = result["clock"]?["nowMs"]?.doubleValue.map { Date(timeIntervalSince1970: $0 / 1000) } ?? Date()
        var rows: [(String, String)] = []
        rows.append(("Version", result["version"]?.stringValue ?? "?"))
        rows.append(("PID", result["pid"].map(displayValue) ?? "?"))
        rows.append(("Uptime", result["uptimeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "?"))
        rows.append(("Config file", result["configFile"].map(displayValue) ?? "-"))
        if let offset = result["clock"]?["offsetMs"]?.doubleValue, let summary = clockOffsetSummary(offsetMs: offset) {
            rows.append(("Box clock", "\(summary); the agent stamps and compares with Adobe's time (Date headers)"))
        }
        for role in ["app", "admin", "events"] {
            rows.append(("Endpoint \(role)", result["endpoints"]?[role]?.stringValue ?? "?"))
        }
        for upstream in ["target", "pass"] {
            rows.append(("Upstream \(upstream)", upstreamHealth(result["upstreams"]?[upstream], now: agentNow)))
        }
        if let target = result["target"] {
            let cache = target["cache"]
            rows.append(
                (
                    "Offers cached",
                    "\(counted(cache?["entries"], "entry", plural: "entries")), "
                        + "\(bytes(cache?["bytes"])) of \(bytes(cache?["budgetBytes"])), "
                        + "\(counted(cache?["hits"], "hit")), \(counted(cache?["misses"], "miss", plural: "misses")), "
                        + "\(number(cache?["evictions"])) evicted"
                )
            )
            rows.append(("Defaults served", defaultsSummary(target["loads"]?["defaultsByReason"])))
            if let preview = previewSummary(target["preview"]) {
                rows.append(("Target preview", "\(preview): every app gets Target's QA mode offers"))
            }
            let visitor = target["visitor"]
            let session = visitor?["sessionAgeMs"]?.doubleValue.map { formatDuration(milliseconds: $0) } ?? "-"
            rows.append(
                (
                    "Target visitor",
                    "tntId \(visitor?["tntId"].map(displayValue) ?? "-"), "
                        + "edge \(visitor?["edgeHost"].map(displayValue) ?? "-"), session \(session) old"
                )
            )
            rows.append(("Notifications", notificationsSummary(target["notifications"], now: agentNow)))
            if let privacy = target["privacy"]?["status"]?.stringValue, privacy != "optedIn" {
                let setBy = target["privacy"]?["setBy"]?.stringValue ?? "?"
                let held = privacy == "unknown" ? "; notifications held until optedIn" : ""
                rows.append(("Target privacy", "\(privacy) (set by \(setBy)): nothing is sent to Target\(held)"))
            }
            if let artifact = target["artifact"], let method = artifact["decisioningMethod"]?.stringValue,
                method != "server-side"
            {
                rows.append(("Target rules", artifactSummary(artifact, method: method, now: agentNow)))
            }
            if let geo = target["geo"], geo.objectValue != nil {
                rows.append(("Target location", geoSummary(geo, now: agentNow)))
            }
        }
        if let pass = result["pass"], pass.objectValue != nil {
            rows.append(
                (
                    "Adobe Pass",
                    "registration \(pass["registration"].map(displayValue) ?? "-"), "
                        + "access token \(pass["accessToken"].map(displayValue) ?? "-")"
                )
            )
            let requestors = requestorEntries(pass["requestors"])
            if requestors.isEmpty {
                rows.append(("Requestors", "none configured (\(PassConfigurationKey.requestors.path))"))
            }
            for (name, requestor) in requestors {
                rows.append(("Requestor \(name)", requestorSummary(requestor)))
            }
        }
        if let ipc = result["ipc"] {
            rows.append(("Requests", number(ipc["requests"])))
            rows.append(("In flight", number(ipc["inFlight"])))
        }
        printRows(rows)
    }
}

/// "https://acme.tt.omtrdc.net  ok, last success 3m ago" or "...  FAILING: timeout 12s ago (detail)".
/// Ages are measured against `now`: the agent's time in `status` (its `clock.nowMs`, right even when the
/// box's clock is not), else this process's clock.
func upstreamHealth(_ health: JSONValue?, now: Date = Date()) -> String {
    var text = health?["url"]?.stringValue ?? "?"
    if health?["state"]?.stringValue == "down" {
        text += "  DOWN"
        if let since = health?["downSinceMs"]?.doubleValue { text += " since \(age(sinceEpochMs: since, now: now))" }
        text += " (\(number(health?["failuresInARow"])) calls in a row got no answer"
        if let probe = health?["nextProbeInMs"]?.doubleValue {
            text += "; next probe in \(formatDuration(milliseconds: probe))"
        }
        return text + "; calls are answered without it)"
    }
    let success = health?["lastSuccessAtMs"]?.doubleValue
    let failure = health?["lastErrorAtMs"]?.doubleValue
    switch (success, failure) {
    case (nil, nil):
        text += "  (no calls yet)"
    case (let success?, nil):
        text += "  ok, last success \(age(sinceEpochMs: success, now: now))"
    case (let success?, let failure?) where success >= failure:
        text +=
            "  ok, last success \(age(sinceEpochMs: success, now: now)), last error \(age(sinceEpochMs: failure, now: now))"
    default:
        let code = health?["lastErrorCode"]?.stringValue ?? "error"
        text += "  FAILING: \(code) \(age(sinceEpochMs: failure ?? 0, now: now))"
        if let detail = health?["lastError"]?.stringValue { text += " (\(detail))" }
    }
    if let calls = health?["calls"], success != nil || failure != nil {
        text += "; \(counted(calls, "call")), \(counted(health?["errors"], "error"))"
    }
    return text
}

/// "none" or "noContent 1, timeout 3".
func defaultsSummary(_ reasons: JSONValue?) -> String {
    guard let reasons = reasons?.objectValue, !reasons.isEmpty else { return "none" }
    return reasons.map { "\($0.key) \(displayValue($0.value))" }.joined(separator: ", ")
}

/// "on-device: version 1.0.0, 12 rules, generated 2026-02-01T00:00:00Z, downloaded 4m ago (network);
/// last fetch notModified 4m ago" or "on-device: none yet; last fetch networkError 3s ago (detail)"; either with
/// "; not fetched: Target privacy is unknown" while the box is not opted in.
func artifactSummary(_ artifact: JSONValue, method: String, now: Date = Date()) -> String {
    var text = "\(method): "
    if let version = artifact["version"]?.stringValue {
        text += "version \(version), \(counted(artifact["rules"], "rule"))"
        if let generated = artifact["generatedAt"]?.stringValue { text += ", generated \(generated)" }
        if let age = artifact["ageMs"]?.doubleValue {
            text += ", downloaded \(formatDuration(milliseconds: age)) ago"
        }
        text += " (\(artifact["source"].map(displayValue) ?? "-"))"
    } else {
        text += "no rules yet"
    }
    if let result = artifact["lastFetchResult"]?.stringValue {
        text += "; last fetch \(result)"
        if let at = artifact["lastFetchAtMs"]?.doubleValue { text += " \(age(sinceEpochMs: at, now: now))" }
        if let error = artifact["lastFetchError"]?.stringValue { text += " (\(error))" }
    }
    if let reason = artifact["skipped"]?.stringValue { text += "; not fetched: \(reason)" }
    return text
}

/// Where Target's geo service placed the box, as geo-targeted rules decided on the box see it:
/// "SAN FRANCISCO, CA, US (37.75, -122.4), located 4m ago (network)", "unknown (rules do not target by
/// geo)", or either with "; last lookup failed 3s ago (HTTP 503)" or "; not looked up: Target privacy is unknown".
func geoSummary(_ geo: JSONValue, now: Date = Date()) -> String {
    let place = ["city", "regionCode", "countryCode"].compactMap { geo[$0]?.stringValue }
    var text: String
    if place.isEmpty {
        text = "unknown"
    } else {
        text = place.joined(separator: ", ")
        if let latitude = geo["latitude"]?.doubleValue, let longitude = geo["longitude"]?.doubleValue {
            text += " (\(displayValue(.number(latitude))), \(displayValue(.number(longitude))))"
        }
        if let at = geo["fetchedAtMs"]?.doubleValue { text += ", located \(age(sinceEpochMs: at, now: now))" }
        if let source = geo["source"]?.stringValue { text += " (\(source))" }
    }
    if geo["targetsByGeo"] != .bool(true) { text += " (rules do not target by geo)" }
    if let error = geo["lastFetchError"]?.stringValue {
        text += "; last lookup failed"
        if let at = geo["lastFetchAtMs"]?.doubleValue { text += " \(age(sinceEpochMs: at, now: now))" }
        text += " (\(error))"
    }
    if let reason = geo["skipped"]?.stringValue { text += "; not looked up: \(reason)" }
    return text
}

/// "1 queued (oldest 4s ago), 4 sent, last error: HTTP 503 (3s ago)".
func notificationsSummary(_ queue: JSONValue?, now: Date = Date()) -> String {
    var text = "\(number(queue?["queued"])) queued"
    if let oldest = queue?["oldestTimestampMs"]?.doubleValue {
        text += " (oldest \(age(sinceEpochMs: oldest, now: now)))"
    }
    text += ", \(number(queue?["sent"])) sent"
    if let refused = queue?["refused"]?.doubleValue, refused > 0 {
        text += ", \(number(queue?["refused"])) refused by Target"
    }
    if let error = queue?["lastError"]?.stringValue {
        text += ", last error: \(error)"
        if let at = queue?["lastErrorAtMs"]?.doubleValue { text += " (\(age(sinceEpochMs: at, now: now)))" }
    }
    return text
}

struct Stats: AgentCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show request latency per command, upstream latency, the offer hit ratio and defaults served.",
        discussion: """
            Latencies are nearest-rank percentiles over each command's most recent 2,048 replies, measured in \
            the agent from a request's arrival to its reply. Counters run from the agent's start or the last \
            --reset.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Flag(name: .long, help: "Reset the counters after reading them.")
    var reset = false

    func run() throws {
        let result = try options.call(Command.stats.wireName, args: reset ? ["reset": true] : nil)
        if options.json {
            printJSON(result)
            return
        }
        if let commands = result["commands"]?.objectValue, !commands.isEmpty {
            var table = TextTable([
                .left("COMMAND"), .right("COUNT"), .right("P50"), .right("P90"), .right("P99"), .left("ERRORS"),
            ])
            for (name, entry) in commands {
                let errors = entry["errors"]?.objectValue.map { errors in
                    errors.map { "\($0.key) \(displayValue($0.value))" }.joined(separator: ", ")
                }
                table.append([
                    name, number(entry["count"]), latency(entry["p50Ms"]), latency(entry["p90Ms"]),
                    latency(entry["p99Ms"]), errors.flatMap { $0.isEmpty ? nil : $0 } ?? "-",
                ])
            }
            table.print()
        } else {
            print("No requests since the agent started or the counters were reset.")
        }
        print()
        var rows: [(String, String)] = []
        for (name, upstream) in result["upstreams"]?.objectValue ?? JSONObject() {
            var text = "\(counted(upstream["calls"], "call")), \(counted(upstream["errors"], "error"))"
            let latencies = upstream["latency"]
            if latencies?["p50Ms"] != nil {
                text += "; latency p50 \(latency(latencies?["p50Ms"])), p90 \(latency(latencies?["p90Ms"])), "
                text += "p99 \(latency(latencies?["p99Ms"]))"
            }
            rows.append(("Upstream \(name)", text))
        }
        let offers = result["offers"]
        let lookups = "\(counted(offers?["hits"], "hit")), \(counted(offers?["misses"], "miss", plural: "misses"))"
        rows.append(
            (
                "Offer hit ratio",
                offers?["hitRatio"]?.doubleValue == nil
                    ? "- (no offer loads yet)" : "\(percent(offers?["hitRatio"])) (\(lookups))"
            )
        )
        rows.append(("Evictions", number(offers?["evictions"])))
        rows.append(("Network loads", number(offers?["networkLoads"])))
        rows.append(("On-device loads", number(offers?["onDeviceLoads"])))
        rows.append(("Defaults served", defaultsSummary(offers?["defaultsByReason"])))
        rows.append(
            (
                "Prefetches",
                "\(counted(offers?["prefetchCommands"], "command")), \(counted(offers?["prefetchedMboxes"], "mbox", plural: "mboxes"))"
            )
        )
        if let queue = result["notifications"] {
            rows.append(("Notifications", notificationsSummary(queue)))
        }
        printRows(rows)
        if reset { print("\nCounters reset.") }
    }
}

/// The requestors of a Pass result, by id: an object keyed by requestor id, or an array of objects naming
/// theirs in `requestor`, `id` or `name`.
func requestorEntries(_ value: JSONValue?) -> [(String, JSONValue)] {
    if let object = value?.objectValue {
        return object.map { ($0.key, $0.value) }
    }
    return (value?.arrayValue ?? []).enumerated().map { index, requestor in
        let name = ["requestor", "id", "name"].lazy.compactMap { requestor[$0]?.stringValue }.first
        return (name ?? String(index + 1), requestor)
    }
}

/// "configuration configured, session authenticated (mvpd Comcast), cachedDecisions 2": a requestor's
/// scalar fields and the `state` of its nested objects.
func requestorSummary(_ requestor: JSONValue) -> String {
    var parts: [String] = []
    for (key, value) in requestor.objectValue ?? JSONObject() {
        switch value {
        case .object(let nested):
            guard let state = nested["state"] else { continue }
            var part = "\(words(key)) \(displayValue(state))"
            if let mvpd = nested["mvpd"]?.stringValue { part += " (mvpd \(mvpd))" }
            parts.append(part)
        case .array: continue
        default: parts.append("\(words(key)) \(displayScalar(value, key: key))")
        }
    }
    return parts.isEmpty ? "-" : parts.joined(separator: ", ")
}
