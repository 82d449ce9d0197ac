/// Target's answer to a Delivery call that carried only notifications, read in one pass without a JSON tree:
/// `{"status":200,"requestId":…,"client":…,"id":{"tntId":…},"edgeHost":…,"notifications":[{"id":…},…]}`.
///
/// The sender reads one such answer per batch of display notifications; as a tree it cost about 2,000
/// instructions per acknowledged notification (tools/bench --profile). `read` knows exactly that shape, with
/// `FastScanner`'s plain strings (printable ASCII, no escapes), and nothing else: any other member, a value of
/// another type, a repeated key, or anything malformed gives nil, and the general reader
/// (`DeliveryResponse.decode`) reads the body instead, errors included. So whatever this accepts, the general
/// path reads the same (a mutation test in TargetOffersTests checks both on every case).
public struct NotificationAnswer: Sendable, Equatable {
    /// `id.tntId`.
    public var tntId: String?
    public var edgeHost: String?
    /// The `id` of each element of `notifications`, in Target's order (an element without one is skipped).
    public var acknowledged: [String] = []

    /// The answer, when `body` has its plain shape; nil otherwise.
    public static func read(_ body: [UInt8]) -> NotificationAnswer? {
        body.withUnsafeBufferPointer { buffer in
            var scanner = FastScanner(bytes: buffer, limits: CommandLimits())
            return scanner.notificationAnswer()
        }
    }
}

extension FastScanner {
    /// The members Target's answer to notifications has: `status` a number, `edgeHost` a string, `id` an
    /// object of strings, `notifications` an array of them, the others strings.
    private static let answerMembers: [StaticString] = [
        "status", "edgeHost", "id", "notifications", "requestId", "client", "telemetryServerToken",
    ]

    fileprivate mutating func notificationAnswer() -> NotificationAnswer? {
        var answer = NotificationAnswer()
        var seen: Set<Int> = []
        guard take(UInt8(ascii: "{")) else { return nil }
        if !take(UInt8(ascii: "}")) {
            repeat {
                guard let key = rawString(), take(UInt8(ascii: ":")),
                    let member = Self.answerMembers.firstIndex(where: { matches(key, $0) }),
                    seen.insert(member).inserted
                else { return nil }
                switch member {
                case 0:
                    guard number() else { return nil }
                case 1:
                    guard let host = rawString() else { return nil }
                    answer.edgeHost = text(host)
                case 2:
                    guard let id = flatObject(capturing: "tntId") else { return nil }
                    answer.tntId = id.map(text)
                case 3:
                    guard let ids = acknowledgements() else { return nil }
                    answer.acknowledged = ids
                default:
                    guard rawString() != nil else { return nil }
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
        }
        skipWhitespace()
        return index == bytes.count ? answer : nil
    }

    /// `[{"id":…},…]`: each element an object of strings; the ids in order.
    private mutating func acknowledgements() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var ids: [String] = []
        if take(UInt8(ascii: "]")) { return ids }
        ids.reserveCapacity(64)
        repeat {
            guard let id = flatObject(capturing: "id") else { return nil }
            if let id { ids.append(text(id)) }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? ids : nil
    }

    /// An object of at most eight members whose values are all plain strings; where the value of `wanted`
    /// lies (`.some(nil)` when absent); nil when it is not such an object. Keys are compared as bytes, kept
    /// on the stack: no string is made but the one wanted.
    private mutating func flatObject(capturing wanted: StaticString) -> Range<Int>?? {
        guard take(UInt8(ascii: "{")) else { return nil }
        if take(UInt8(ascii: "}")) { return .some(nil) }
        return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 8) { keys -> Range<Int>?? in
            var count = 0
            var captured: Range<Int>?
            repeat {
                guard count < keys.count, let key = rawString(), take(UInt8(ascii: ":")), let value = rawString()
                else { return nil }
                for earlier in keys[..<count] where bytes[earlier].elementsEqual(bytes[key]) { return nil }
                keys[count] = key
                count += 1
                if matches(key, wanted) { captured = value }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? .some(captured) : nil
        }
    }

    /// The plain string at `range`, copied as it is.
    private func text(_ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count) { buffer in
            _ = buffer.initialize(fromContentsOf: bytes[range])
            return range.count
        }
    }

    /// A JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func number() -> Bool {
        skipWhitespace()
        if peek == UInt8(ascii: "-") { index += 1 }
        if peek == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() else { return false }
        }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard digits() else { return false }
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard digits() else { return false }
        }
        return true
    }

    private mutating func digits() -> Bool {
        let start = index
        while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index > start
    }

    private var peek: UInt8? {
        index < bytes.count ? bytes[index] : nil
    }
}
