#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    public var acknowledged = AcknowledgedIDs()

    /// The answer, when `body` has its plain shape; nil otherwise.
    ///
    /// With `sent`, the notifications the request carried, in order: `sent.count` and, for each index, how many
    /// bytes at the start of the bytes given are that notification's id (nil when they are not). An answer that
    /// confirms exactly those, in that order, each written `{"id":"…"}` as Target writes it, is matched against
    /// them in place: a memory compare per id instead of reading it (about 500 instructions each, the most of
    /// the sender's work per notification; tools/bench --profile). The result is the same either way.
    public static func read(
        _ body: [UInt8],
        sent: (count: Int, idLength: (_ index: Int, _ at: UnsafeBufferPointer<UInt8>) -> Int?)? = nil
    ) -> NotificationAnswer? {
        body.withUnsafeBufferPointer { buffer in
            var scanner = FastScanner(bytes: buffer, limits: CommandLimits())
            return scanner.notificationAnswer(sent: sent)
        }
    }
}

extension FastScanner {
    /// The members Target's answer to notifications has: `status` a number, `edgeHost` a string, `id` an
    /// object of strings, `notifications` an array of them, the others strings.
    private static let answerMembers: [StaticString] = [
        "status", "edgeHost", "id", "notifications", "requestId", "client", "telemetryServerToken",
    ]

    fileprivate mutating func notificationAnswer(
        sent: (count: Int, idLength: (Int, UnsafeBufferPointer<UInt8>) -> Int?)?
    ) -> NotificationAnswer? {
        var answer = NotificationAnswer()
        var seen: UInt8 = 0
        guard take(UInt8(ascii: "{")) else { return nil }
        if !take(UInt8(ascii: "}")) {
            repeat {
                guard let key = rawString(), take(UInt8(ascii: ":")),
                    let member = Self.answerMembers.firstIndex(where: { matches(key, $0) }),
                    seen & (1 << member) == 0
                else { return nil }
                seen |= 1 << member
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
                    if let sent, let ids = acknowledgements(as: sent) {
                        answer.acknowledged = ids
                    } else {
                        guard let ids = acknowledgements() else { return nil }
                        answer.acknowledged = ids
                    }
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
    private mutating func acknowledgements() -> AcknowledgedIDs? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var ids = AcknowledgedIDs()
        if take(UInt8(ascii: "]")) { return ids }
        ids.reserveCapacity(count: 64, bytes: 64 * 36)
        repeat {
            guard let id = flatObject(capturing: "id") else { return nil }
            if let id { ids.append(UnsafeBufferPointer(rebasing: bytes[id])) }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? ids : nil
    }

    /// `[{"id":…},…]` written compactly, each id the one `sent` has at its place: the ids, in order; nil, with
    /// nothing read, for anything else (another shape, another id, whitespace), which `acknowledgements()` then
    /// reads. An id `sent` matches holds no byte a plain string refuses (they are the agent's own, `RandomUUID`'s),
    /// so the two agree.
    private mutating func acknowledgements(
        as sent: (count: Int, idLength: (Int, UnsafeBufferPointer<UInt8>) -> Int?)
    ) -> AcknowledgedIDs? {
        let start = index
        skipWhitespace()
        let opening: StaticString = #"{"id":""#
        var ids = AcknowledgedIDs()
        ids.reserveCapacity(count: sent.count, bytes: sent.count * 36)
        var position = 0
        while position < sent.count {
            guard skip(position == 0 ? UInt8(ascii: "[") : UInt8(ascii: ",")), skip(opening),
                let length = sent.idLength(position, UnsafeBufferPointer(rebasing: bytes[index...])),
                index + length + 2 <= bytes.count, bytes[index + length] == UInt8(ascii: "\""),
                bytes[index + length + 1] == UInt8(ascii: "}")
            else {
                index = start
                return nil
            }
            ids.append(UnsafeBufferPointer(rebasing: bytes[index..<(index + length)]))
            index += length + 2
            position += 1
        }
        guard sent.count > 0, skip(UInt8(ascii: "]")) else {
            index = start
            return nil
        }
        return ids
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

/// The ids of the notifications Target confirmed, in its order, kept as their UTF-8 bytes one after another:
/// a batch's answer is read and matched against the batch without making a `String` per id (about 800
/// instructions each, made and freed, on the sender's path; tools/bench --profile).
public struct AcknowledgedIDs: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    private var utf8: [UInt8] = []
    /// Where each id ends in `utf8`.
    private var ends: [Int] = []

    public init() {}

    public init(_ ids: some Sequence<String>) {
        for id in ids { append(id) }
    }

    public init(arrayLiteral ids: String...) {
        self.init(ids)
    }

    public mutating func reserveCapacity(count: Int, bytes: Int) {
        ends.reserveCapacity(count)
        utf8.reserveCapacity(bytes)
    }

    public mutating func append(_ id: UnsafeBufferPointer<UInt8>) {
        utf8.append(contentsOf: id)
        ends.append(utf8.count)
    }

    public mutating func append(_ id: String) {
        utf8.append(contentsOf: id.utf8)
        ends.append(utf8.count)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { ends.count }

    private func range(_ index: Int) -> Range<Int> {
        (index == 0 ? 0 : ends[index - 1])..<ends[index]
    }

    /// The id at `index`, as a string (made on demand).
    public subscript(index: Int) -> String {
        String(decoding: utf8[range(index)], as: UTF8.self)
    }

    /// Whether the id at `index` is `id`, compared as bytes.
    public func id(at index: Int, is id: String) -> Bool {
        var id = id
        return id.withUTF8 { self.id(at: index, is: $0) }
    }

    /// Whether the id at `index` is the one of UTF-8 bytes `other`.
    public func id(at index: Int, is other: UnsafeBufferPointer<UInt8>) -> Bool {
        let range = range(index)
        guard other.count == range.count else { return false }
        guard let otherBase = other.baseAddress else { return true }
        return utf8.withUnsafeBufferPointer { bytes in
            memcmp(bytes.baseAddress! + range.lowerBound, otherBase, range.count) == 0
        }
    }
}
