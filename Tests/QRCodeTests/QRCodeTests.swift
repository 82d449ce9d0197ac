// Tests of the QR code encoder against ISO/IEC 18004:2015's worked examples and tables, and against symbols made by
// another encoder (Fixtures.swift).

import Testing

@testable import QRCode

@Suite struct KnownSymbols {
    /// Whole matrices, built with the fixture's version and each mask it has a symbol for: tests everything but the
    /// choice of version and mask.
    @Test(arguments: Fixtures.all)
    func matricesWithTheSameVersionAndMask(_ fixture: Fixture) throws {
        try #require(fixture.symbols[fixture.mask] != nil)
        for mask in fixture.symbols.keys.sorted() {
            let code = try QRCode(
                bytes: Array(fixture.text.utf8),
                correction: fixture.correction,
                version: fixture.version,
                mask: mask
            )
            try #require(code.size == 17 + 4 * fixture.version)
            let expected = fixture.modules(mask: mask)
            try #require(expected.count == code.size && expected.allSatisfy { $0.count == code.size })
            var differing: [String] = []
            for y in 0..<code.size {
                for x in 0..<code.size where code[x, y] != expected[y][x] {
                    differing.append("(\(x), \(y))")
                }
            }
            let differingCount = differing.count
            #expect(
                differingCount == 0,
                "mask \(mask), first differing modules: \(differing.prefix(10).joined(separator: " "))"
            )
        }
    }

    /// The public initializer picks the smallest version and the lowest-penalty mask, and so the same symbol.
    @Test(arguments: Fixtures.all)
    func versionAndMaskChosen(_ fixture: Fixture) throws {
        let code = try QRCode(encoding: fixture.text, correction: fixture.correction)
        #expect(code.version == fixture.version)
        #expect(code.mask == fixture.mask)
        #expect(code.correction == fixture.correction)
        let forced = try QRCode(
            bytes: Array(fixture.text.utf8),
            correction: fixture.correction,
            version: fixture.version,
            mask: fixture.mask
        )
        let sameSymbol = code == forced
        #expect(sameSymbol)
    }

    @Test func defaultLevelIsMedium() throws {
        #expect(try QRCode(encoding: "a").correction == .medium)
    }
}

@Suite struct DataEncoding {
    /// Section 7.4: mode 0100, count 00000001, 'a' 01100001, terminator 0000, then pad codewords 0xEC 0x11 in turn.
    @Test func byteModeBitStreamAndPadding() {
        let codewords = QRCode.dataCodewords([0x61], version: 1, capacity: 16)
        let pads = (0..<13).map { $0 % 2 == 0 ? UInt8(0xEC) : 0x11 }
        #expect(codewords == [0x40, 0x16, 0x10] + pads)
    }

    /// From version 10 on, the count takes 16 bits (table 3).
    @Test func sixteenBitCountFromVersion10() {
        let codewords = QRCode.dataCodewords([0x61], version: 10, capacity: 216)
        #expect(Array(codewords.prefix(4)) == [0x40, 0x00, 0x16, 0x10])
        #expect(codewords[4] == 0xEC)
    }

    /// When the data leaves fewer than 4 bits, the terminator is cut short (7.4.9): version 1-M holds 14 bytes.
    @Test func fullSymbolHasNoPadCodewords() {
        let codewords = QRCode.dataCodewords(Array(repeating: 0xFF, count: 14), version: 1, capacity: 16)
        #expect(codewords.count == 16)
        #expect(codewords.first == 0x40)
        #expect(codewords[1] == 0xEF)
        #expect(codewords.last == 0xF0)
    }

    /// Table 7's byte-mode capacities for a few versions, columns L, M, Q, H.
    @Test(arguments: [
        (1, [17, 14, 11, 7]), (2, [32, 26, 20, 14]), (7, [154, 122, 86, 64]), (9, [230, 180, 130, 98]),
        (10, [271, 213, 151, 119]), (26, [1367, 1059, 751, 593]), (27, [1465, 1125, 805, 625]),
        (40, [2953, 2331, 1663, 1273]),
    ])
    func byteCapacity(version: Int, capacities: [Int]) {
        let levels: [QRCode.ErrorCorrection] = [.low, .medium, .quartile, .high]
        #expect(levels.map { QRCode.byteCapacity(version: version, $0) } == capacities)
    }

