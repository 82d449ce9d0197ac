// The tables of ISO/IEC 18004:2015 that the encoder reads: how each version and error correction level splits its
// codewords into blocks (table 9), where the alignment patterns go (annex E, table E.1), and the bits that name a
// level in the format information (table 12).

extension QRCode.ErrorCorrection {
    /// The level's two bits in the format information (section 7.9.1, table 12). They are not in the order of
    /// the levels' strength: L is 01, M 00, Q 11 and H 10.
    var formatBits: Int {
        switch self {
        case .low: 0b01
        case .medium: 0b00
        case .quartile: 0b11
        case .high: 0b10
        }
    }

    /// The level's column in `blockTable`.
    var tableColumn: Int {
        switch self {
        case .low: 0
        case .medium: 1
        case .quartile: 2
        case .high: 3
        }
    }
}

/// How the codewords of one version at one error correction level are split into blocks (section 7.5.2, table 9):
/// every block has the same number of error correction codewords; the blocks of group 2 (if any) carry one data
/// codeword more than those of group 1, and follow them.
struct BlockLayout: Equatable {
    let ecCodewordsPerBlock: Int
    let group1Blocks: Int
    let group1DataCodewordsPerBlock: Int
    let group2Blocks: Int
    let group2DataCodewordsPerBlock: Int

    init(version: Int, correction: QRCode.ErrorCorrection) {
        precondition((1...40).contains(version), "QR code versions are 1 to 40")
        let row = blockTable[version - 1][correction.tableColumn]
        ecCodewordsPerBlock = row.0
        group1Blocks = row.1
        group1DataCodewordsPerBlock = row.2
        group2Blocks = row.3
        group2DataCodewordsPerBlock = row.4
    }

    /// The number of data codewords of each block, group 1's blocks first.
    var dataCodewordsPerBlock: [Int] {
        Array(repeating: group1DataCodewordsPerBlock, count: group1Blocks)
            + Array(repeating: group2DataCodewordsPerBlock, count: group2Blocks)
    }

    /// All data codewords of the symbol: its capacity before error correction.
    var dataCodewords: Int {
        group1Blocks * group1DataCodewordsPerBlock + group2Blocks * group2DataCodewordsPerBlock
    }

    /// All codewords of the symbol, data and error correction.
    var totalCodewords: Int { dataCodewords + (group1Blocks + group2Blocks) * ecCodewordsPerBlock }
}

