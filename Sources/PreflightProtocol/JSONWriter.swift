/// Writes JSON straight into a byte buffer: compact, members in order, strings escaped per RFC 8259.
///
/// Written by hand for the same reason as `JSONReader`: the reply path appends prepared bytes
/// (for example a cached offer's content, encoded once when it was cached) without re-encoding them.
///
/// The small appending methods are `@inlinable`: callers in other modules (the cached-load reply,
/// display notifications) then copy their constant fragments without a call per fragment, which
/// tools/bench --profile showed costing about 190 instructions each.
public struct JSONWriter: Sendable {
    /// The JSON written so far. Settable so that `@inlinable` methods can append to it.
    public var bytes: [UInt8]

    @inlinable
    public init(reservingCapacity capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Encodes one value to bytes.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        return writer.bytes
    }

    /// Encodes one value to a String (for logs, events and tests).
    public static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: appendASCII("null")
        case .bool(let flag): appendASCII(flag ? "true" : "false")
        case .integer(let number): writeInteger(number)
        case .number(let number): writeNumber(number)
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (offset, member) in object.members.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends bytes that are already valid JSON (a prepared fragment). Borrowed, and appended from its buffer: given
    /// as an owned array, a cached offer's prepared result was retained by the caller and released inside `append`
    /// on every cached load (about 2% of the I/O thread's cycles in a flood, `perf record`).
    @inlinable
    public mutating func writeRaw(_ fragment: borrowing [UInt8]) {
        fragment.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
    }

    /// `writeRaw` for part of an encoded value's bytes.
    @inlinable
    public mutating func writeRaw(_ fragment: ArraySlice<UInt8>) {
        bytes.append(contentsOf: fragment)
    }

    /// Appends ASCII punctuation or a known-safe literal, unescaped.
    ///
    /// The only overload for literals: beside a `String` overload of the same name, a literal binds to
    /// `String` (its default type), and `append(contentsOf: text.utf8)` cost about 170 instructions per
    /// call against a plain copy here (tools/bench --profile found three in every reply's head).
    ///
    /// Up to four bytes (a brace, a comma, `":"`) are appended one by one: `append(contentsOf:)` costs about 110
    /// instructions however short, an element about 15. The literal's length is known where this is inlined,
    /// so the choice costs nothing.
    @inlinable
    public mutating func appendASCII(_ text: StaticString) {
        text.withUTF8Buffer { literal in
            if literal.count <= 4 {
                for byte in literal { bytes.append(byte) }
            } else {
                bytes.append(contentsOf: literal)
            }
        }
    }

    /// Appends a string known to need no escaping (digits, a generated id), unescaped.
    @inlinable
    public mutating func appendUnescaped(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private mutating func writeNumber(_ number: Double) {
        guard number.isFinite else {
            // JSON has no NaN or infinity; null is the conventional stand-in.
            appendASCII("null")
            return
        }
        if number == number.rounded(), abs(number) < 1e15 {
            // Keep the fraction so the value reads back as a number, not an integer (a round trip must
            // not change a value's kind; found by tools/fuzz).
            appendUnescaped(String(Int64(number)))
            appendASCII(".0")
        } else {
            appendUnescaped(String(number))
        }
    }

    /// Decimal digits straight into the buffer, without an intermediate String.
    @inlinable
    public mutating func writeInteger(_ number: Int64) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: a sign and 19 digits fit
        withUnsafeMutableBytes(of: &scratch) { scratch in
            let count = Self.writeDigits(number, to: scratch.baseAddress!.assumingMemoryBound(to: UInt8.self))
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<count]))
        }
    }

    /// Writes a run of short pieces at a `ByteCursor` (room for at most `capacity` bytes) and appends them in
    /// one copy. Each `append(contentsOf:)` costs about 110 instructions however short (its checks, the
    /// copy's call): the six pieces of a cached reply's head cost 680 appended one by one (tools/bench
    /// --profile). Up to 1 KiB, the pieces are composed on the stack.
    @inlinable
    public mutating func appendComposed(capacity: Int, _ write: (inout ByteCursor) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { scratch in
            var cursor = ByteCursor(scratch.baseAddress!)
            write(&cursor)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<cursor.count]))
        }
    }

    /// The most bytes `writeDigits` writes: a sign and 19 digits.
    public static let maxIntegerLength = 20

    /// Writes `number` in decimal at `out` (room for `maxIntegerLength` bytes) and returns how many bytes it
    /// wrote: for a caller that writes a whole item in one buffer (a display notification's timestamp).
    ///
    /// Counts the digits from the number's bit length and writes them in place from the end, two at a time
    /// from a table: a digit at a time through a scratch buffer and a copy cost a 13-digit timestamp about 230
    /// instructions, and counting by a loop over the powers of ten or dividing each pair again about as much.
    @inlinable
    public static func writeDigits(_ number: Int64, to out: UnsafeMutablePointer<UInt8>) -> Int {
        var magnitude = number.magnitude
        let sign = number < 0 ? 1 : 0
        if sign == 1 { out[0] = UInt8(ascii: "-") }
        // floor(log10) from the bit length (1233 / 4096 is just over log10(2)), then one comparison; |Int64.min|
        // has 19 digits, and 10^19 still fits a UInt64.
        let bits = UInt64.bitWidth - magnitude.leadingZeroBitCount
        let estimate = (bits &* 1233) >> 12
        let count = magnitude == 0 ? 1 : estimate + (magnitude < powersOfTen[estimate] ? 0 : 1)
        var end = out + sign + count
        digitPairs.withUnsafeBufferPointer { pairs in
            let table = pairs.baseAddress!
            while magnitude >= 100 {
                let pair = Int(truncatingIfNeeded: magnitude % 100) &* 2
                magnitude /= 100
                end -= 2
                end[0] = table[pair]
                end[1] = table[pair &+ 1]
            }
            if magnitude >= 10 {
                let pair = Int(truncatingIfNeeded: magnitude) &* 2
                end[-2] = table[pair]
                end[-1] = table[pair &+ 1]
            } else {
                end[-1] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude)
            }
        }
        return sign + count
    }

    /// 10^0 through 10^19.
    @usableFromInline
    static let powersOfTen: [UInt64] = (0..<20).reduce(into: []) { powers, index in
        powers.append(index == 0 ? 1 : powers[index - 1] * 10)
    }

    /// The two digits of 0 through 99, in order: `00`, `01`, …, `99`.
    @usableFromInline
    static let digitPairs: [UInt8] = (0..<100).flatMap {
        [UInt8(ascii: "0") + UInt8($0 / 10), UInt8(ascii: "0") + UInt8($0 % 10)]
    }

    @usableFromInline
    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    @inlinable
    public mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Copy runs that need no escaping in one go; most strings are one such run.
            var runStart = 0
            while true {
                let end = PlainRun.end(of: utf8, from: runStart)
                if runStart < end {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<end]))
                }
                guard end < utf8.count else { break }
                writeEscape(utf8[end])
                runStart = end + 1
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    @usableFromInline
    mutating func writeEscape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): appendASCII("\\\"")
        case UInt8(ascii: "\\"): appendASCII("\\\\")
        case 0x0A: appendASCII("\\n")
        case 0x0D: appendASCII("\\r")
        case 0x09: appendASCII("\\t")
        default:
            appendASCII("\\u00")
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0x0F)])
        }
    }
}

