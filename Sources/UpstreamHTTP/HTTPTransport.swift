import PreflightCore

/// One HTTP request to an upstream service (Target, Adobe Pass).
public struct HTTPRequest: Sendable, Hashable {
    public var method: String
    /// Absolute URL including the query string, already percent-encoded.
    public var url: String
    /// Header names as sent; several entries may share a name.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The whole exchange (connect, send, headers and body) must finish within this.
    public var timeout: Duration
    /// The largest response body this request may read, when not the transport's own cap (a rules artifact
    /// may be larger than any API answer).
    public var maxResponseBytes: Int?

    public init(
        method: String,
        url: String,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = [],
        timeout: Duration,
        maxResponseBytes: Int? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }

    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.timeout == rhs.timeout
            && lhs.maxResponseBytes == rhs.maxResponseBytes
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(body)
    }
}

/// An upstream's answer: any status, the body read in full (up to the transport's cap).
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}

/// Why no HTTP response was had. A struct over a private enum so that kinds can be added.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The deadline passed (slow connect, slow headers, a body trickling in).
        case timeout
        /// Refused, reset, closed early, unresolvable host, TLS failure.
        case connection
        /// The body was larger than the transport will read.
        case bodyTooLarge
        /// The agent is shutting down or the client was closed.
        case cancelled
        /// Not sent: the upstream is down (several calls in a row got no answer) and this call is not
        /// its probe. See `CircuitBreakingTransport`.
        case upstreamDown
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}

/// Sends HTTP requests upstream. Domain modules depend on this protocol only, so their tests run
/// without sockets; the agent plugs in the AsyncHTTPClient implementation.
public protocol HTTPTransport: Sendable {
    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse
}

/// A transport that teaches `time` the real time from every response's `Date` header: the one place the
/// agent learns it, for Target and Adobe Pass alike.
public struct TimeLearningTransport: HTTPTransport {
    private let inner: any HTTPTransport
    private let time: UpstreamTime

    public init(_ inner: any HTTPTransport, time: UpstreamTime) {
        self.inner = inner
        self.time = time
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let response = try await inner.send(request)
        if let date = response.header("date") {
            time.learn(dateHeader: date, receivedAt: time.now())
        }
        return response
    }
}

/// A transport that refuses calls at once while its upstream is down (`CircuitBreaker`), lets one probe
/// through at a time, and tells the breaker whether each call got an answer. One per upstream service.
public struct CircuitBreakingTransport: HTTPTransport {
    private let inner: any HTTPTransport
    public let breaker: CircuitBreaker

    public init(_ inner: any HTTPTransport, breaker: CircuitBreaker) {
        self.inner = inner
        self.breaker = breaker
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let permission = breaker.permit()
        if permission == .refuse {
            throw TransportError(
                .upstreamDown,
                "\(breaker.service) is not answering; the agent probes it in the background"
            )
        }
        let probe = permission == .probe
        do {
            let response = try await inner.send(request)
            breaker.answered(wasProbe: probe)
            return response
        } catch {
            switch error.kind {
            case .timeout, .connection: breaker.unanswered(wasProbe: probe)
            // A body too large came from a server that answers.
            case .bodyTooLarge: breaker.answered(wasProbe: probe)
            case .cancelled, .upstreamDown: breaker.abandoned(wasProbe: probe)
            }
            throw error
        }
    }
}
