// Reed–Solomon error correction as QR codes use it (ISO/IEC 18004:2015, section 7.5.2 and annex A): arithmetic in
// GF(2^8) with the prime polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11D), and the generator polynomial of degree n
// (x - α^0)(x - α^1)…(x - α^(n-1)), where α = 2. The error correction codewords of a block are the remainder of
// the block's data polynomial times x^n divided by the generator.

/// GF(256) of section 7.5.2: logarithm and antilogarithm tables for α = 2.
enum GaloisField {
    /// α^i for i in 0..<255, repeated once more so that `exp[log a + log b]` needs no reduction modulo 255.
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 510)
        var value = 1
        for i in 0..<255 {
            table[i] = UInt8(value)
            table[i + 255] = UInt8(value)
            value <<= 1
            if value & 0x100 != 0 {
                value ^= 0x11D
            }
        }
        return table
    }()

    /// The i with α^i = a, for a in 1...255 (`log[0]` is unused: 0 has no logarithm).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 256)
        for i in 0..<255 {
            table[Int(exp[i])] = i
        }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        if a == 0 || b == 0 {
            return 0
        }
        return exp[log[Int(a)] + log[Int(b)]]
    }
}

/// The generator polynomial for `degree` error correction codewords, and division by it.
struct ReedSolomonGenerator {
    /// The coefficients after the leading 1, highest power first: g(x) = x^n + c[0] x^(n-1) + … + c[n-1].
    let coefficients: [UInt8]

    init(degree: Int) {
        precondition(degree >= 1 && degree <= 254, "Reed–Solomon degree out of range")
        // Start from g(x) = 1 and multiply by (x - α^i) for each i; in GF(2^8) subtraction is addition (xor).
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = GaloisField.multiply(result[j], root)
                if j + 1 < degree {
                    result[j] ^= result[j + 1]
                }
            }
            root = GaloisField.multiply(root, 2)
        }
        coefficients = result
    }

    /// The error correction codewords for one block of data codewords: the remainder of data(x)·x^n / g(x),
    /// highest power first.
    func remainder(of data: [UInt8]) -> [UInt8] {
        var remainder = [UInt8](repeating: 0, count: coefficients.count)
        for byte in data {
            let factor = byte ^ remainder.removeFirst()
            remainder.append(0)
            for i in coefficients.indices {
                remainder[i] ^= GaloisField.multiply(coefficients[i], factor)
            }
        }
        return remainder
    }
}
