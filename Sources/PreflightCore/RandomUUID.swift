import Synchronization

/// Random version-4 UUIDs in lowercase, the form Target expects for notification, request and session ids.
///
/// Foundation's `UUID().uuidString` formats through `snprintf` and then needs `lowercased()`: about 7,000
/// instructions, paid on every cached load for its display notification (tools/bench --profile). These
/// ids need to be unique, not secret, so a SplitMix64 stream seeded from the system's generator serves
/// them at a fraction of the cost.
public enum RandomUUID {
    private static let generator = Mutex(SplitMix64(seed: UInt64.random(in: .min ... .max)))

    /// A new `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` string.
    public static func make() -> String {
        let (high, low) = generator.withLock { ($0.next(), $0.next()) }
        // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        return format(high: high, low: low)
    }

    /// Writes a new one's 36 bytes at `out`, with no `String` made (a display notification's id, written
    /// into its encoded item on the I/O thread).
    public static func write(to out: UnsafeMutablePointer<UInt8>) {
        let (high, low) = generator.withLock { ($0.next(), $0.next()) }
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
        // The 32 digits eight at a time (`hexDigits(of:)`), then laid out with the dashes: about 100
        // instructions, where a table lookup per byte was about 350 (this runs for every display
        // notification, on the I/O thread).
        var digits: (UInt64, UInt64, UInt64, UInt64) = (
            hexDigits(of: UInt32(truncatingIfNeeded: versioned >> 32)),
            hexDigits(of: UInt32(truncatingIfNeeded: versioned)),
            hexDigits(of: UInt32(truncatingIfNeeded: variant >> 32)),
            hexDigits(of: UInt32(truncatingIfNeeded: variant))
        )
        withUnsafeBytes(of: &digits) { raw in
            let hex = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            // 8-4-4-4-12: digits 0..<8, 8..<12, 12..<16, 16..<20, 20..<32.
            out.update(from: hex, count: 8)
            out[8] = UInt8(ascii: "-")
            (out + 9).update(from: hex + 8, count: 4)
            out[13] = UInt8(ascii: "-")
            (out + 14).update(from: hex + 12, count: 4)
            out[18] = UInt8(ascii: "-")
            (out + 19).update(from: hex + 16, count: 4)
            out[23] = UInt8(ascii: "-")
            (out + 24).update(from: hex + 20, count: 12)
        }
    }

    /// The eight lowercase hex digits of `value`, most significant first, as the bytes of a word in memory
    /// order: each nibble spread to a byte of its own, then made a digit with no branch.
    static func hexDigits(of value: UInt32) -> UInt64 {
        var spread = UInt64(value)
        spread = ((spread & 0xFFFF_0000) << 16) | (spread & 0x0000_FFFF)
        spread = ((spread & 0x0000_FF00_0000_FF00) << 8) | (spread & 0x0000_00FF_0000_00FF)
        spread = ((spread & 0x00F0_00F0_00F0_00F0) << 4) | (spread & 0x000F_000F_000F_000F)
        // 1 in each byte whose nibble is 10 or more: those go on past `9` to `a`.
        let letters = ((spread &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        let ascii = spread &+ 0x3030_3030_3030_3030 &+ letters &* UInt64(UInt8(ascii: "a") - UInt8(ascii: "9") - 1)
        // The most significant digit is in the word's highest byte: first in memory once swapped.
        return UInt64(bigEndian: ascii)
    }
}

/// Sebastiano Vigna's SplitMix64: a fast, well-distributed 64-bit stream from one word of state.
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
