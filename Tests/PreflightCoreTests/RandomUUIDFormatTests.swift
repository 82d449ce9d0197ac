import Testing

@testable import PreflightCore

@Suite struct RandomUUIDFormatTests {
    @Test func everyBitLandsInItsDigitWithTheVersionAndVariantSet() {
        #expect(
            RandomUUID.format(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)
                == "01234567-89ab-4def-bedc-ba9876543210"
        )
        #expect(RandomUUID.format(high: 0, low: 0) == "00000000-0000-4000-8000-000000000000")
        #expect(RandomUUID.format(high: .max, low: .max) == "ffffffff-ffff-4fff-bfff-ffffffffffff")
    }

    /// The word-at-a-time digits against a plain formatting, at the edges and over a spread of values.
    @Test func hexDigitsAreThoseOfAPlainFormatting() {
        func plain(_ value: UInt32) -> String {
            let alphabet = Array("0123456789abcdef".utf8)
            return String(decoding: (0..<8).map { alphabet[Int((value >> UInt32(28 - 4 * $0)) & 0xF)] }, as: UTF8.self)
        }
        var generator = SplitMix64(seed: 42)
        let values: [UInt32] =
            [0, 1, 9, 10, 15, 16, 0x9999_9999, 0xAAAA_AAAA, 0x0123_4567, 0x89AB_CDEF, .max]
            + (0..<10_000).map { _ in UInt32(truncatingIfNeeded: generator.next()) }
        for value in values {
            var digits = RandomUUID.hexDigits(of: value)
            let text = withUnsafeBytes(of: &digits) { String(decoding: $0, as: UTF8.self) }
            #expect(text == plain(value), "\(value)")
        }
    }
}
