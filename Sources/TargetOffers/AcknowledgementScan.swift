/// Target's answer to a call that carried only notifications, read in one pass without a JSON tree:
/// `{"status":200,"requestId":…,"client":…,"id":{"tntId":…},"edgeHost":…,"notifications":[{"id":…},…]}`.
///
/// The sender reads one such answer per batch of display notifications; as a tree it cost about 2,000
/// instructions per acknowledged notification (tools/bench --profile). This reads exactly that shape and
/// nothing else: any other member, a value of another type, an escape or a byte outside printable ASCII
/// in a string, a repeated key, or anything malformed gives nil, and the general reader
/// (`DeliveryResponse.decode`) reads the body instead, errors included. So whatever this accepts, the
/// general path reads the same (`AcknowledgementScanTests` checks both on every case).
struct AcknowledgementScan {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The response, when `body` has the plain shape of an answer to notifications; nil otherwise.
    static func read(_ body: [UInt8]) -> DeliveryResponse? {
        body.withUnsafeBufferPointer { buffer in
            var scan = AcknowledgementScan(buffer)
            return scan.response()
        }
    }

    private mutating func response() -> DeliveryResponse? {
        var result = DeliveryResponse(
            tntId: nil,
            edgeHost: nil,
            prefetched: [],
            executed: [],
            acknowledgedNotificationIds: []
        )
        let members = [
            "status", "requestId", "client", "telemetryServerToken", "edgeHost", "id", "notifications",
        ]
        var seen = Set<Int>()
        guard take(UInt8(ascii: "{")) else { return nil }
        if !take(UInt8(ascii: "}")) {
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")),
                    let member = members.firstIndex(where: { equals(key, $0) }), seen.insert(member).inserted
                else { return nil }
                switch members[member] {
                case "status":
                    guard number() else { return nil }
                case "edgeHost":
                    guard let host = string() else { return nil }
                    result.edgeHost = text(host)
                case "id":
                    guard let id = flatObject(capturing: "tntId") else { return nil }
                    result.tntId = id.map(text)
                case "notifications":
                    guard let ids = acknowledgements() else { return nil }
                    result.acknowledgedNotificationIds = ids
                default:
                    guard string() != nil else { return nil }
                }
            } while take(UInt8(ascii: ","))
            guard take(UInt8(ascii: "}")) else { return nil }
        }
        skipWhitespace()
        return index == bytes.count ? result : nil
    }

    /// `[{"id":…},…]`: each element an object of strings; the ids in order (an element without one is
    /// skipped, as `DeliveryResponse.reading` skips it).
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

    /// An object of at most eight members whose values are all strings; where the value of `wanted` lies
    /// (`.some(nil)` when absent); nil when it is not such an object. Keys are compared as bytes, kept on
    /// the stack: no string is made but the one wanted.
    private mutating func flatObject(capturing wanted: StaticString) -> Range<Int>?? {
        guard take(UInt8(ascii: "{")) else { return nil }
        if take(UInt8(ascii: "}")) { return .some(nil) }
        return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 8) { keys -> Range<Int>?? in
            var count = 0
            var captured: Range<Int>?
            repeat {
                guard count < keys.count, let key = string(), take(UInt8(ascii: ":")), let value = string() else {
                    return nil
                }
                for earlier in keys[..<count] where bytes[earlier].elementsEqual(bytes[key]) { return nil }
                keys[count] = key
                count += 1
                if equals(key, wanted) { captured = value }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? .some(captured) : nil
        }
    }

    /// Where the content of a string of printable ASCII without escapes lies (nil for anything else, which
    /// the general reader reads).
    private mutating func string() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return start..<(index - 1)
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// The string at `range`: printable ASCII, copied as it is.
    private func text(_ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count) { buffer in
            _ = buffer.initialize(fromContentsOf: bytes[range])
            return range.count
        }
    }

    private func equals(_ range: Range<Int>, _ key: StaticString) -> Bool {
        range.count == key.utf8CodeUnitCount
            && bytes[range].elementsEqual(UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
    }

    private func equals(_ range: Range<Int>, _ key: String) -> Bool {
        range.count == key.utf8.count && bytes[range].elementsEqual(key.utf8)
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

    /// Skips white space, then takes `byte` if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard peek == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipWhitespace() {
        while let byte = peek,
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        {
            index += 1
        }
    }
}
