// A QR Code encoder (ISO/IEC 18004:2015, model 2) for short texts such as URLs: byte mode only, all 40 versions,
// all four error correction levels. Section numbers in the comments are those of ISO/IEC 18004:2015.
//
// The steps, in the standard's order (section 7.1): encode the text's UTF-8 bytes as a bit stream (7.4), split it
// into blocks and add Reed–Solomon error correction to each (7.5, ReedSolomon.swift), interleave the blocks (7.6),
// place the codewords in the matrix around the function patterns (7.7, SymbolMatrix.swift), and mask the data with
// the one of eight patterns that scores the fewest penalty points (7.8), then add the format and version
// information (7.9, 7.10).

/// A QR code symbol: a square of dark and light modules, built from a text.
///
/// ```swift
/// let code = try QRCode(encoding: "https://example.com/activate?code=ABC123")
/// for line in code.terminalLines() { print(line) }
/// ```
public struct QRCode: Sendable, Equatable {
    /// How much of the symbol may be damaged and still be read: about 7 % of the codewords for L, 15 % for M,
    /// 25 % for Q and 30 % for H. A higher level makes the symbol larger for the same text.
    public enum ErrorCorrection: Sendable, Equatable, CaseIterable {
        case low
        case medium
        case quartile
        case high
    }

    /// The number of modules on each side: 17 + 4 × version (21 to 177).
    public let size: Int
    /// The symbol version, 1 to 40: the smallest one that holds the text at the chosen level.
    public let version: Int
    /// The mask pattern applied to the data, 0 to 7 (section 7.8.2): the one with the fewest penalty points.
    public let mask: Int
    /// The error correction level the symbol was built with.
    public let correction: ErrorCorrection
    /// Row-major, `size × size`; true is dark.
    let modules: [Bool]

    /// Encodes `text` in byte mode (its UTF-8 bytes, section 7.4.5), in the smallest version that holds it at
    /// `correction`, with the mask pattern of the fewest penalty points.
    ///
    /// - Throws: `QRCodeError.textTooLong` when even version 40 cannot hold the text at that level
    ///   (2953 bytes at L, 2331 at M, 1663 at Q, 1273 at H).
    public init(encoding text: String, correction: ErrorCorrection = .medium) throws(QRCodeError) {
        try self.init(bytes: Array(text.utf8), correction: correction)
    }

    /// Encodes `bytes` in byte mode. `version` and `mask`, when given, replace the smallest version and the
    /// best mask: for tests that compare with a symbol made elsewhere.
    init(
        bytes: [UInt8],
        correction: ErrorCorrection,
        version fixedVersion: Int? = nil,
        mask fixedMask: Int? = nil
    )
        throws(QRCodeError)
    {
        precondition(fixedVersion.map { (1...40).contains($0) } ?? true, "QR code versions are 1 to 40")
        precondition(fixedMask.map { (0...7).contains($0) } ?? true, "QR code mask patterns are 0 to 7")
        let candidates = fixedVersion.map { [$0] } ?? Array(1...40)
        guard let version = candidates.first(where: { Self.fits(byteCount: bytes.count, version: $0, correction) })
        else {
            throw QRCodeError.textTooLong(
                byteCount: bytes.count,
                maximumByteCount: Self.byteCapacity(version: fixedVersion ?? 40, correction),
                correction: correction
            )
        }
        let layout = BlockLayout(version: version, correction: correction)
        let dataCodewords = Self.dataCodewords(bytes, version: version, capacity: layout.dataCodewords)
        let codewords = Self.interleavedWithErrorCorrection(dataCodewords, layout: layout)

        let symbol = SymbolMatrix(version: version, codewords: codewords)
        let mask = fixedMask ?? symbol.bestMask(correction: correction)
        self.version = version
        self.size = symbol.size
        self.mask = mask
        self.correction = correction
        self.modules = symbol.masked(mask, correction: correction).modules
    }

    /// Whether the module in column `x`, row `y` (both from 0 at the top left) is dark.
    public subscript(x: Int, y: Int) -> Bool {
        precondition(x >= 0 && x < size && y >= 0 && y < size, "module (\(x), \(y)) is outside the symbol")
        return modules[y * size + x]
    }
}

