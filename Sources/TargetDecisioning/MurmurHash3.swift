/// MurmurHash3 x86_32 over the UTF-16 code units of a string, as Adobe's engines hash visitors into
/// an activity's traffic allocation.
///
/// The code units are read two at a time as one little-endian 32-bit block (an odd last unit is the
/// tail), and the length mixed in at the end is the byte length (twice the unit count): exactly
/// MurmurHash3_x86_32 over the string's UTF-16LE bytes. This is Guava's `hashUnencodedChars`, which
/// Target's edge runs and which the Node.js engine (`hashUnencodedChars` in target-tools' hashing.js)
/// and the Java engine reproduce. Written here because no MurmurHash3 package is available to the
/// project, and the whole algorithm is thirty lines.
enum MurmurHash3 {
    private static let c1: UInt32 = 0xcc9e_2d51
    private static let c2: UInt32 = 0x1b87_3593

    /// The signed 32-bit hash of `text`'s UTF-16 code units, as JavaScript's `| 0` arithmetic gives it.
    static func hashUnencodedChars(_ text: String, seed: UInt32 = 0) -> Int32 {
        var hash = seed
        var units = 0
        var pending: UInt32? = nil
        for unit in text.utf16 {
            units += 1
            if let low = pending {
                hash = mixBody(hash, mixBlock(low | UInt32(unit) << 16))
                pending = nil
            } else {
                pending = UInt32(unit)
            }
        }
        if let tail = pending {
            hash ^= mixBlock(tail)
        }
        hash ^= UInt32(truncatingIfNeeded: units &* 2)
        return Int32(bitPattern: finalMix(hash))
    }

    private static func mixBlock(_ block: UInt32) -> UInt32 {
        var k = block &* c1
        k = k << 15 | k >> 17
        return k &* c2
    }

    private static func mixBody(_ hash: UInt32, _ block: UInt32) -> UInt32 {
        var h = hash ^ block
        h = h << 13 | h >> 19
        return h &* 5 &+ 0xe654_6b64
    }

    private static func finalMix(_ hash: UInt32) -> UInt32 {
        var h = hash
        h ^= h >> 16
        h = h &* 0x85eb_ca6b
        h ^= h >> 13
        h = h &* 0xc2b2_ae35
        h ^= h >> 16
        return h
    }
}
