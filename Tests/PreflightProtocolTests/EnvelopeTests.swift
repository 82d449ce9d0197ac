import Testing

@testable import PreflightProtocol

@Suite struct EnvelopeTests {
    private func failure(_ text: String, limit: Int = defaultMaxBodyBytes) -> RequestFailure? {
        if case .failure(let failure) = Request.decode(Array(text.utf8), maxBodyBytes: limit) { return failure }
        return nil
    }

    @Test func readsAWellFormedRequest() throws {
        let request = try Request.decode(Array(#"{"v":1,"id":"42","cmd":"ping","extra":{"ignored":true}}"#.utf8)).get()
        #expect(request == Request(id: "42", command: "ping"))
    }

    @Test func keepsArgs() throws {
        let request = try Request.decode(Array(#"{"v":1,"id":"1","cmd":"x","args":{"a":"b"}}"#.utf8)).get()
        #expect(request.args == ["a": "b"])
    }

    @Test(arguments: [
        ("not json", ErrorCode.malformedRequest),
        ("[1,2]", .malformedRequest),
        ("", .malformedRequest),
        ("\"text\"", .malformedRequest),
        (#"{"id":"1","cmd":"ping"}"#, .malformedRequest),
        (#"{"v":"1","id":"1","cmd":"ping"}"#, .malformedRequest),
        (#"{"v":1.0,"id":"1","cmd":"ping"}"#, .malformedRequest),
        (#"{"v":1,"cmd":"ping"}"#, .malformedRequest),
        (#"{"v":1,"id":42,"cmd":"ping"}"#, .malformedRequest),
        (#"{"v":1,"id":"","cmd":"ping"}"#, .malformedRequest),
        (#"{"v":1,"id":"1"}"#, .malformedRequest),
        (#"{"v":1,"id":"1","cmd":7}"#, .malformedRequest),
        (#"{"v":2,"id":"1","cmd":"ping"}"#, .unsupportedVersion),
        (#"{"v":1,"id":"1","cmd":"ping","args":[1]}"#, .invalidArgument),
        (#"{"v":1,"id":"1","id":"2","cmd":"ping"}"#, .malformedRequest),
    ])
    func mapsEachMalformedBodyToItsCode(_ body: String, _ code: ErrorCode) {
        #expect(failure(body)?.error.code == code)
    }

    @Test func idIsEchoedWhenReadable() {
        #expect(failure(#"{"v":2,"id":"abc","cmd":"ping"}"#)?.id == "abc")
        #expect(failure(#"{"v":1,"id":"abc"}"#)?.id == "abc")
        #expect(failure("[]")?.id == nil)
    }

    @Test func idLongerThan128CharactersIsRefused() {
        let long = String(repeating: "x", count: 129)
        #expect(failure(#"{"v":1,"id":"\#(long)","cmd":"ping"}"#)?.error.code == .malformedRequest)
        let limit = String(repeating: "é", count: 128)
        #expect(throws: Never.self) { try Request.decode(Array(#"{"v":1,"id":"\#(limit)","cmd":"p"}"#.utf8)).get() }
    }

    @Test func bodyOverTheLimitIsPayloadTooLarge() {
        let body = #"{"v":1,"id":"1","cmd":"ping","pad":"\#(String(repeating: "x", count: 100))"}"#
        #expect(failure(body, limit: 64)?.error.code == .payloadTooLarge)
    }

    @Test func successReplyHasTheDocumentedShape() throws {
        let bytes = Reply.success(id: "42", result: ["version": "1.0.0"])
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"v":1,"id":"42","ok":true,"result":{"version":"1.0.0"}}"#)
    }

    /// The head written from an id's bytes (a plain load read in place) is the head written from its string,
    /// appended after what the writer holds.
    @Test func aHeadFromAPlainIDsBytesIsTheHeadFromItsString() {
        for id in ["1", "load-42", "~ /DEL\u{7F}", String(repeating: "i", count: 128)] {
            var fromString = JSONWriter()
            fromString.appendASCII("before")
            Reply.beginSuccess(id: id, in: &fromString)
            var fromBytes = JSONWriter()
            fromBytes.appendASCII("before")
            Array(id.utf8).withUnsafeBufferPointer { Reply.beginSuccess(plainID: $0, in: &fromBytes) }
            #expect(fromBytes.bytes == fromString.bytes)
            Reply.endSuccess(&fromBytes)
            #expect(
                String(decoding: fromBytes.bytes, as: UTF8.self) == "before"
                    + #"{"v":1,"id":"\#(id)","ok":true,"result":}"#
            )
        }
    }

    @Test func piecesComposedAtACursorAreAppendedInOrder() {
        var writer = JSONWriter()
        writer.appendASCII("[")
        writer.appendComposed(capacity: 32) { cursor in
            cursor.put("ab")
            cursor.put(UInt8(ascii: "c"))
            cursor.put([UInt8(ascii: "d"), UInt8(ascii: "e")])
            Array("fg".utf8).withUnsafeBufferPointer { cursor.put($0) }
            cursor.put(UnsafeBufferPointer(start: nil, count: 0))
            let length = JSONWriter.writeDigits(-12, to: cursor.next)
            cursor.skip(length)
            cursor.put("z")
            #expect(cursor.count == 11)
        }
        writer.appendComposed(capacity: 0) { _ in }
        writer.appendASCII("]")
        writer.appendASCII("}}")
        writer.appendASCII("12345")
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[abcdefg-12z]}}12345")
    }

    /// Kept digits are written again only for the number they were written for: a repeat, a change, a return to
    /// 0 (the kept state's own start), both ends of Int64.
    @Test func repeatedDigitsWriteEachNumbersOwnText() {
        let numbers: [Int64] = [0, 0, 1_800_000_000_000, 1_800_000_000_000, 7, 0, .min, .min, .max, -1, -1, 12]
        var digits = RepeatedDigits()
        var writer = JSONWriter()
        for number in numbers {
            writer.appendComposed(capacity: JSONWriter.maxIntegerLength + 1) { cursor in
                digits.write(number, to: &cursor)
                cursor.put(",")
            }
        }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == numbers.map { "\($0)," }.joined())
    }

    /// Every digit count, both signs and both ends of Int64, against the standard library's own decimal text.
    @Test func integersAreWrittenAsTheirDecimalText() {
        var numbers: [Int64] = [0, 9, 10, 99, 100, 101, 1_760_004_800_123, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            numbers += [power - 1, power, power + 1, -(power - 1), -power, -(power + 1)]
        }
        for number in numbers {
            var writer = JSONWriter()
            writer.writeInteger(number)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(number))
        }
    }

    @Test func errorReplyHasTheDocumentedShape() throws {
        let error = ProtocolError.invalidArgument("requests[1].name", "name is required")
        let text = String(decoding: Reply.failure(id: nil, error: error), as: UTF8.self)
        #expect(
            text == #"{"v":1,"id":null,"ok":false,"error":{"code":"invalid_argument","message":"name is required","#
                + #""field":"requests[1].name","action":"none"}}"#
        )
    }

    @Test func repliesDecodeBackOnTheClientSide() throws {
        let ok = try Reply.decode(Reply.success(id: "7", encodedResult: Array(#"{"a":1}"#.utf8)))
        #expect(ok.id == "7")
        #expect(try ok.outcome.get() == ["a": 1])
        let overloaded = ProtocolError.overloaded(retryAfterMs: 250)
        let failed = try Reply.decode(Reply.failure(id: "8", error: overloaded))
        #expect(failed.outcome == .failure(overloaded))
    }

    @Test func requestEncodesToWhatTheDecoderReads() throws {
        let request = Request(id: "9", command: "prefetch", args: ["mboxes": []])
        #expect(try Request.decode(request.encoded()).get() == request)
    }
}
