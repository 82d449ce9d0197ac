import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import UpstreamHTTP

/// The real `HTTPTransport`: AsyncHTTPClient with keep-alive connections, a deadline per request and
/// a cap on how much of a response body the agent will read.
public final class AsyncHTTPClientTransport: HTTPTransport {
    private let client: HTTPClient
    /// Largest response body read; a larger one fails with `bodyTooLarge` rather than filling memory.
    public let maxResponseBytes: Int

    public init(maxResponseBytes: Int = 4 << 20, connectTimeout: Duration = .seconds(5)) {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .milliseconds(connectTimeout.milliseconds)
        configuration.connectionPool.idleTimeout = .seconds(60)
        configuration.httpVersion = .automatic
        configuration.decompression = .disabled
        // No spans: the agent has no tracer, and the default one still cost a task-local scope per call.
        configuration.tracing.tracer = nil
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.maxResponseBytes = maxResponseBytes
    }

    /// Closes pooled connections. Call once, at shutdown.
    public func shutdown() async {
        try? await client.shutdown()
    }

    public func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for header in request.headers {
            outgoing.headers.add(name: header.name, value: header.value)
        }
        if !request.body.isEmpty {
            outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        }
        let deadline = NIODeadline.now() + .milliseconds(request.timeout.milliseconds)
        let maxResponseBytes = request.maxResponseBytes ?? self.maxResponseBytes
        do {
            let response = try await client.execute(outgoing, deadline: deadline)
            let body = try await Self.collect(response.body, upTo: maxResponseBytes, deadline: deadline)
            return HTTPResponse(status: Int(response.status.code), headers: response.headers, body: Array(buffer: body))
        } catch let error as NIOTooManyBytesError {
            throw TransportError(.bodyTooLarge, "response body over \(maxResponseBytes) bytes (\(error))")
        } catch let error as HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                throw TransportError(.timeout, "no complete answer within \(request.timeout)")
            case .cancelled, .alreadyShutdown:
                throw TransportError(.cancelled, "\(error)")
            default:
                throw TransportError(.connection, "\(error)")
            }
        } catch is CancellationError {
            throw TransportError(.cancelled, "cancelled")
        } catch {
            throw TransportError(.connection, "\(error)")
        }
    }

    /// The body, read within the request's deadline. AsyncHTTPClient's deadline ends when the response
    /// head arrives: without this, a body trickling in a byte at a time (slowloris) would hold the call,
    /// its task and its connection for as long as the server likes. Past the deadline the read is
    /// cancelled, which makes AsyncHTTPClient close the connection.
    private static func collect(
        _ body: HTTPClientResponse.Body,
        upTo maxBytes: Int,
        deadline: NIODeadline
    ) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await body.collect(upTo: maxBytes) }
            group.addTask {
                let remaining = deadline - NIODeadline.now()
                if remaining > .zero {
                    try await Task.sleep(for: .nanoseconds(remaining.nanoseconds))
                }
                return nil
            }
            defer { group.cancelAll() }
            guard case .some(.some(let buffer)) = try await group.next() else {
                throw HTTPClientError.deadlineExceeded
            }
            return buffer
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up so a tiny timeout never becomes zero.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