/// Writes pieces one after another at a pointer, with no check of room: the caller has counted it. For
/// bytes composed before one append (`JSONWriter.appendComposed`) or written straight into their own
/// object (a display notification's item).
public struct ByteCursor {
    @usableFromInline let base: UnsafeMutablePointer<UInt8>
    /// How many bytes were written.
    public var count: Int { written }
    @usableFromInline var written = 0

    @inlinable
    public init(_ base: UnsafeMutablePointer<UInt8>) {
        self.base = base
    }

    /// Where the next byte goes.
    @inlinable
    public var next: UnsafeMutablePointer<UInt8> { base + written }

    @inlinable
    public mutating func put(_ literal: StaticString) {
        // A literal of one scalar may be held as that scalar, with no bytes to point at.
        guard literal.hasPointerRepresentation else { return literal.withUTF8Buffer { put($0) } }
        next.update(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
        written += literal.utf8CodeUnitCount
    }

    @inlinable
    public mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        if let source = bytes.baseAddress { next.update(from: source, count: bytes.count) }
        written += bytes.count
    }

    @inlinable
    public mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { put($0) }
    }

    @inlinable
    public mutating func put(_ byte: UInt8) {
        base[written] = byte
        written += 1
    }

    /// Moves past `length` bytes written at `next` by someone else (digits, an id).
    @inlinable
    public mutating func skip(_ length: Int) {
        written += length
    }
}

/// The decimal digits of the last number written, kept: a stream of numbers that repeat writes each one's digits
/// once. A flood of cached loads journals one offer's definition and, hundreds of loads a millisecond, one
/// timestamp over and over; a 13-digit timestamp is about 120 instructions to write (`JSONWriter.writeDigits`),
/// and a copy of its digits about 20.
public struct RepeatedDigits: Sendable {
    @usableFromInline var number: Int64 = 0
    /// 0: none written yet.
    @usableFromInline var count = 0
    /// Room for `JSONWriter.maxIntegerLength` bytes.
    @usableFromInline var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)

    public init() {}

    /// Writes `number` in decimal at `out` (room for `JSONWriter.maxIntegerLength` bytes).
    @inlinable
    public mutating func write(_ number: Int64, to out: inout ByteCursor) {
        if count == 0 || number != self.number { keep(number) }
        withUnsafeBytes(of: digits) {
            out.put(UnsafeBufferPointer(start: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
        }
    }

    @usableFromInline
    mutating func keep(_ number: Int64) {
        self.number = number
        count = withUnsafeMutableBytes(of: &digits) {
            JSONWriter.writeDigits(number, to: $0.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
    }
}
