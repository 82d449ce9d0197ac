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
}