/// Table 9 of ISO/IEC 18004:2015, one row per version (1 to 40), one entry per level (L, M, Q, H):
/// (error correction codewords per block, blocks in group 1, data codewords per block of group 1,
///  blocks in group 2, data codewords per block of group 2).
/// The tests check that each row's codewords fill exactly the modules that version leaves for data.
private let blockTable: [[(Int, Int, Int, Int, Int)]] = [
    [(7, 1, 19, 0, 0), (10, 1, 16, 0, 0), (13, 1, 13, 0, 0), (17, 1, 9, 0, 0)],  // 1
    [(10, 1, 34, 0, 0), (16, 1, 28, 0, 0), (22, 1, 22, 0, 0), (28, 1, 16, 0, 0)],  // 2
    [(15, 1, 55, 0, 0), (26, 1, 44, 0, 0), (18, 2, 17, 0, 0), (22, 2, 13, 0, 0)],  // 3
    [(20, 1, 80, 0, 0), (18, 2, 32, 0, 0), (26, 2, 24, 0, 0), (16, 4, 9, 0, 0)],  // 4
    [(26, 1, 108, 0, 0), (24, 2, 43, 0, 0), (18, 2, 15, 2, 16), (22, 2, 11, 2, 12)],  // 5
    [(18, 2, 68, 0, 0), (16, 4, 27, 0, 0), (24, 4, 19, 0, 0), (28, 4, 15, 0, 0)],  // 6
    [(20, 2, 78, 0, 0), (18, 4, 31, 0, 0), (18, 2, 14, 4, 15), (26, 4, 13, 1, 14)],  // 7
    [(24, 2, 97, 0, 0), (22, 2, 38, 2, 39), (22, 4, 18, 2, 19), (26, 4, 14, 2, 15)],  // 8
    [(30, 2, 116, 0, 0), (22, 3, 36, 2, 37), (20, 4, 16, 4, 17), (24, 4, 12, 4, 13)],  // 9
    [(18, 2, 68, 2, 69), (26, 4, 43, 1, 44), (24, 6, 19, 2, 20), (28, 6, 15, 2, 16)],  // 10
    [(20, 4, 81, 0, 0), (30, 1, 50, 4, 51), (28, 4, 22, 4, 23), (24, 3, 12, 8, 13)],  // 11
    [(24, 2, 92, 2, 93), (22, 6, 36, 2, 37), (26, 4, 20, 6, 21), (28, 7, 14, 4, 15)],  // 12
    [(26, 4, 107, 0, 0), (22, 8, 37, 1, 38), (24, 8, 20, 4, 21), (22, 12, 11, 4, 12)],  // 13
    [(30, 3, 115, 1, 116), (24, 4, 40, 5, 41), (20, 11, 16, 5, 17), (24, 11, 12, 5, 13)],  // 14
    [(22, 5, 87, 1, 88), (24, 5, 41, 5, 42), (30, 5, 24, 7, 25), (24, 11, 12, 7, 13)],  // 15
    [(24, 5, 98, 1, 99), (28, 7, 45, 3, 46), (24, 15, 19, 2, 20), (30, 3, 15, 13, 16)],  // 16
    [(28, 1, 107, 5, 108), (28, 10, 46, 1, 47), (28, 1, 22, 15, 23), (28, 2, 14, 17, 15)],  // 17
    [(30, 5, 120, 1, 121), (26, 9, 43, 4, 44), (28, 17, 22, 1, 23), (28, 2, 14, 19, 15)],  // 18
    [(28, 3, 113, 4, 114), (26, 3, 44, 11, 45), (26, 17, 21, 4, 22), (26, 9, 13, 16, 14)],  // 19
    [(28, 3, 107, 5, 108), (26, 3, 41, 13, 42), (30, 15, 24, 5, 25), (28, 15, 15, 10, 16)],  // 20
    [(28, 4, 116, 4, 117), (26, 17, 42, 0, 0), (28, 17, 22, 6, 23), (30, 19, 16, 6, 17)],  // 21
    [(28, 2, 111, 7, 112), (28, 17, 46, 0, 0), (30, 7, 24, 16, 25), (24, 34, 13, 0, 0)],  // 22
    [(30, 4, 121, 5, 122), (28, 4, 47, 14, 48), (30, 11, 24, 14, 25), (30, 16, 15, 14, 16)],  // 23
    [(30, 6, 117, 4, 118), (28, 6, 45, 14, 46), (30, 11, 24, 16, 25), (30, 30, 16, 2, 17)],  // 24
    [(26, 8, 106, 4, 107), (28, 8, 47, 13, 48), (30, 7, 24, 22, 25), (30, 22, 15, 13, 16)],  // 25
    [(28, 10, 114, 2, 115), (28, 19, 46, 4, 47), (28, 28, 22, 6, 23), (30, 33, 16, 4, 17)],  // 26
    [(30, 8, 122, 4, 123), (28, 22, 45, 3, 46), (30, 8, 23, 26, 24), (30, 12, 15, 28, 16)],  // 27
    [(30, 3, 117, 10, 118), (28, 3, 45, 23, 46), (30, 4, 24, 31, 25), (30, 11, 15, 31, 16)],  // 28
    [(30, 7, 116, 7, 117), (28, 21, 45, 7, 46), (30, 1, 23, 37, 24), (30, 19, 15, 26, 16)],  // 29
    [(30, 5, 115, 10, 116), (28, 19, 47, 10, 48), (30, 15, 24, 25, 25), (30, 23, 15, 25, 16)],  // 30
    [(30, 13, 115, 3, 116), (28, 2, 46, 29, 47), (30, 42, 24, 1, 25), (30, 23, 15, 28, 16)],  // 31
    [(30, 17, 115, 0, 0), (28, 10, 46, 23, 47), (30, 10, 24, 35, 25), (30, 19, 15, 35, 16)],  // 32
    [(30, 17, 115, 1, 116), (28, 14, 46, 21, 47), (30, 29, 24, 19, 25), (30, 11, 15, 46, 16)],  // 33
    [(30, 13, 115, 6, 116), (28, 14, 46, 23, 47), (30, 44, 24, 7, 25), (30, 59, 16, 1, 17)],  // 34
    [(30, 12, 121, 7, 122), (28, 12, 47, 26, 48), (30, 39, 24, 14, 25), (30, 22, 15, 41, 16)],  // 35
    [(30, 6, 121, 14, 122), (28, 6, 47, 34, 48), (30, 46, 24, 10, 25), (30, 2, 15, 64, 16)],  // 36
    [(30, 17, 122, 4, 123), (28, 29, 46, 14, 47), (30, 49, 24, 10, 25), (30, 24, 15, 46, 16)],  // 37
    [(30, 4, 122, 18, 123), (28, 13, 46, 32, 47), (30, 48, 24, 14, 25), (30, 42, 15, 32, 16)],  // 38
    [(30, 20, 117, 4, 118), (28, 40, 47, 7, 48), (30, 43, 24, 22, 25), (30, 10, 15, 67, 16)],  // 39
    [(30, 19, 118, 6, 119), (28, 18, 47, 31, 48), (30, 34, 24, 34, 25), (30, 20, 15, 61, 16)],  // 40
]

