import Testing

@testable import TargetDecisioning

/// Known answers from an independent implementation: Python's `mmh3` (MurmurHash3 x86_32) over the
/// string's UTF-16LE bytes, which is what hashing a JavaScript string's char codes two at a time is:
///
///     import mmh3
///     mmh3.hash(text.encode("utf-16-le"), seed, signed=True)
@Suite struct MurmurHash3Tests {
    @Test(arguments: [
        ("", 0 as Int32),
        ("a", 1_867_108_634),
        ("ab", 374_890_698),
        ("abc", 1_118_836_419),
        ("abcd", 1_157_274_932),
        ("é", 1_105_794_559),
        ("日本語", 1_004_281_861),
        // A surrogate pair is two code units, hashed as one block.
        ("😀", 1_443_257_913),
        ("someClientId.125873.338e3c1e51f7416a8e1ccba4f81acea0.28_0.0", 1_237_814_844),
        ("someClientId.125871.338e3c1e51f7416a8e1ccba4f81acea0.28_0.0", -1_488_138_767),
        ("targettesting.125880.07327024324407615852294135870030620007.0", 1_865_130_334),
    ])
    func hashesUTF16CodeUnitsWithSeedZero(_ text: String, _ expected: Int32) {
        #expect(MurmurHash3.hashUnencodedChars(text) == expected)
    }

    @Test func mixesTheSeedIn() {
        #expect(MurmurHash3.hashUnencodedChars("", seed: 42) == 142_593_372)
        #expect(MurmurHash3.hashUnencodedChars("abcd", seed: 42) == -1_408_171_517)
        #expect(MurmurHash3.hashUnencodedChars("日本語", seed: 42) == -1_617_963_296)
    }
}
