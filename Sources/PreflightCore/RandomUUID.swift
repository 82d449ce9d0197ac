import Synchronization

/// Random version-4 UUIDs in lowercase, the form Target expects for notification, request and session ids.
///
/// Foundation's `UUID().uuidString` formats through `snprintf` and then needs `lowercased()`: about 7,000
/// instructions, paid on every cached load for its display notification (tools/bench --profile). These
/// ids need to be unique, not secret, so a SplitMix64 stream seeded from the system's generator serves
/// them at a fraction of the cost.
public enum RandomUUID {
    /// The stream's state, advanced by one atomic add per id rather than under a lock: any thread makes ids
    /// (the I/O thread one per display notification), none waits for another, and the mutex's lock and unlock
    /// cost about 15 instructions more.
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    /// The stream's next two words.
    private static func nextPair() -> (high: UInt64, low: UInt64) {
        let first = state.wrappingAdd(2 &* SplitMix64.gamma, ordering: .relaxed).oldValue &+ SplitMix64.gamma
        return (SplitMix64.mix(first), SplitMix64.mix(first &+ SplitMix64.gamma))
    }

    /// A new `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` string.
    public static func make() -> String {
        let (high, low) = nextPair()
        // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        return format(high: high, low: low)
    }

    /// Writes a new one's 36 bytes at `out`, with no `String` made (a display notification's id, written
    /// into its encoded item on the I/O thread).
    public static func write(to out: UnsafeMutablePointer<UInt8>) {
        let (high, low) = nextPair()
        write(high: high, low: low, to: out)
    }

    /// The UUID of 128 random bits, its version and variant set.
    static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            guard let out = buffer.baseAddress else { return 0 }
            write(high: high, low: low, to: out)
            return 36
        }
    }

    /// Writes the 36 bytes of the UUID of `high` and `low` at `out`.
    private static func write(high: UInt64, low: UInt64, to out: UnsafeMutablePointer<UInt8>) {
        let versioned = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let variant = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        // A byte at a time, its two digits one 16-bit load and store from the table, dashes at their places: no
        // branch per digit (this runs for every display notification, on the I/O thread).
        hexPairs.withUnsafeBufferPointer { table in
            let pairs = table.baseAddress!
            let raw = UnsafeMutableRawPointer(out)
            func put(_ word: UInt64, bytes: Int, at position: Int) {
                for index in 0..<bytes {
                    let byte = Int((word >> UInt64(8 * (bytes - 1 - index))) & 0xFF)
                    raw.storeBytes(of: pairs[byte], toByteOffset: position + 2 * index, as: UInt16.self)
                }
            }
            put(versioned >> 32, bytes: 4, at: 0)
            out[8] = UInt8(ascii: "-")
            put(versioned >> 16, bytes: 2, at: 9)
            out[13] = UInt8(ascii: "-")
            put(versioned, bytes: 2, at: 14)
            out[18] = UInt8(ascii: "-")
            put(variant >> 48, bytes: 2, at: 19)
            out[23] = UInt8(ascii: "-")
            put(variant, bytes: 6, at: 24)
        }
    }

    /// The two lowercase hex digits of every byte value, in order (`00`, `01`, …, `ff`), each pair as the 16-bit
    /// word whose bytes in memory are those two digits.
    private static let hexPairs: [UInt16] = (0..<256).map { byte in
        let alphabet = Array("0123456789abcdef".utf8)
        return UInt16(littleEndian: UInt16(alphabet[byte >> 4]) | UInt16(alphabet[byte & 0xF]) << 8)
    }
}

/// Sebastiano Vigna's SplitMix64: a fast, well-distributed 64-bit stream from one word of state.
/// The stream's state advances by `gamma` per word, and each word is the state so reached, mixed.
enum SplitMix64 {
    static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

    static func mix(_ state: UInt64) -> UInt64 {
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
