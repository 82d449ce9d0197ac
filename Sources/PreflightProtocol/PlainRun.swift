/// How far a run of bytes goes before one that a JSON string must escape: a control character, `"` or `\`.
/// The JSON writer copies such a run as it is.
///
/// Eight bytes at a time (the bit tricks of "Bit Twiddling Hacks", `haszero` and `hasless`): a word with
/// none of those bytes is passed in about a dozen instructions, where the byte loop took about ten per byte
/// (a 36-character id, the commonest string the agent writes, was some 400 instructions). In a word that has
/// one, the lowest flag says which byte it is (a borrow only reaches a higher byte), so the answer is exact;
/// only the last few bytes of the buffer, less than a word, are looked at one by one.
///
/// The request scanners (`FastScanner.rawString`) come here with `ascii` (a byte of 0x80 or more ends the run
/// too). An earlier version looked at the word that had a special byte again byte by byte, and cost a 2-byte
/// key 55 instructions against a byte loop's 29; the scanners kept their byte loop then.
@usableFromInline
enum PlainRun {
    @usableFromInline static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first special byte at or after `start`, or `bytes.count`; with `ascii`, a byte of 0x80
    /// or more is special too.
    @inlinable
    static func end(of bytes: UnsafeBufferPointer<UInt8>, from start: Int, ascii: Bool = false) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var index = start
        let count = bytes.count
        while index + 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            // A byte below 0x20 (a byte of 0x80 or more clears its own flag), `"`, `\`: any flag means one is
            // there (a borrow only reaches a higher byte from a lower one that is flagged itself).
            var flags = (word &- ones &* 0x20) & ~word
            let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            flags |= (quotes &- ones) & ~quotes
            flags |= (backslashes &- ones) & ~backslashes
            if ascii { flags |= word }
            flags &= highs
            // The lowest flag is exact (no borrow reaches it from below): the first special byte.
            if flags != 0 { return index + flags.trailingZeroBitCount / 8 }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (ascii && byte >= 0x80) {
                return index
            }
            index += 1
        }
        return count
    }
}
