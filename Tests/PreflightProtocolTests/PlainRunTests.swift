import Testing

@testable import PreflightProtocol

/// `PlainRun.end` (eight bytes at a time) against the byte loop it replaced, on every byte value at every
/// position of runs from 0 to 24 bytes (three words), and on random bytes.
@Suite struct PlainRunTests {
    private func byteLoop(_ bytes: [UInt8], from start: Int, ascii: Bool) -> Int {
        for index in start..<bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || (ascii && byte >= 0x80) {
                return index
            }
        }
        return bytes.count
    }

    /// Whether both variants (the writer's, and the scanners' that stops at bytes beyond ASCII too) agree.
    private func agree(_ bytes: [UInt8], from start: Int) -> Bool {
        [false, true].allSatisfy { ascii in
            bytes.withUnsafeBufferPointer { PlainRun.end(of: $0, from: start, ascii: ascii) }
                == byteLoop(bytes, from: start, ascii: ascii)
        }
    }

    @Test func everyByteValueAtEveryPositionIsFoundWhereTheByteLoopFindsIt() {
        for length in 0...24 {
            for position in 0..<max(length, 1) where position < length {
                for value in 0...255 {
                    // Plain bytes around the one under test, some above 0x80 to catch borrows and high bits.
                    var bytes = (0..<length).map { UInt8(0x41 + $0 % 26) }
                    if length > 3 { bytes[(position + 3) % length] = 0x9F }
                    bytes[position] = UInt8(value)
                    for start in [0, min(position, 3)] {
                        #expect(
                            agree(bytes, from: start),
                            "length \(length), byte \(value) at \(position), from \(start)"
                        )
                    }
                }
            }
        }
    }

    @Test func randomBytesAgreeWithTheByteLoop() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...64, using: &generator)
            // Mostly plain ASCII, so that long runs occur, with any byte now and then.
            let bytes = (0..<length).map { _ in
                Int.random(in: 0..<16, using: &generator) == 0
                    ? UInt8.random(in: 0...255, using: &generator) : UInt8.random(in: 0x20...0x7E, using: &generator)
            }
            let start = length == 0 ? 0 : Int.random(in: 0...length, using: &generator)
            #expect(agree(bytes, from: start), "\(bytes) from \(start)")
        }
    }

    @Test func theWriterEscapesWhatTheByteLoopEscaped() {
        var writer = JSONWriter()
        writer.writeString("plain 36-character id 0123456789abcd\"quote\\slash\u{01}é\nend")
        #expect(
            String(decoding: writer.bytes, as: UTF8.self)
                == #""plain 36-character id 0123456789abcd\"quote\\slash\u0001é\nend""#
        )
    }
}
