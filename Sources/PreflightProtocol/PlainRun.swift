/// How far a run of bytes goes before one that JSON text must treat specially: a control character, `"`
/// or `\`, and with `stoppingAtNonASCII` any byte of 0x80 or above. The JSON writer copies such a run as
/// it is; the scanners read it as a plain string.
///
/// Eight bytes at a time (the bit tricks of "Bit Twiddling Hacks", `haszero` and `hasless`): a word with
/// none of those bytes is passed in about a dozen instructions, where the byte loop took about ten per byte
/// (a 36-character id, the commonest string the agent writes and reads, was some 400 instructions).
/// A word that has one is looked at byte by byte, so the answer is exact.
@usableFromInline
enum PlainRun {
    @usableFromInline static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first special byte at or after `start`, or `bytes.count`.
    @inlinable
    static func end(of bytes: UnsafeBufferPointer<UInt8>, from start: Int, stoppingAtNonASCII: Bool) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var index = start
        let count = bytes.count
        while index + 8 <= count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            var flags = (word &- ones &* 0x20) & ~word  // a byte below 0x20 (exact for bytes below 0x80)
            let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            flags |= (quotes &- ones) & ~quotes
            flags |= (backslashes &- ones) & ~backslashes
            if stoppingAtNonASCII { flags |= word }
            if flags & highs != 0 { break }
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
                || (stoppingAtNonASCII && byte >= 0x80)
            {
                return index
            }
            index += 1
        }
        return count
    }
}
