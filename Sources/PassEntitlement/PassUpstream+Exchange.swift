import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import UpstreamHTTP

extension PassUpstream {
    // MARK: Sending

    /// A REST API v2 call: with the current access token, and once more with a new one when Adobe
    /// refuses the token (401 `invalid_access_token_*`).
    func restCall(
        _ operation: PassOperation,
        deadline: MonotonicInstant,
        build: @escaping @Sendable (UpstreamSettings, AccessToken) async -> HTTPRequest
    ) async -> Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure> {
        var refreshed = false
        while true {
            let token: AccessToken
            switch await credentials.accessToken(using: self, deadline: deadline) {
            case .success(let current): token = current
            case .failure(let failure): return .failure(failure)
            }
            let result = await exchange(operation, deadline: deadline) { await build($0, token) }
            if !refreshed, case .success(let exchanged) = result, exchanged.response.status == 401,
                let code = (try? JSONReader.read(exchanged.response.body))?["code"]?.stringValue,
                code.hasPrefix("invalid_access_token")
            {
                refreshed = true
                credentials.invalidate(token)
                report(operation, status: 401, code: code)
                logger.notice(
                    "Adobe Pass refused the access token; getting a new one",
                    metadata: ["operation": "\(operation.rawValue)", "code": "\(code)"]
                )
                continue
            }
            return result
        }
    }

    /// Sends one request: waits for a pacing slot, builds the request from the settings of that moment,
    /// sends it within the deadline, and after a 429 waits (Retry-After, else a growing back-off) and
    /// sends again while the deadline allows.
    func exchange(
        _ operation: PassOperation,
        deadline: MonotonicInstant,
        build: @Sendable (UpstreamSettings) async -> HTTPRequest
    ) async -> Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure> {
        var throttled = 0
        while true {
            // Down, and no probe due: answer at once rather than spend a pacing slot on a refused call.
            if let circuit, circuit.state.isDown, !circuit.probeDue { return .failure(Self.notAnswering) }
            if let failure = await waitForSlot(deadline: deadline) { return .failure(failure) }
            let settings = self.settings.withLock { $0 }
            var request = await build(settings)
            let remaining = deadline - clock.now()
            guard remaining > .zero else {
                return .failure(.networkError("no time left before the answer deadline"))
            }
            request.timeout = min(request.timeout, remaining)
            logger.debug(
                "Adobe Pass request",
                metadata: ["operation": "\(operation.rawValue)", "url": "\(operation.loggable(request.url))"]
            )
            let response: HTTPResponse
            do {
                response = try await transport.send(request)
                health.withLock { $0.calls += 1 }
                if (200..<300).contains(response.status) {
                    let epoch = clock.epochMilliseconds()
                    health.withLock { $0.lastSuccessAtMs = epoch }
                }
            } catch {
                if error.kind == .upstreamDown {
                    // Refused at once: Adobe Pass is down, `upstream.down` said so, and a probe runs.
                    return .failure(Self.notAnswering)
                }
                health.withLock { $0.calls += 1 }
                if error.kind == .cancelled {
                    // The agent is stopping: neither an upstream fault nor worth a warning.
                    logger.debug("Adobe Pass request cancelled", metadata: ["operation": "\(operation.rawValue)"])
                    return .failure(.networkError("\(operation.rawValue) cancelled: the agent is stopping"))
                }
                report(operation, status: 0, code: "network_error")
                logger.warning(
                    "Adobe Pass request failed",
                    metadata: ["operation": "\(operation.rawValue)", "error": "\(error)"]
                )
                let what = error.kind == .timeout ? "no answer within \(request.timeout)" : "\(error.kind.rawValue)"
                return .failure(.networkError("\(operation.rawValue) failed (\(what))"))
            }
            guard response.status == 429 else { return .success((response: response, settings: settings)) }
            throttled += 1
            let wait = min(
                Self.retryAfter(response) ?? Self.throttleBackoff.delay(attempt: throttled),
                Self.longestRetryAfter
            )
            let now = clock.now()
            pacer.withLock { $0.block(until: now + wait) }
            report(operation, status: 429, code: "too_many_requests")
            logger.warning(
                "Adobe Pass is throttling this device; waiting before the next request",
                metadata: ["operation": "\(operation.rawValue)", "waitMs": "\(wait.wholeMilliseconds)"]
            )
            if now + wait > deadline {
                return .failure(
                    .networkError("Adobe Pass throttled \(operation.rawValue) (HTTP 429) past the answer deadline")
                )
            }
        }
    }