/// The row and column coordinates of the alignment patterns' centres, per version (annex E, table E.1). A pattern is
/// placed at every pair of them except the three pairs that fall on a finder pattern.
let alignmentPatternCenters: [[Int]] = [
    [],  // 1
    [6, 18],  // 2
    [6, 22],  // 3
    [6, 26],  // 4
    [6, 30],  // 5
    [6, 34],  // 6
    [6, 22, 38],  // 7
    [6, 24, 42],  // 8
    [6, 26, 46],  // 9
    [6, 28, 50],  // 10
    [6, 30, 54],  // 11
    [6, 32, 58],  // 12
    [6, 34, 62],  // 13
    [6, 26, 46, 66],  // 14
    [6, 26, 48, 70],  // 15
    [6, 26, 50, 74],  // 16
    [6, 30, 54, 78],  // 17
    [6, 30, 56, 82],  // 18
    [6, 30, 58, 86],  // 19
    [6, 34, 62, 90],  // 20
    [6, 28, 50, 72, 94],  // 21
    [6, 26, 50, 74, 98],  // 22
    [6, 30, 54, 78, 102],  // 23
    [6, 28, 54, 80, 106],  // 24
    [6, 32, 58, 84, 110],  // 25
    [6, 30, 58, 86, 114],  // 26
    [6, 34, 62, 90, 118],  // 27
    [6, 26, 50, 74, 98, 122],  // 28
    [6, 30, 54, 78, 102, 126],  // 29
    [6, 26, 52, 78, 104, 130],  // 30
    [6, 30, 56, 82, 108, 134],  // 31
    [6, 34, 60, 86, 112, 138],  // 32
    [6, 30, 58, 86, 114, 142],  // 33
    [6, 34, 62, 90, 118, 146],  // 34
    [6, 30, 54, 78, 102, 126, 150],  // 35
    [6, 24, 50, 76, 102, 128, 154],  // 36
    [6, 28, 54, 80, 106, 132, 158],  // 37
    [6, 32, 58, 84, 110, 136, 162],  // 38
    [6, 26, 54, 82, 110, 138, 166],  // 39
    [6, 30, 58, 86, 114, 142, 170],  // 40
]
