import Synchronization

/// Random version-4 UUIDs in lowercase, the form Target expects for notification, request and session ids.
///
/// Foundation's `UUID().uuidString` formats through `snprintf` and then needs `lowercased()`: about 7,000
/// instructions, paid on every cached load for its display notification (tools/bench --profile). These
/// ids need to be unique, not secret, so a SplitMix64 stream seeded from the system's generator serves
/// them at a fraction of the cost.
public enum RandomUUID {
    private static let generator = Mutex(SplitMix64(seed: UInt64.random(in: .min ... .max)))
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A new `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` string.
    public static func make() -> String {
        let (high, low) = generator.withLock { ($0.next(), $0.next()) }
        // RFC 9562: version 4 in the high nibble of byte 6, variant 0b10 in the top bits of byte 8.
        let versioned = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let variant = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[position] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
                    position += 1
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            put(versioned >> 32, nibbles: 8)
            dash()
            put(versioned >> 16, nibbles: 4)
            dash()
            put(versioned, nibbles: 4)
            dash()
            put(variant >> 48, nibbles: 4)
            dash()
            put(variant, nibbles: 12)
            return position
        }
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
