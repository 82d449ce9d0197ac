import Testing

@testable import PreflightProtocol

/// `FastRequest.read` must read what it accepts exactly as the general path does, and leave every
/// other body (errors above all) to the general path.
@Suite struct FastRequestTests {
    /// The in-place comparison of fixed parts, at every length it takes a different way for (bytes, halves, words,
    /// the overlapping last word) and with a difference at every place.
    @Test func fixedPartsAreComparedWholeAtEveryLength() {
        for count in 0...40 {
            let a = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            a.withUnsafeBytes { left in
                var b = a
                b.withUnsafeBytes { right in
                    #expect(
                        FastScanner.equal(
                            left.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                            right.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                            count: count
                        )
                    )
                }
                for place in 0..<count {
                    b = a
                    b[place] ^= 0x20
                    b.withUnsafeBytes { right in
                        #expect(
                            !FastScanner.equal(left.baseAddress!, right.baseAddress!, count: count),
                            "\(count) bytes differing at \(place)"
                        )
                    }
                }
            }
        }
    }

    private let limits = CommandLimits(maxMboxes: 3, maxResources: 3)

    private func fast(_ text: String, maxBodyBytes: Int = 1 << 20) -> FastRequest? {
        FastRequest.read(Array(text.utf8), limits: limits, maxBodyBytes: maxBodyBytes)
    }

    /// What the general path makes of a body, as a FastRequest when it is a valid command.
    private func general(_ body: [UInt8], maxBodyBytes: Int = 1 << 20) -> FastRequest? {
        guard case .success(let request) = Request.decode(body, maxBodyBytes: maxBodyBytes),
            let command = try? AppCommand.decode(request, limits: limits)
        else { return nil }
        return FastRequest(id: request.id, command: command)
    }

    /// What `readPlainLoad` reads of a body, as the request it stands for: one mbox, no parameters.
    private func plain(_ body: [UInt8], maxBodyBytes: Int = 1 << 20) -> FastRequest? {
        body.withUnsafeBufferPointer { buffer in
            FastRequest.readPlainLoad(buffer, limits: limits, maxBodyBytes: maxBodyBytes).map { load in
                func text(_ range: Range<Int>) -> String { String(decoding: buffer[range], as: UTF8.self) }
                let request = LoadRequest(name: text(load.name), defaultContent: text(load.defaultContent))
                return FastRequest(id: text(load.id), command: .loadRequests(LoadRequestsCommand(requests: [request])))
            }
        }
    }

    /// The contract: whatever the fast path accepts, the general path accepts the same way; whatever the plain
    /// load's reader accepts, the fast path does, the same way.
    private func expectAgreement(_ body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let read = FastRequest.read(body, limits: limits, maxBodyBytes: 1 << 20)
        if let plain = plain(body) {
            #expect(plain == read, "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
        }
        guard let read else { return }
        #expect(read == general(body), "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    static let plainBodies = [
        #"{"v":1,"id":"1","cmd":"ping"}"#,
        #" { "v" : 1 , "id" : "p-2" , "cmd" : "ping" , "args" : { } } "#,
        #"{"v":1,"id":"5","cmd":"loadRequests","args":{"requests":[{"name":"logo","defaultContent":"BlueWhale","mboxParameters":{"status":"platinum"}},{"name":"buttonColor","defaultContent":"red"}],"profileParameters":{"age":"20-32"}}}"#,
        #"{"id":"7","cmd":"loadRequests","v":1,"args":{"profileParameters":{},"requests":[{"defaultContent":"<a href=\"x\">\\\/\n\t</a>","name":"m"}]}}"#,
        #"{"v":1,"id":"load-1","cmd":"loadRequests","args":{"requests":[{"name":"bench-offer","defaultContent":"none"}]}}"#,
        #" {"cmd":"loadRequests", "args" : {"requests" : [ {"defaultContent" : "", "name" : "m"} ] } , "id":"~ /DEL\#u{7F}", "v":1}"#,
        #"{"v":1,"id":"6","cmd":"preauthorize","args":{"requestor":"espn","resources":["resource1","resource2","resource3"],"disabledFeatures":["LOCAL_CACHE"]}}"#,
        #"{"v":1,"id":"8","cmd":"preauthorize","args":{"resources":["r"],"requestor":"espn","disabledFeatures":[]}}"#,
        "{\"v\":1,\r\n\t\"id\":\"9\",\"cmd\":\"preauthorize\",\"args\":{\"requestor\":\"a\",\"resources\":[\"r\",\"r\"],"
            + "\"disabledFeatures\":[\"REMOTE_CACHE\",\"LOCAL_CACHE\",\"LOCAL_CACHE\"]}}",
    ]

    @Test(arguments: plainBodies)
    func readsPlainBodiesAsTheGeneralPathDoes(text: String) throws {
        let read = try #require(fast(text))
        #expect(read == general(Array(text.utf8)))
    }

    @Test func readsTheSeedLoadIntoTypedRequests() throws {
        let read = try #require(fast(Self.plainBodies[2]))
        #expect(read.id == "5")
        #expect(read.name.wireName == "loadRequests")
        guard case .loadRequests(let command) = read.command else {
            Issue.record("not a loadRequests: \(read.command)")
            return
        }
        #expect(command.requests.map(\.name) == ["logo", "buttonColor"])
        #expect(command.requests[0].targeting.mboxParameters == [Parameter("status", "platinum")])
        #expect(command.profileParameters == [Parameter("age", "20-32")])
    }

    /// Each of these is either an error the general path must report, or a legal body in a shape the
    /// fast path leaves to it.
    static let leftToTheGeneralPath = [
        "",
        "{}",
        #"{"v":1,"id":"1","cmd":"ping",}"#,
        #"{"v":1,"id":"1","cmd":"ping"} x"#,
        #"{"v":1.0,"id":"1","cmd":"ping"}"#,
        #"{"v":10,"id":"1","cmd":"ping"}"#,
        #"{"v":1,"v":1,"id":"1","cmd":"ping"}"#,
        #"{"v":1,"id":"","cmd":"ping"}"#,
        #"{"v":1,"id":"1","cmd":"ping","args":{"x":1}}"#,
        #"{"v":1,"id":"1","cmd":"ping","args":null}"#,
        #"{"v":1,"id":"1","cmd":"status"}"#,
        #"{"v":1,"id":"1","cmd":"p\u0069ng"}"#,
        #"{"v":1,"id":"1","cmd":"ping","extra":true}"#,
        #"{"v":1,"id":"1","args":{"requests":[{"name":"a","defaultContent":""}]},"cmd":"loadRequests"}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests"}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":""},{"name":"b","defaultContent":""},{"name":"c","defaultContent":""},{"name":"d","defaultContent":""}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"","defaultContent":""}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a"}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"é"}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"\u00e9"}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","mboxParameters":{"orderId":"1"}}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","mboxParameters":{"profile.age":"1"}}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","mboxParameters":{"k":"1","k":"2"}}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","mboxParameters":{"k":1}}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","productParameters":{"id":"1"}}]}}"#,
        #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"","mboxParameters":null}]}}"#,
        #"{"v":1,"id":"1","cmd":"preauthorize","args":{"requestor":"r","resources":[]}}"#,
        #"{"v":1,"id":"1","cmd":"preauthorize","args":{"requestor":"r","resources":["a","b","c","d"]}}"#,
        #"{"v":1,"id":"1","cmd":"preauthorize","args":{"requestor":"r","resources":["a"],"disabledFeatures":["OTHER"]}}"#,
        #"{"v":1,"id":"1","cmd":"preauthorize","args":{"resources":["a"]}}"#,
        "{\"v\":1,\"id\":\"1\",\"cmd\":\"ping\"\u{0}}",
    ]

    @Test(arguments: leftToTheGeneralPath)
    func leavesErrorsAndUnusualShapesToTheGeneralPath(text: String) {
        #expect(fast(text) == nil)
        #expect(plain(Array(text.utf8)) == nil)
    }

    /// The plain loads among the plain bodies are read in place, as the fast path reads them; every other one,
    /// a load with parameters, an escape or two mboxes included, is left to the fast path.
    @Test(arguments: plainBodies)
    func readsAPlainLoadInPlaceAndLeavesEveryOtherBody(text: String) throws {
        let body = Array(text.utf8)
        let read = try #require(fast(text))
        guard case .loadRequests(let command) = read.command, command.requests.count == 1,
            command.requests[0].targeting == MboxTargeting(), command.profileParameters.isEmpty,
            !text.contains("\\")
        else {
            #expect(plain(body) == nil)
            return
        }
        #expect(plain(body) == read)
        #expect(plain(body, maxBodyBytes: body.count - 1) == nil)
    }

    @Test func aPlainLoadsRangesAreItsStringsBytes() throws {
        let body = Array(Self.plainBodies[4].utf8)
        #expect(body.count > 0 && Self.plainBodies[4].contains("bench-offer"))
        let load = try #require(
            body.withUnsafeBufferPointer { FastRequest.readPlainLoad($0, limits: limits, maxBodyBytes: 1 << 20) }
        )
        #expect(String(decoding: body[load.id], as: UTF8.self) == "load-1")
        #expect(String(decoding: body[load.name], as: UTF8.self) == "bench-offer")
        #expect(String(decoding: body[load.defaultContent], as: UTF8.self) == "none")
        let none = CommandLimits(maxMboxes: 0, maxResources: 3)
        #expect(
            body.withUnsafeBufferPointer { FastRequest.readPlainLoad($0, limits: none, maxBodyBytes: 1 << 20) } == nil
        )
    }

    @Test func respectsTheBodyLimit() {
        let body = Self.plainBodies[0]
        #expect(fast(body, maxBodyBytes: body.utf8.count) != nil)
        #expect(fast(body, maxBodyBytes: body.utf8.count - 1) == nil)
    }

    @Test func respectsEveryLengthLimitAtItsEdge() {
        func load(name: String = "m", key: String = "k", value: String = "v") -> String {
            #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"\#(name)","defaultContent":"","mboxParameters":{"\#(key)":"\#(value)"}}]}}"#
        }
        let cases: [(String, String)] = [
            (load(name: String(repeating: "n", count: 250)), load(name: String(repeating: "n", count: 251))),
            (load(key: String(repeating: "k", count: 128)), load(key: String(repeating: "k", count: 129))),
            (load(value: String(repeating: "v", count: 5000)), load(value: String(repeating: "v", count: 5001))),
            (
                #"{"v":1,"id":"\#(String(repeating: "i", count: 128))","cmd":"ping"}"#,
                #"{"v":1,"id":"\#(String(repeating: "i", count: 129))","cmd":"ping"}"#
            ),
        ]
        for (atLimit, beyond) in cases {
            #expect(fast(atLimit) != nil)
            #expect(fast(atLimit) == general(Array(atLimit.utf8)))
            #expect(fast(beyond) == nil)
        }
    }

    /// A byte that ends a string's plain text (a quote, a backslash, a control character, a byte beyond ASCII) is
    /// found at every position of ids of every length up to 40, and every plain byte is let through (DEL and `~`
    /// included). Kept from a word-at-a-time scanner that was measured and taken back out (docs/BENCHMARKS.md).
    @Test func findsWhereAStringsPlainTextEndsAtEveryPosition() {
        func ping(id: [UInt8]) -> [UInt8] {
            Array(#"{"v":1,"id":""#.utf8) + id + Array(#"","cmd":"ping"}"#.utf8)
        }
        // The plain load reads its strings by `rawString`: the first eight bytes one by one, then a word at a time.
        let loadHead = Array(#"{"v":1,"id":""#.utf8)
        func plainLoadID(_ id: [UInt8]) -> [UInt8]? {
            let body =
                loadHead + id
                + Array(#"","cmd":"loadRequests","args":{"requests":[{"name":"m","defaultContent":"d"}]}}"#.utf8)
            return body.withUnsafeBufferPointer { buffer in
                FastRequest.readPlainLoad(buffer, limits: limits, maxBodyBytes: 1 << 20).map { Array(buffer[$0.id]) }
            }
        }
        let plain: [UInt8] = Array(0x20...0x7F).filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        for length in 1...40 {
            let id = (0..<length).map { plain[($0 * 7 + length) % plain.count] }
            #expect(
                FastRequest.read(ping(id: id), limits: limits, maxBodyBytes: 1 << 20)?.id
                    == String(decoding: id, as: UTF8.self)
            )
            #expect(plainLoadID(id) == id)
            for position in 0..<length {
                for refused: [UInt8] in [[0x00], [0x1F], [0x0A], [0x80], [0xC3, 0xA9], [0xFF]] {
                    var changed = id
                    changed.replaceSubrange(position...position, with: refused)
                    #expect(FastRequest.read(ping(id: changed), limits: limits, maxBodyBytes: 1 << 20) == nil)
                    #expect(plainLoadID(changed) == nil)
                }
                var escaped = id
                escaped.replaceSubrange(position...position, with: Array(#"\n"#.utf8))
                let read = FastRequest.read(ping(id: escaped), limits: limits, maxBodyBytes: 1 << 20)
                #expect(read != nil && read == general(ping(id: escaped)))
                #expect(plainLoadID(escaped) == nil)
                var quoted = id
                quoted[position] = UInt8(ascii: "\"")
                expectAgreement(ping(id: quoted))
            }
        }
    }

    /// The load as the clients write it is read with its fixed parts compared whole; on every prefix and one-byte
    /// change of it, what that reads (a load, or no load at all) is what the member-by-member reader reads.
    @Test func theLoadAsClientsWriteItReadsAsMemberByMember() {
        let written = Array(
            #"{"v":1,"id":"load-1","cmd":"loadRequests","args":{"requests":[{"name":"bench-offer","defaultContent":"none"}]}}"#
                .utf8
        )
        var outcomes = (loads: 0, others: 0)
        func check(_ body: [UInt8]) {
            body.withUnsafeBufferPointer { buffer in
                var compared = FastScanner(bytes: buffer, limits: limits)
                var members = FastScanner(bytes: buffer, limits: limits)
                let read = members.plainLoad()
                switch compared.writtenPlainLoad() {
                case .load(let load):
                    outcomes.loads += 1
                    #expect(load == read, "\(String(decoding: body, as: UTF8.self))")
                case .other:
                    outcomes.others += 1
                    #expect(read == nil, "\(String(decoding: body, as: UTF8.self))")
                case .unknown:
                    break
                }
            }
        }
        let replacements: [UInt8] = Array(#"{}[]",:\ 01-tnu"#.utf8) + [0x00, 0x0A, 0x7F, 0xC3, 0xFF]
        for end in 0...written.count { check(Array(written[..<end])) }
        for position in written.indices {
            for replacement in replacements where replacement != written[position] {
                var mutated = written
                mutated[position] = replacement
                check(mutated)
                mutated.insert(replacement, at: position)
                check(mutated)
            }
            var shorter = written
            shorter.remove(at: position)
            check(shorter)
        }
        check(Array(#"{"v":1,"id":"p","cmd":"ping"}"#.utf8))
        #expect(outcomes.loads > 100 && outcomes.others > 10)
    }

    /// A deterministic sweep in the spirit of the fuzzer: every prefix of each plain body, and each
    /// body with every byte replaced by characters that change JSON's meaning.
    @Test func agreesWithTheGeneralPathOnEveryPrefixAndOneByteMutation() {
        let replacements: [UInt8] = Array(#"{}[]",:\ 01-tnu"#.utf8) + [0x00, 0x0A, 0x7F, 0xC3, 0xFF]
        for text in Self.plainBodies {
            let body = Array(text.utf8)
            for end in 0...body.count {
                expectAgreement(Array(body[..<end]))
            }
            for position in body.indices {
                for replacement in replacements where replacement != body[position] {
                    var mutated = body
                    mutated[position] = replacement
                    expectAgreement(mutated)
                }
                var shorter = body
                shorter.remove(at: position)
                expectAgreement(shorter)
            }
        }
    }
}
