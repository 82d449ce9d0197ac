/// The protocol version this code speaks (`"v": 1`).
public let protocolVersion: Int64 = 1

/// Default limit on a request body, in bytes (PROTOCOL.md: 1 MiB).
public let defaultMaxBodyBytes = 1 << 20

/// A request whose envelope has been read: version checked, `id` and `cmd` present.
/// `args` is still raw JSON; `Command.decode` turns it into typed, validated arguments.
public struct Request: Sendable, Hashable {
    public var id: String
    public var command: String
    public var args: JSONObject?

    /// The longest `id` a request may carry, in characters (PROTOCOL.md).
    public static let maxIDLength = 128

    public init(id: String, command: String, args: JSONObject? = nil) {
        self.id = id
        self.command = command
        self.args = args
    }

    /// Reads and checks a request envelope. On failure the error carries the request's `id` when one
    /// could be read, so that the reply can still be correlated.
    public static func decode(
        _ body: [UInt8],
        maxBodyBytes: Int = defaultMaxBodyBytes
    ) -> Result<Request, RequestFailure> {
        guard body.count <= maxBodyBytes else {
            return .failure(
                RequestFailure(
                    id: nil,
                    error: ProtocolError(
                        code: .payloadTooLarge,
                        message: "request body is \(body.count) bytes; the limit is \(maxBodyBytes)"
                    )
                )
            )
        }
        guard !body.isEmpty else {
            return .failure(RequestFailure(id: nil, error: .malformed("empty body; expected a JSON object")))
        }
        let value: JSONValue
        do {
            value = try JSONReader.read(body)
        } catch {
            return .failure(RequestFailure(id: nil, error: .malformed("body is not valid JSON: \(error)")))
        }
        guard case .object(let object) = value else {
            return .failure(
                RequestFailure(id: nil, error: .malformed("body must be a JSON object, got \(value.typeName)"))
            )
        }
        // The id is read first so that every later error can be correlated by the client.
        let id: String
        switch object["id"] {
        // Counting scalars walks the string; a UTF-8 length within the limit already proves it.
        case .string(let text)
        where !text.isEmpty
            && (text.utf8.count <= Request.maxIDLength || text.unicodeScalars.count <= Request.maxIDLength):
            id = text
        case .string:
            return .failure(
                RequestFailure(id: nil, error: .malformed("id must be 1 to \(Request.maxIDLength) characters"))
            )
        case nil:
            return .failure(RequestFailure(id: nil, error: .malformed("missing id")))
        case let other?:
            return .failure(RequestFailure(id: nil, error: .malformed("id must be a string, got \(other.typeName)")))
        }
        switch object["v"] {
        case .integer(protocolVersion):
            break
        case .integer(let version):
            return .failure(
                RequestFailure(
                    id: id,
                    error: ProtocolError(
                        code: .unsupportedVersion,
                        message: "protocol version \(version) is not supported; this agent speaks version 1",
                        field: "v"
                    )
                )
            )
        case nil:
            return .failure(RequestFailure(id: id, error: .malformed("missing v")))
        case let other?:
            return .failure(RequestFailure(id: id, error: .malformed("v must be an integer, got \(other.typeName)")))
        }
        let command: String
        switch object["cmd"] {
        case .string(let text) where !text.isEmpty:
            command = text
        case .string:
            return .failure(RequestFailure(id: id, error: .malformed("cmd must not be empty")))
        case nil:
            return .failure(RequestFailure(id: id, error: .malformed("missing cmd")))
        case let other?:
            return .failure(RequestFailure(id: id, error: .malformed("cmd must be a string, got \(other.typeName)")))
        }
        switch object["args"] {
        case nil, .null:
            return .success(Request(id: id, command: command, args: nil))
        case .object(let args):
            return .success(Request(id: id, command: command, args: args))
        case let other?:
            return .failure(
                RequestFailure(id: id, error: .invalidArgument("args", "args must be an object, got \(other.typeName)"))
            )
        }
    }

    /// The request as bytes (client side).
    public func encoded() -> [UInt8] {
        var object: JSONObject = ["v": .integer(protocolVersion), "id": .string(id), "cmd": .string(command)]
        if let args { object["args"] = .object(args) }
        return JSONWriter.encode(.object(object))
    }
}

/// A request that could not be read, with its `id` when one was readable.
public struct RequestFailure: Error, Sendable, Hashable {
    public var id: String?
    public var error: ProtocolError

    public init(id: String?, error: ProtocolError) {
        self.id = id
        self.error = error
    }
}