/// Why a text could not be encoded.
public enum QRCodeError: Error, Equatable, CustomStringConvertible {
    /// The text's UTF-8 bytes do not fit in a version 40 symbol at that error correction level.
    case textTooLong(byteCount: Int, maximumByteCount: Int, correction: QRCode.ErrorCorrection)

    public var description: String {
        switch self {
        case .textTooLong(let byteCount, let maximumByteCount, let correction):
            "The text is \(byteCount) bytes in UTF-8, more than the \(maximumByteCount) a QR code holds at error "
                + "correction level \(correction)"
        }
    }
}

// MARK: - Data encoding (section 7.4)

extension QRCode {
    /// The mode indicator of byte mode (section 7.4.2, table 2).
    static let byteModeIndicator = 0b0100

    /// The length of the character count indicator in byte mode (table 3).
    static func characterCountBits(version: Int) -> Int { version <= 9 ? 8 : 16 }

    /// The most bytes a symbol of `version` holds in byte mode at `correction` (section 7.4.10, table 7).
    static func byteCapacity(version: Int, _ correction: ErrorCorrection) -> Int {
        let dataBits = BlockLayout(version: version, correction: correction).dataCodewords * 8
        let available = (dataBits - 4 - characterCountBits(version: version)) / 8
        // The count indicator cannot say more than 255 below version 10.
        return min(available, (1 << characterCountBits(version: version)) - 1)
    }

    static func fits(byteCount: Int, version: Int, _ correction: ErrorCorrection) -> Bool {
        byteCount <= byteCapacity(version: version, correction)
    }

    /// The data codewords (section 7.4): mode indicator, character count, the bytes, the terminator of up to four
    /// zero bits (7.4.9), zero bits up to a byte boundary, then the pad codewords 11101100 and 00010001 in turn
    /// up to the capacity (7.4.10).
    static func dataCodewords(_ bytes: [UInt8], version: Int, capacity: Int) -> [UInt8] {
        var bits = BitBuffer()
        bits.append(byteModeIndicator, count: 4)
        bits.append(bytes.count, count: characterCountBits(version: version))
        for byte in bytes {
            bits.append(Int(byte), count: 8)
        }
        let capacityBits = capacity * 8
        precondition(bits.count <= capacityBits, "the data does not fit the version")
        bits.append(0, count: min(4, capacityBits - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var codewords = bits.bytes
        var padIndex = 0
        while codewords.count < capacity {
            codewords.append(padIndex % 2 == 0 ? 0b1110_1100 : 0b0001_0001)
            padIndex += 1
        }
        return codewords
    }

    /// Splits the data codewords into the blocks of `layout` (section 7.5.2), computes each block's error
    /// correction codewords, and interleaves them (section 7.6): the first data codeword of every block, then the
    /// second, and so on (group 2's blocks have one more, which come last), then the error correction codewords
    /// the same way.
    static func interleavedWithErrorCorrection(_ data: [UInt8], layout: BlockLayout) -> [UInt8] {
        precondition(data.count == layout.dataCodewords)
        let generator = ReedSolomonGenerator(degree: layout.ecCodewordsPerBlock)
        var dataBlocks: [[UInt8]] = []
        var start = 0
        for length in layout.dataCodewordsPerBlock {
            dataBlocks.append(Array(data[start..<start + length]))
            start += length
        }
        let ecBlocks = dataBlocks.map { generator.remainder(of: $0) }

        var result: [UInt8] = []
        result.reserveCapacity(layout.totalCodewords)
        let longest = dataBlocks.map(\.count).max() ?? 0
        for i in 0..<longest {
            for block in dataBlocks where i < block.count {
                result.append(block[i])
            }
        }
        for i in 0..<layout.ecCodewordsPerBlock {
            for block in ecBlocks {
                result.append(block[i])
            }
        }
        return result
    }
}

/// Bits appended most significant first, read back as bytes.
struct BitBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count bitCount: Int) {
        precondition(bitCount >= 0 && value >> bitCount == 0, "\(value) does not fit in \(bitCount) bits")
        for shift in stride(from: bitCount - 1, through: 0, by: -1) {
            if count % 8 == 0 {
                bytes.append(0)
            }
            if (value >> shift) & 1 == 1 {
                bytes[bytes.count - 1] |= 0x80 >> (count % 8)
            }
            count += 1
        }
    }
}