    @Test func smallestVersionThatFits() throws {
        #expect(try QRCode(encoding: String(repeating: "x", count: 14)).version == 1)
        #expect(try QRCode(encoding: String(repeating: "x", count: 15)).version == 2)
        #expect(try QRCode(encoding: String(repeating: "x", count: 7), correction: .high).version == 1)
        #expect(try QRCode(encoding: String(repeating: "x", count: 8), correction: .high).version == 2)
        #expect(try QRCode(encoding: "").version == 1)
    }

    /// Text is encoded as its UTF-8 bytes: "é" is two bytes, so 7 of them need 14 bytes.
    @Test func textIsUTF8() throws {
        #expect(try QRCode(encoding: String(repeating: "é", count: 7)).version == 1)
        #expect(try QRCode(encoding: String(repeating: "é", count: 8)).version == 2)
    }
}

@Suite struct TooLong {
    @Test(arguments: [
        (QRCode.ErrorCorrection.low, 2953), (.medium, 2331), (.quartile, 1663), (.high, 1273),
    ])
    func throwsPastVersion40(correction: QRCode.ErrorCorrection, limit: Int) throws {
        let tooLong = String(repeating: "x", count: limit + 1)
        let expected = QRCodeError.textTooLong(byteCount: limit + 1, maximumByteCount: limit, correction: correction)
        #expect(throws: expected) {
            try QRCode(encoding: tooLong, correction: correction)
        }
    }

    @Test func largestTextMakesVersion40() throws {
        let code = try QRCode(encoding: String(repeating: "x", count: 1273), correction: .high)
        #expect(code.version == 40)
        #expect(code.size == 177)
    }

    @Test func errorDescription() {
        let error = QRCodeError.textTooLong(byteCount: 3000, maximumByteCount: 2331, correction: .medium)
        #expect(
            "\(error)"
                == "The text is 3000 bytes in UTF-8, more than the 2331 a QR code holds at error correction level medium"
        )
    }
}

@Suite struct ReedSolomon {
    /// The symbol encoding example of ISO/IEC 18004, annex I: "01234567" in numeric mode at 1-M.
    @Test func standardExample() {
        let data: [UInt8] = [
            0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11,
        ]
        let ec = ReedSolomonGenerator(degree: 10).remainder(of: data)
        #expect(ec == [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    /// The textbook example (the widely used walk-through of "HELLO WORLD" in alphanumeric mode at 1-M): its 16
    /// data codewords and their 10 error correction codewords.
    @Test func textbookExample() {
        let data: [UInt8] = [32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17]
        let ec = ReedSolomonGenerator(degree: 10).remainder(of: data)
        #expect(ec == [196, 35, 39, 119, 235, 215, 231, 226, 93, 23])
    }

    /// Annex A: the generator polynomial for 7 error correction codewords, as exponents of α:
    /// x^7 + α^87 x^6 + α^229 x^5 + α^146 x^4 + α^149 x^3 + α^238 x^2 + α^102 x + α^21.
    @Test func generatorPolynomialOfDegree7() {
        let exponents = ReedSolomonGenerator(degree: 7).coefficients.map { GaloisField.log[Int($0)] }
        #expect(exponents == [87, 229, 146, 149, 238, 102, 21])
    }

    @Test func fieldArithmetic() {
        #expect(GaloisField.exp[8] == 0x1D)  // α^8 = x^4 + x^3 + x^2 + 1
        #expect(GaloisField.exp[255] == 1)
        #expect(GaloisField.multiply(0x80, 2) == 0x1D)
        #expect(GaloisField.multiply(0, 0x53) == 0)
        for a in 1...255 {
            #expect(GaloisField.multiply(UInt8(a), 1) == UInt8(a))
        }
    }

    /// A codeword block with its error correction is a multiple of the generator: its syndromes at α^0…α^(n-1)
    /// are zero. Checked for the block sizes of table 9.
    @Test(arguments: [7, 10, 13, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30])
    func codewordsAreMultiplesOfTheGenerator(degree: Int) {
        let data = (0..<50).map { UInt8(($0 * 37 + degree) % 256) }
        let block = data + ReedSolomonGenerator(degree: degree).remainder(of: data)
        for i in 0..<degree {
            let root = GaloisField.exp[i]
            let value = block.reduce(UInt8(0)) { GaloisField.multiply($0, root) ^ $1 }
            #expect(value == 0, "syndrome \(i)")
        }
    }
}

@Suite struct FormatAndVersionInformation {
    /// Annex C, table C.1: the 32 format information bit strings, per level, masks 0 to 7.
    @Test(arguments: [
        (
            QRCode.ErrorCorrection.low,
            [
                "111011111000100", "111001011110011", "111110110101010", "111100010011101",
                "110011000101111", "110001100011000", "110110001000001", "110100101110110",
            ]
        ),
        (
            .medium,
            [
                "101010000010010", "101000100100101", "101111001111100", "101101101001011",
                "100010111111001", "100000011001110", "100111110010111", "100101010100000",
            ]
        ),
        (
            .quartile,
            [
                "011010101011111", "011000001101000", "011111100110001", "011101000000110",
                "010010010110100", "010000110000011", "010111011011010", "010101111101101",
            ]
        ),
        (
            .high,
            [
                "001011010001001", "001001110111110", "001110011100111", "001100111010000",
                "000011101100010", "000001001010101", "000110100001100", "000100000111011",
            ]
        ),
    ])
    func formatInformation(correction: QRCode.ErrorCorrection, expected: [String]) {
        let bits = (0..<8).map { binary(SymbolMatrix.formatInformation(correction: correction, mask: $0), width: 15) }
        #expect(bits == expected)
    }

