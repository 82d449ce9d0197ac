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
        let versioned = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let variant = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        var words = (versioned.bigEndian, variant.bigEndian)
        return withUnsafeBytes(of: &words) { raw in
            String(unsafeUninitializedCapacity: 36) { buffer in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    buffer[position] = hexDigit(raw[index] >> 4)
                    buffer[position + 1] = hexDigit(raw[index] & 0xF)
                    position += 2
                }
                return position
            }
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
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
