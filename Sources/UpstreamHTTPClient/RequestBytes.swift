import NIOCore
import NIOHTTP1
import UpstreamHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A request as the bytes HTTP/1.1 sends: the request line, `Host`, the request's headers, the framing
/// (`Content-Length`) and the body, in one buffer that goes down the pipeline as one write.
///
/// Why not NIO's `HTTPRequestEncoder`: a Delivery call's head, body and end went down the pipeline as three
/// writes, each wrapped, cast back and passed through the outbound header validator and the encoder, which
/// built the head from an `HTTPHeaders` the call had filled first: about 40,000 instructions per call on the
/// event loop, 800 per display notification in batches of 50 (`tools/bench --profile`). Writing a head is the
/// simple half of HTTP/1.1; reading the answer stays NIO's (`HTTPResponseDecoder`, llhttp).
///
/// What the validator refused is refused here too: a method or header name that is not an HTTP token, and a
/// header value with a control character (CR or LF would split the head). There is then no head (`init?`) and
/// the call goes to the general client, which refuses it in its own words.
///
/// The head up to its framing is the same call after call to one upstream (a Delivery call's URL and headers
/// change with the visitor's session, not per batch), so `KeepAliveConnection` keeps the last one made and only
/// the `Content-Length` and the body are written per call.
struct RequestBytes: Sendable {
    let method: String
    let url: String
    let headers: [(name: String, value: String)]
    let target: RequestTarget
    /// The head the response decoder is told of (`ExchangeHandler.start`): only the method, which says whether
    /// an answer has a body (none to HEAD). Made once with the rest of the head.
    let methodHead: HTTPRequestHead
    /// The request line, `Host` and the request's headers, each line ending in CRLF.
    private let head: [UInt8]

    /// The head of `request`; nil for a URL `RequestTarget` does not read, or a method or header holding a byte
    /// HTTP does not allow.
    init?(_ request: HTTPRequest) {
        guard let target = RequestTarget(url: request.url), Self.isToken(request.method) else { return nil }
        var head: [UInt8] = []
        head.append(contentsOf: request.method.utf8)
        head.append(UInt8(ascii: " "))
        head.append(contentsOf: target.pathAndQuery.utf8)
        head.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        head.append(contentsOf: target.origin.hostHeader.utf8)
        head.append(contentsOf: "\r\n".utf8)
        // The framing is `encode`'s: a request's own Content-Length or Transfer-Encoding is not copied.
        for header in request.headers {
            guard Self.isToken(header.name), Self.isFieldValue(header.value) else { return nil }
            guard !Self.isFraming(header.name) else { continue }
            head.append(contentsOf: header.name.utf8)
            head.append(contentsOf: ": ".utf8)
            head.append(contentsOf: header.value.utf8)
            head.append(contentsOf: "\r\n".utf8)
        }
        self.method = request.method
        self.url = request.url
        self.headers = request.headers
        self.target = target
        self.head = head
        self.methodHead = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: "")
    }

    /// Whether `request` has this head (its body aside), byte for byte: `String`'s `==` would take two spellings
    /// of one accented header value for the same, and the head's bytes are one of them.
    func isHead(of request: HTTPRequest) -> Bool {
        // In place and with memcmp: through `utf8.elementsEqual` the comparison cost the sender about 350
        // instructions per display notification (tools/bench --profile).
        func same(_ left: String, _ right: String) -> Bool {
            var left = left
            var right = right
            return left.withUTF8 { left in
                right.withUTF8 { right in
                    left.count == right.count
                        && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
                }
            }
        }
        return same(method, request.method) && same(url, request.url) && headers.count == request.headers.count
            && zip(headers, request.headers).allSatisfy { same($0.name, $1.name) && same($0.value, $1.value) }
    }

    /// The bytes of `request`, whose head this is: the head, `Content-Length` (unless a GET without a body),
    /// the blank line and the body.
    func encode(_ request: HTTPRequest, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: head.count + 32 + request.body.count)
        buffer.writeBytes(head)
        if !request.body.isEmpty || request.method != "GET" {
            buffer.writeStaticString("Content-Length: ")
            buffer.writeString(String(request.body.count))
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        buffer.writeBytes(request.body)
        return buffer
    }

    /// `Content-Length` or `Transfer-Encoding`, in any case.
    private static func isFraming(_ name: String) -> Bool {
        let count = name.utf8.count
        guard count == 14 || count == 17 else { return false }
        let lowered = name.lowercased()
        return lowered == "content-length" || lowered == "transfer-encoding"
    }

    /// RFC 9110's `token`: one or more of ALPHA, DIGIT and ``!#$%&'*+-.^_`|~``.
    static func isToken(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { bytes in
            !bytes.isEmpty
                && bytes.allSatisfy { byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                        UInt8(ascii: "0")...UInt8(ascii: "9"):
                        return true
                    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                        return true
                    default:
                        return false
                    }
                }
        }
    }

    /// RFC 9110's `field-value`: tabs, spaces, visible characters and bytes from 0x80 (what NIO's validator
    /// allows), no other control character.
    static func isFieldValue(_ string: String) -> Bool {
        var string = string
        return string.withUTF8 { bytes in bytes.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) } }
    }
}

/// The handler nearest the socket (after TLS, if any), through which a request's bytes go out: written from its
/// own context, they pass no other handler. The response decoder learns each request's method from
/// `ExchangeHandler` directly (`HTTPDecoder.write(data:)`), since nothing it could observe goes past it.
final class RequestBytesWriter: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Writes and flushes `bytes`; a failure closes the channel (the call waiting then ends).
    func send(_ bytes: ByteBuffer) {
        context?.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
    }
}