    /// Annex D, table D.1: the version information bit strings of versions 7 to 40.
    @Test func versionInformation() {
        let expected = [
            "000111110010010100", "001000010110111100", "001001101010011001", "001010010011010011",
            "001011101111110110", "001100011101100010", "001101100001000111", "001110011000001101",
            "001111100100101000", "010000101101111000", "010001010001011101", "010010101000010111",
            "010011010100110010", "010100100110100110", "010101011010000011", "010110100011001001",
            "010111011111101100", "011000111011000100", "011001000111100001", "011010111110101011",
            "011011000010001110", "011100110000011010", "011101001100111111", "011110110101110101",
            "011111001001010000", "100000100111010101", "100001011011110000", "100010100010111010",
            "100011011110011111", "100100101100001011", "100101010000101110", "100110101001100100",
            "100111010101000001", "101000110001101001",
        ]
        let bits = (7...40).map { binary(SymbolMatrix.versionInformation(version: $0), width: 18) }
        #expect(bits == expected)
    }

    /// Where the format information goes (7.9.1): in a version 1 symbol at M with mask 0
    /// (101010000010010, bit 14 first), read back from both copies; and the dark module at (8, 4V + 9).
    @Test func formatInformationPlacement() throws {
        let code = try QRCode(bytes: [0x61], correction: .medium, version: 1, mask: 0)
        let bit = { (i: Int) in (0b101_0100_0001_0010 >> i) & 1 == 1 }
        let size = code.size
        // First copy: bits 0–5 at (8, 0…5), 6 at (8, 7), 7 at (8, 8), 8 at (7, 8), 9–14 at (5…0, 8).
        let first =
            [(8, 0), (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 7), (8, 8), (7, 8)] + (0..<6).map { (5 - $0, 8) }
        // Second copy: bits 0–7 at (size-1…size-8, 8), 8–14 at (8, size-7…size-1).
        let second = (0..<8).map { (size - 1 - $0, 8) } + (0..<7).map { (8, size - 7 + $0) }
        for (i, (x, y)) in first.enumerated() {
            #expect(code[x, y] == bit(i), "first copy, bit \(i)")
        }
        for (i, (x, y)) in second.enumerated() {
            #expect(code[x, y] == bit(i), "second copy, bit \(i)")
        }
        #expect(code[8, size - 8])
    }

    /// Where the version information goes (7.10), version 7 (000111110010010100): bit 0 at
    /// (size-11, 0) and (0, size-11), bit 17 at (size-9, 5) and (5, size-9).
    @Test func versionInformationPlacement() throws {
        let code = try QRCode(bytes: Array(repeating: 0x61, count: 100), correction: .medium, version: 7, mask: 3)
        let bits = 0b00_0111_1100_1001_0100
        for i in 0..<18 {
            let across = code.size - 11 + i % 3
            let along = i / 3
            #expect(code[across, along] == ((bits >> i) & 1 == 1), "top right, bit \(i)")
            #expect(code[along, across] == ((bits >> i) & 1 == 1), "bottom left, bit \(i)")
        }
    }

