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

    /// Vigna's reference: the first word of SplitMix64 seeded with 0.
    @Test func theStreamIsSplitMix64() {
        #expect(SplitMix64.mix(0 &+ SplitMix64.gamma) == 0xE220_A839_7B1D_CDAF)
    }

    /// Ids made on several threads at once, each taking its words with one atomic add: none is made twice.
    @Test func idsMadeOnManyThreadsAtOnceAreAllDistinct() async {
        let perTask = 2_000
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<perTask).map { index in
                        index.isMultiple(of: 2)
                            ? RandomUUID.make()
                            : String(unsafeUninitializedCapacity: 36) { buffer in
                                RandomUUID.write(to: buffer.baseAddress!)
                                return 36
                            }
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(ids.count == 8 * perTask)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 36 && Array($0.utf8)[14] == UInt8(ascii: "4") })
    }
}
