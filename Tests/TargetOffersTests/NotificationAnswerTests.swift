import PreflightProtocol
import Testing
import UpstreamHTTP

@testable import TargetOffers

/// The one-pass reader of Target's answer to notifications: whatever it accepts, the general reader reads
/// the same; what it does not accept, the general reader decides.
@Suite struct NotificationAnswerTests {
    private static let plain = Array(
        """
        {"status":200,"requestId":"r-1","client":"acme","id":{"tntId":"abc.28_0"},\
        "edgeHost":"mboxedge28.tt.omtrdc.net","notifications":[{"id":"n-1"},{"id":"n-2"}]}
        """.utf8
    )

    /// What the one-pass reader makes of `body`, as the sender reads it.
    private func scan(_ body: [UInt8]) -> DeliveryResponse? {
        NotificationAnswer.read(body).map {
            DeliveryResponse(
                tntId: $0.tntId,
                edgeHost: $0.edgeHost,
                prefetched: [],
                executed: [],
                acknowledgedNotificationIds: $0.acknowledged
            )
        }
    }

    /// What the general path makes of `body`: nil when it fails.
    private func general(_ body: [UInt8]) -> DeliveryResponse? {
        guard case .object(let object)? = try? JSONReader.read(body), object["message"] == nil else { return nil }
        return DeliveryResponse.reading(object)
    }

    private func same(_ a: DeliveryResponse, _ b: DeliveryResponse) -> Bool {
        a.tntId == b.tntId && a.edgeHost == b.edgeHost && a.acknowledgedNotificationIds == b.acknowledgedNotificationIds
            && a.prefetched.isEmpty && a.executed.isEmpty && b.prefetched.isEmpty && b.executed.isEmpty
    }

    @Test func readsThePlainAnswerAsTheGeneralReaderDoes() throws {
        let scanned = try #require(scan(Self.plain))
        #expect(scanned.acknowledgedNotificationIds == ["n-1", "n-2"])
        #expect(scanned.tntId == "abc.28_0" && scanned.edgeHost == "mboxedge28.tt.omtrdc.net")
        #expect(same(scanned, try #require(general(Self.plain))))
        // And through decode, as the sender reads it.
        let decoded = try DeliveryResponse.decode(HTTPResponse(status: 200, body: Self.plain))
        #expect(same(decoded, scanned))
    }

    @Test func leavesEverythingElseToTheGeneralReader() {
        for text in [
            #"{"status":200,"prefetch":{"mboxes":[]}}"#,  // work: the general reader's
            #"{"message":"refused"}"#,
            #"{"notifications":[{"id":"a\u0062"}]}"#,  // an escape
            #"{"notifications":[{"id":"é"}]}"#,  // beyond ASCII
            #"{"notifications":[{"id":"a","id":"b"}]}"#,  // a repeated key
            #"{"id":{"tntId":null}}"#,  // another type
            #"{"status":012}"#,  // not JSON
            #"{"status":200} x"#,
            #"{"status":200,}"#,
            #"[]"#,
        ] {
            #expect(scan(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(scan(Array(" { } ".utf8)) != nil)
        #expect(
            scan(Array(#"{"notifications":[{},{"id":"x","trace":"t"}]}"#.utf8))?
                .acknowledgedNotificationIds == ["x"]
        )
    }

    @Test func whatItAcceptsOfAnyMutationTheGeneralReaderReadsTheSame() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]:,"\ 0-.eE1a"#.utf8) + [0x00, 0xC3, 0x7F]
        var accepted = 0
        for _ in 0..<20_000 {
            var body = Self.plain
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<body.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: body[position] = alphabet.randomElement(using: &generator)!
                case 1: body.remove(at: position)
                default: body.insert(alphabet.randomElement(using: &generator)!, at: position)
                }
            }
            guard let scanned = scan(body) else { continue }
            accepted += 1
            guard let read = general(body) else {
                Issue.record("accepted what the general reader refuses: \(String(decoding: body, as: UTF8.self))")
                continue
            }
            #expect(same(scanned, read), "\(String(decoding: body, as: UTF8.self))")
        }
        #expect(accepted > 100)
    }

    /// A batch's answer matched against the ids the request carried reads exactly as the answer read alone, on
    /// the plain answer and on every mutation of it: another order, a subset, an id changed, whitespace.
    @Test func anAnswerMatchedAgainstTheBatchSentReadsAsTheAnswerAlone() throws {
        let batch = (0..<3).map { index in
            DisplayNotification.display(
                of: offer("m\(index)"),
                targeting: MboxTargeting(),
                profileParameters: [],
                timestampMs: 1_800_000_000_000
            )
        }
        func answer(_ ids: [String], separator: String = "") -> [UInt8] {
            let items = ids.map { #"{"id":"\#($0)"}"# }.joined(separator: "," + separator)
            return Array(#"{"status":200,"requestId":"r-1","notifications":[\#(items)]}"#.utf8)
        }
        func read(_ body: [UInt8], sent: [DisplayNotification]) -> DeliveryResponse? {
            try? DeliveryResponse.decode(HTTPResponse(status: 200, body: body), sent: sent.map(QueuedNotification.made))
        }
        let ids = batch.map(\.id)
        let whole = answer(ids)
        #expect(read(whole, sent: batch)?.acknowledgedNotificationIds == AcknowledgedIDs(ids))
        for body in [
            whole, answer(ids.reversed()), answer(Array(ids.prefix(2))), answer(ids + ["extra"]), answer([]),
            answer(ids, separator: " "), answer(["x"] + ids.dropFirst()),
        ] {
            let alone = try #require(read(body, sent: []))
            #expect(read(body, sent: batch).map { same($0, alone) } == true, "\(String(decoding: body, as: UTF8.self))")
        }
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]:,"\ 0-.eE1a"#.utf8) + [0x00, 0xC3, 0x7F]
        for _ in 0..<20_000 {
            var body = whole
            let position = Int.random(in: 0..<body.count, using: &generator)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: body[position] = alphabet.randomElement(using: &generator)!
            case 1: body.remove(at: position)
            default: body.insert(alphabet.randomElement(using: &generator)!, at: position)
            }
            let alone = read(body, sent: [])
            let matched = read(body, sent: batch)
            #expect(
                (alone == nil && matched == nil) || (alone != nil && matched != nil && same(alone!, matched!)),
                "\(String(decoding: body, as: UTF8.self))"
            )
        }
    }
}

/// The confirmed ids kept as bytes: each read back as it was, and compared with a batch's id byte by byte.
@Suite struct AcknowledgedIDsTests {
    @Test func idsAreKeptInOrderAndComparedAsBytes() {
        let ids: AcknowledgedIDs = ["n-1", "", "é-2", "n-10"]
        #expect(Array(ids) == ["n-1", "", "é-2", "n-10"])
        #expect(ids.count == 4)
        #expect(ids.id(at: 0, is: "n-1"))
        #expect(!ids.id(at: 0, is: "n-10") && !ids.id(at: 0, is: "n-") && !ids.id(at: 0, is: "n-2"))
        #expect(ids.id(at: 1, is: "") && !ids.id(at: 1, is: "n"))
        #expect(ids.id(at: 2, is: "é-2") && !ids.id(at: 2, is: "e-2"))
        #expect(ids.id(at: 3, is: "n-10") && !ids.id(at: 3, is: "n-1"))
        #expect(ids == AcknowledgedIDs(["n-1", "", "é-2", "n-10"]))
        #expect(ids != ["n-1", "", "é-2"])
    }
}