    private func binary(_ value: Int, width: Int) -> String {
        let digits = String(value, radix: 2)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

@Suite struct Tables {
    /// Table 1's remainder bits per version: the modules left over after all codewords.
    private static func remainderBits(version: Int) -> Int {
        switch version {
        case 1: 0
        case 2...6: 7
        case 7...13: 0
        case 14...20: 3
        case 21...27: 4
        case 28...34: 3
        default: 0
        }
    }

    /// Every row of table 9 fills exactly the modules its version leaves for codewords, whatever the level, and
    /// group 2's blocks carry one data codeword more than group 1's.
    @Test(arguments: 1...40)
    func blockTableFillsTheSymbol(version: Int) {
        let dataModules = SymbolMatrix(version: version, codewords: []).dataModuleCount
        for correction in QRCode.ErrorCorrection.allCases {
            let layout = BlockLayout(version: version, correction: correction)
            #expect(dataModules - layout.totalCodewords * 8 == Self.remainderBits(version: version), "\(correction)")
            #expect(layout.group1Blocks >= 1)
            #expect(layout.ecCodewordsPerBlock >= 7 && layout.ecCodewordsPerBlock <= 30)
            if layout.group2Blocks > 0 {
                #expect(layout.group2DataCodewordsPerBlock == layout.group1DataCodewordsPerBlock + 1)
            }
        }
    }

    /// The levels' error correction grows from L to H in every version.
    @Test(arguments: 1...40)
    func strongerLevelsHoldLess(version: Int) {
        let capacities = [QRCode.ErrorCorrection.low, .medium, .quartile, .high].map {
            BlockLayout(version: version, correction: $0).dataCodewords
        }
        #expect(capacities == capacities.sorted(by: >) && Set(capacities).count == 4)
    }

    /// Table E.1 against the rule it follows: 6, then evenly spaced (by an even step) up to size − 7, the first gap
    /// taking up any slack.
    @Test(arguments: 1...40)
    func alignmentPatternCentersFollowTheRule(version: Int) {
        var expected: [Int] = []
        if version > 1 {
            let count = version / 7 + 2
            let step = (version * 8 + count * 3 + 5) / (count * 4 - 4) * 2
            let size = 17 + 4 * version
            expected = [6] + (0..<count - 1).map { size - 7 - $0 * step }.reversed()
        }
        #expect(alignmentPatternCenters[version - 1] == expected)
    }
}

@Suite struct Masking {
    /// The penalty points (7.8.3) of each of the eight finished symbols, as qrcode scores them.
    @Test(arguments: Fixtures.all)
    func penaltiesOfEveryMask(_ fixture: Fixture) throws {
        let penalties = try (0..<8).map { mask in
            let code = try QRCode(
                bytes: Array(fixture.text.utf8),
                correction: fixture.correction,
                version: fixture.version,
                mask: mask
            )
            return SymbolMatrix.penalty(size: code.size, modules: code.modules)
        }
        #expect(penalties == fixture.penalties)
    }

    /// All light, 5 × 5: rule 1, 10 runs of 5 (3 points each); rule 2, 16 blocks of 2 × 2 (3 each); rule 4, 0 %
    /// dark, 10 steps of 5 % (10 each). 30 + 48 + 100.
    @Test func penaltyOfAllLight() {
        #expect(SymbolMatrix.penalty(size: 5, modules: Array(repeating: false, count: 25)) == 178)
    }

    /// A 6 × 6 checkerboard: no runs, no blocks, no finder-like pattern, exactly half dark.
    @Test func penaltyOfCheckerboard() {
        #expect(SymbolMatrix.penalty(size: 6, modules: (0..<36).map { ($0 % 6 + $0 / 6) % 2 == 0 }) == 0)
    }

    /// Rules 1 and 3 alone: an 11 × 11 checkerboard whose top row is 10111010000 and whose left column is all dark
    /// (65 of 121 modules dark, 53.7 %: under 55 %, so no rule 4 points). qrcode's lost_point agrees: 9 + 0 + 40 + 0.
    @Test func penaltyRulesOneThreeAndFour() {
        var modules = (0..<121).map { ($0 % 11 + $0 / 11) % 2 == 0 }
        for (x, bit) in "10111010000".enumerated() {
            modules[x] = bit == "1"
        }
        for y in 0..<11 {
            modules[y * 11] = true
        }
        // Column 0: one dark run of 11 (9 points). Row 0: 10111010000 (40 points) and its run of 4 light at the
        // end, too short for rule 1. Rule 2: the top two rows hold no 2 × 2 block of one colour (row 1 alternates).
        #expect(SymbolMatrix.penalty(size: 11, modules: modules) == 9 + 40)
    }

    /// Table 10's conditions on a few modules (i = row = y, j = column = x).
    @Test func maskConditions() {
        #expect(SymbolMatrix.maskInverts(0, x: 1, y: 1))
        #expect(!SymbolMatrix.maskInverts(0, x: 1, y: 0))
        #expect(SymbolMatrix.maskInverts(1, x: 5, y: 2))
        #expect(!SymbolMatrix.maskInverts(1, x: 2, y: 5))
        #expect(SymbolMatrix.maskInverts(2, x: 3, y: 1))
        #expect(!SymbolMatrix.maskInverts(2, x: 1, y: 3))
        #expect(SymbolMatrix.maskInverts(3, x: 1, y: 2))
        #expect(SymbolMatrix.maskInverts(4, x: 3, y: 2))
        #expect(!SymbolMatrix.maskInverts(4, x: 3, y: 4))
        #expect(SymbolMatrix.maskInverts(5, x: 6, y: 1))
        #expect(!SymbolMatrix.maskInverts(5, x: 2, y: 1))
        #expect(SymbolMatrix.maskInverts(6, x: 2, y: 1))
        #expect(!SymbolMatrix.maskInverts(6, x: 3, y: 1))
        #expect(SymbolMatrix.maskInverts(7, x: 0, y: 0))
        #expect(!SymbolMatrix.maskInverts(7, x: 1, y: 0))
    }

    /// Each of the eight masks gives a different symbol, with the same function patterns: the finder pattern's
    /// corner and the timing pattern do not change.
    @Test func masksOnlyTouchData() throws {
        let codes = try (0..<8).map { try QRCode(bytes: [0x61], correction: .medium, version: 1, mask: $0) }
        #expect(Set(codes.map(\.modules)).count == 8)
        for code in codes {
            #expect(code[0, 0] && code[6, 6] && !code[7, 7] && code[8, 6] && !code[9, 6] && code[6, 12])
        }
    }
}

@Suite struct TerminalRendering {
    /// A 3 × 3 matrix, dark where x == y or y == 2:
    ///     1 0 0
    ///     0 1 0
    ///     1 1 1
    private static func diagonal(_ x: Int, _ y: Int) -> Bool { x == y || y == 2 }

    @Test func halfBlocksWithoutQuietZone() {
        let lines = QRCode.halfBlockLines(size: 3, quietZone: 0, inverted: false, isDark: Self.diagonal)
        #expect(lines == ["▀▄ ", "▀▀▀"])
    }

    @Test func halfBlocksWithQuietZone() {
        let lines = QRCode.halfBlockLines(size: 3, quietZone: 1, inverted: false, isDark: Self.diagonal)
        #expect(lines == [" ▄   ", " ▄█▄ ", "     "])
        #expect(lines.allSatisfy { $0.count == 5 })
    }

    @Test func invertedPrintsTheLightModulesAndQuietZone() {
        let lines = QRCode.halfBlockLines(size: 3, quietZone: 1, inverted: true, isDark: Self.diagonal)
        #expect(lines == ["█▀███", "█▀ ▀█", "▀▀▀▀▀"])
    }

    /// Version 1 (21 modules) with the default quiet zone of 2: 25 columns, 13 lines; the second line holds the
    /// top two rows of the finder patterns (a full dark row above a dark–light×5–dark row).
    @Test func realSymbol() throws {
        let code = try QRCode(encoding: "a")
        let lines = code.terminalLines()
        #expect(lines.count == 13)
        #expect(lines.allSatisfy { $0.count == 25 })
        #expect(lines[0] == String(repeating: " ", count: 25))
        #expect(lines[12] == String(repeating: " ", count: 25))
        #expect(Array(lines[1].prefix(10)) == Array("  █▀▀▀▀▀█ "))
        #expect(Array(lines[1].suffix(10)) == Array(" █▀▀▀▀▀█  "))

        let inverted = code.terminalLines(inverted: true)
        #expect(inverted.count == 13)
        #expect(inverted[0] == String(repeating: "█", count: 25))
        #expect(inverted[12] == String(repeating: "▀", count: 25))
        #expect(Array(inverted[1].prefix(10)) == Array("██ ▄▄▄▄▄ █"))

        let wide = code.terminalLines(quietZone: 4)
        #expect(wide.count == 15 && wide.allSatisfy { $0.count == 29 })
        #expect(code.terminalLines(quietZone: 0).count == 11)
    }
}