/// Building and reading reply bodies.
public enum Reply {
    /// `{"v":1,"id":…,"ok":true,"result":…}`
    public static func success(id: String, result: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writeSuccess(id: id, result: result, to: &writer)
        return writer.bytes
    }

    /// `success(id:result:)`, appended to `writer`.
    public static func writeSuccess(id: String, result: JSONValue, to writer: inout JSONWriter) {
        beginSuccess(id: id, in: &writer)
        writer.write(result)
        endSuccess(&writer)
    }

    /// A success reply whose result is already-encoded JSON (a prepared fragment).
    public static func success(id: String, encodedResult: [UInt8]) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: encodedResult.count + 48 + id.utf8.count)
        writeSuccess(id: id, encodedResult: encodedResult, to: &writer)
        return writer.bytes
    }

    /// `success(id:encodedResult:)`, appended to `writer`.
    public static func writeSuccess(id: String, encodedResult: [UInt8], to writer: inout JSONWriter) {
        beginSuccess(id: id, in: &writer)
        writer.writeRaw(encodedResult)
        endSuccess(&writer)
    }

    /// A success reply written in place: the head up to `"result":`, appended to `writer`, for the caller to
    /// append the result to and close with `endSuccess`. The cached path writes its reply this way, straight
    /// into the I/O thread's batch of replies.
    public static func beginSuccess(id: String, in writer: inout JSONWriter) {
        writeHead(&writer, id: id, ok: true)
        writer.appendASCII(resultKey)
    }

    /// `beginSuccess(id:in:)` for an id given as the bytes of its JSON string, which need no escaping (a plain
    /// string read in place: `PlainLoad.id`).
    public static func beginSuccess(plainID: UnsafeBufferPointer<UInt8>, in writer: inout JSONWriter) {
        // One append of the head composed on the stack, not six (each about 110 instructions).
        writer.appendComposed(capacity: 64 + plainID.count) { head in
            head.put(headStart)
            head.put(UInt8(ascii: "\""))
            head.put(plainID)
            head.put(UInt8(ascii: "\""))
            head.put(headSucceeded)
            head.put(resultKey)
        }
    }

    /// Closes a reply begun with `beginSuccess` after its result was appended.
    public static func endSuccess(_ writer: inout JSONWriter) {
        writer.appendASCII("}")
    }

    /// `{"v":1,"id":…,"ok":false,"error":{…}}`; `id` is `null` when the request had none readable.
    public static func failure(id: String?, error: ProtocolError) -> [UInt8] {
        var writer = JSONWriter()
        writeFailure(id: id, error: error, to: &writer)
        return writer.bytes
    }

    /// `failure(id:error:)`, appended to `writer`.
    public static func writeFailure(id: String?, error: ProtocolError, to writer: inout JSONWriter) {
        writeHead(&writer, id: id, ok: false)
        writer.appendASCII(",\"error\":")
        writer.write(error.json)
        writer.appendASCII("}")
    }

    private static func writeHead(_ writer: inout JSONWriter, id: String?, ok: Bool) {
        writer.appendASCII(headStart)
        if let id {
            writer.writeString(id)
        } else {
            writer.appendASCII("null")
        }
        writer.appendASCII(ok ? headSucceeded : headFailed)
    }

    /// The pieces of a reply's head: `{"v":1,"id":…,"ok":…`, then `,"result":` or `,"error":`.
    private static let headStart: StaticString = "{\"v\":1,\"id\":"
    private static let headSucceeded: StaticString = ",\"ok\":true"
    private static let headFailed: StaticString = ",\"ok\":false"
    private static let resultKey: StaticString = ",\"result\":"

    /// A reply as a client reads it.
    public struct Decoded: Sendable, Hashable {
        public var id: String?
        public var outcome: Result<JSONValue, ProtocolError>
    }

    /// Reads a reply body (client side). Throws when the body is not a reply of this protocol.
    public static func decode(_ body: [UInt8]) throws(ProtocolError) -> Decoded {
        let value: JSONValue
        do {
            value = try JSONReader.read(body)
        } catch {
            throw .malformed("reply is not valid JSON: \(error)")
        }
        guard case .object(let object) = value, case .bool(let ok)? = object["ok"] else {
            throw .malformed("reply is not a protocol reply object")
        }
        let id = object["id"]?.stringValue
        if ok {
            return Decoded(id: id, outcome: .success(object["result"] ?? .null))
        }
        guard let errorValue = object["error"], let error = ProtocolError(json: errorValue) else {
            throw .malformed("error reply without a readable error object")
        }
        return Decoded(id: id, outcome: .failure(error))
    }
}

/// The version of Preflight (agent, CLI and client library ship together).
public let preflightVersion = "0.1.0"