    /// The answer while Adobe Pass is down: the network error, at once.
    static let notAnswering = PassFailure.networkError(
        "Adobe Pass is not answering (several calls in a row got no answer); the agent retries it in the background"
    )

    /// Waits for this request's pacing slot; a failure when none comes before the deadline.
    private func waitForSlot(deadline: MonotonicInstant) async -> PassFailure? {
        while true {
            let now = clock.now()
            guard let slot = pacer.withLock({ $0.reserve(now: now, deadline: deadline) }) else {
                return .networkError("the request budget towards Adobe Pass allows no request before the deadline")
            }
            if slot > now {
                do {
                    try await clock.sleep(for: slot - now)
                } catch {
                    return .networkError("cancelled")
                }
            }
            // A 429 that arrived while this request slept moves everyone back.
            if !pacer.withLock({ $0.isBlocked(at: clock.now()) }) { return nil }
        }
    }

    /// A response's meaning: the parsed value on 2xx, Adobe's error on 4xx/5xx with an error body,
    /// `server_response_format_unknown` for anything else.
    func interpret<Value: Sendable>(
        _ exchanged: Result<(response: HTTPResponse, settings: UpstreamSettings), PassFailure>,
        _ operation: PassOperation,
        parse: (JSONValue) -> Value?
    ) -> UpstreamResult<Value> {
        let response: HTTPResponse
        switch exchanged {
        case .failure(let failure): return .failure(failure)
        case .success(let success): response = success.response
        }
        let json = try? JSONReader.read(response.body)
        if (200..<300).contains(response.status) {
            if let json, let value = parse(json) { return .success(value) }
            report(operation, status: response.status, code: "server_response_format_unknown")
            return .failure(
                .serverResponseFormatUnknown(
                    "\(operation.rawValue) answered HTTP \(response.status) with a body that is not the documented JSON"
                )
            )
        }
        if case .object(let object)? = json, object["code"]?.stringValue != nil {
            let status = AdobeStatus(passingThrough: object, httpStatus: response.status)
            report(operation, status: response.status, code: status.code ?? "unknown")
            return .adobeError(status)
        }
        report(operation, status: response.status, code: "server_response_format_unknown")
        return .failure(
            .serverResponseFormatUnknown(
                "\(operation.rawValue) answered HTTP \(response.status) without an Adobe Pass error body"
            )
        )
    }

    func report(_ operation: PassOperation, status: Int, code: String) {
        let epoch = clock.epochMilliseconds()
        health.withLock { health in
            health.errors += 1
            health.lastErrorAtMs = epoch
            health.lastErrorCode = code
            health.lastErrorStatus = status
            health.lastErrorOperation = operation.rawValue
        }
        if status != 0 && status != 429 {
            logger.warning(
                "Adobe Pass answered with an error",
                metadata: ["operation": "\(operation.rawValue)", "status": "\(status)", "code": "\(code)"]
            )
        }
        reportError(operation, status, code)
    }

    /// `Retry-After` in seconds (the form Adobe's edge sends); an HTTP-date is not honoured but backs off.
    static func retryAfter(_ response: HTTPResponse) -> Duration? {
        guard let text = response.header("retry-after"), let seconds = Int(text.filter { !$0.isWhitespace }),
            seconds >= 0
        else { return nil }
        return .seconds(max(1, seconds))
    }

    /// 1 s, 2 s, 4 s … 64 s for 429s without a usable Retry-After.
    static let throttleBackoff = Backoff(base: .seconds(1), doublings: 6)

    /// Longest wait a `Retry-After` may impose; anything longer is taken as this.
    static let longestRetryAfter = Duration.seconds(120)
}
