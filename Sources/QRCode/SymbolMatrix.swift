// The module matrix of a symbol: function patterns (ISO/IEC 18004:2015, section 6.3), placement of the codewords
// (7.7.3), data masking and its evaluation (7.8), format information (7.9) and version information (7.10).
// Coordinates are (x, y): column and row, from 0 at the top left.

/// A symbol's modules while it is being built: which are dark, and which belong to function patterns or to the
/// format and version information (and so are neither data nor masked).
struct SymbolMatrix {
    let version: Int
    let size: Int
    private(set) var modules: [Bool]
    private var isFunction: [Bool]

    /// The symbol of `version` with its function patterns, version information, and `codewords` placed, unmasked,
    /// with the format information areas reserved but still light.
    init(version: Int, codewords: [UInt8]) {
        self.version = version
        size = 17 + 4 * version
        modules = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)
        drawFunctionPatterns()
        drawFormatInformation(0)  // reserves the areas; each mask writes its own
        drawVersionInformation()
        placeCodewords(codewords)
    }

    subscript(x: Int, y: Int) -> Bool {
        modules[y * size + x]
    }

    /// The modules left for codewords: neither function patterns nor format or version information.
    var dataModuleCount: Int { isFunction.count(where: { !$0 }) }

    private mutating func setFunctionModule(x: Int, y: Int, dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    // MARK: Function patterns (section 6.3)

    private mutating func drawFunctionPatterns() {
        // Timing patterns (6.3.5): row 6 and column 6 alternate, dark on even coordinates. Drawn first: the
        // finder patterns and separators overwrite their ends.
        for i in 0..<size {
            setFunctionModule(x: 6, y: i, dark: i % 2 == 0)
            setFunctionModule(x: i, y: 6, dark: i % 2 == 0)
        }
        // Finder patterns (6.3.3) with their separators (6.3.4) at three corners.
        drawFinderPattern(centerX: 3, centerY: 3)
        drawFinderPattern(centerX: size - 4, centerY: 3)
        drawFinderPattern(centerX: 3, centerY: size - 4)
        // Alignment patterns (6.3.6): at each pair of the version's centre coordinates (annex E) except the three
        // on the finder patterns.
        let centers = alignmentPatternCenters[version - 1]
        for (i, centerX) in centers.enumerated() {
            for (j, centerY) in centers.enumerated() {
                let last = centers.count - 1
                let onFinder = (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0)
                if !onFinder {
                    drawAlignmentPattern(centerX: centerX, centerY: centerY)
                }
            }
        }
    }

    /// A 7 × 7 finder pattern (dark ring, light ring, dark 3 × 3 centre) and the light separator around it,
    /// clipped to the symbol.
    private mutating func drawFinderPattern(centerX: Int, centerY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = centerX + dx
                let y = centerY + dy
                guard x >= 0 && x < size && y >= 0 && y < size else { continue }
                let ring = max(abs(dx), abs(dy))
                setFunctionModule(x: x, y: y, dark: ring != 2 && ring != 4)
            }
        }
    }

    /// A 5 × 5 alignment pattern: dark ring, light ring, dark centre module.
    private mutating func drawAlignmentPattern(centerX: Int, centerY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunctionModule(x: centerX + dx, y: centerY + dy, dark: max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    // MARK: Format and version information (sections 7.9 and 7.10)

    /// The 15 format information bits (7.9.1): the level's 2 bits and the mask's 3, then 10 bits of BCH(15,5)
    /// with generator x^10 + x^8 + x^5 + x^4 + x^2 + x + 1 (0x537), all xored with 101010000010010 (0x5412) so
    /// that no combination is all light.
    static func formatInformation(correction: QRCode.ErrorCorrection, mask: Int) -> Int {
        let data = correction.formatBits << 3 | mask
        return (data << 10 | bchRemainder(data << 10, generator: 0x537)) ^ 0x5412
    }

    /// The 18 version information bits (7.10): the version's 6 bits, then 12 bits of BCH(18,6) with generator
    /// x^12 + x^11 + x^10 + x^9 + x^8 + x^5 + x^2 + 1 (0x1F25).
    static func versionInformation(version: Int) -> Int {
        version << 12 | bchRemainder(version << 12, generator: 0x1F25)
    }

    /// The remainder of the polynomial `value` over GF(2) divided by `generator`.
    private static func bchRemainder(_ value: Int, generator: Int) -> Int {
        func degree(_ polynomial: Int) -> Int { Int.bitWidth - polynomial.leadingZeroBitCount - 1 }
        var remainder = value
        while remainder != 0 && degree(remainder) >= degree(generator) {
            remainder ^= generator << (degree(remainder) - degree(generator))
        }
        return remainder
    }

    /// Writes the 15 format information bits twice (7.9.1), bit 0 the least significant: bits 0–7 down
    /// column 8 beside the top-left finder (skipping the timing row) and bits 8–14 along row 8 leftwards from
    /// column 7 (skipping the timing column); and again, bits 0–7 along row 8 leftwards from the right edge, bits
    /// 8–14 down column 8 from 7 modules above the bottom. Also the dark module at (8, 4V + 9), which is always
    /// dark.
    private mutating func drawFormatInformation(_ bits: Int) {
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        for i in 0..<6 {
            setFunctionModule(x: 8, y: i, dark: bit(i))
        }
        setFunctionModule(x: 8, y: 7, dark: bit(6))
        setFunctionModule(x: 8, y: 8, dark: bit(7))
        setFunctionModule(x: 7, y: 8, dark: bit(8))
        for i in 9..<15 {
            setFunctionModule(x: 14 - i, y: 8, dark: bit(i))
        }
        for i in 0..<8 {
            setFunctionModule(x: size - 1 - i, y: 8, dark: bit(i))
        }
        for i in 8..<15 {
            setFunctionModule(x: 8, y: size - 15 + i, dark: bit(i))
        }
        setFunctionModule(x: 8, y: size - 8, dark: true)
    }

    /// Writes the 18 version information bits twice for versions 7 and up (7.10): a 6 × 3 block
    /// above the bottom-left finder and its transpose, 3 × 6, left of the top-right finder; bit 0, the least
    /// significant, in the corner nearest the origin, then along the 3-module side.
    private mutating func drawVersionInformation() {
        guard version >= 7 else { return }
        let bits = Self.versionInformation(version: version)
        for i in 0..<18 {
            let dark = (bits >> i) & 1 == 1
            let across = size - 11 + i % 3
            let along = i / 3
            setFunctionModule(x: across, y: along, dark: dark)
            setFunctionModule(x: along, y: across, dark: dark)
        }
    }

    // MARK: Codeword placement (section 7.7.3)

    /// Places the codewords' bits, most significant first, in two-module-wide columns from the bottom right:
    /// upwards, then downwards in the next column pair to the left, and so on, skipping the vertical timing pattern
    /// and every function module. Modules left over (the remainder bits, 7.6) stay light.
    private mutating func placeCodewords(_ codewords: [UInt8]) {
        var bitIndex = 0
        let bitCount = codewords.count * 8
        var right = size - 1
        while right >= 1 {
            if right == 6 {
                right = 5
            }
            // Pairs alternate, the rightmost going up; counting the pair left of the timing column from column 5
            // keeps the alternation.
            let upward = (right + 1) & 2 == 0
            for vertical in 0..<size {
                let y = upward ? size - 1 - vertical : vertical
                for x in [right, right - 1] where !isFunction[y * size + x] && bitIndex < bitCount {
                    let byte = codewords[bitIndex >> 3]
                    modules[y * size + x] = (byte >> (7 - (bitIndex & 7))) & 1 == 1
                    bitIndex += 1
                }
            }
            right -= 2
        }
        precondition(bitIndex == bitCount, "the symbol has no room for all the codewords")
    }

    // MARK: Masking (section 7.8)

    /// Whether mask pattern `mask` inverts the module at column `x`, row `y` (7.8.2, table 10; the table's i is
    /// the row and j the column).
    static func maskInverts(_ mask: Int, x j: Int, y i: Int) -> Bool {
        switch mask {
        case 0: (i + j) % 2 == 0
        case 1: i % 2 == 0
        case 2: j % 3 == 0
        case 3: (i + j) % 3 == 0
        case 4: (i / 2 + j / 3) % 2 == 0
        case 5: (i * j) % 2 + (i * j) % 3 == 0
        case 6: ((i * j) % 2 + (i * j) % 3) % 2 == 0
        case 7: ((i + j) % 2 + (i * j) % 3) % 2 == 0
        default: preconditionFailure("QR code mask patterns are 0 to 7")
        }
    }

    /// The finished symbol: the data modules xored with mask pattern `mask`, and the format information that
    /// names the mask and the level.
    func masked(_ mask: Int, correction: QRCode.ErrorCorrection) -> SymbolMatrix {
        var result = self
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] && Self.maskInverts(mask, x: x, y: y) {
                result.modules[y * size + x].toggle()
            }
        }
        result.drawFormatInformation(Self.formatInformation(correction: correction, mask: mask))
        return result
    }

    /// The mask whose finished symbol, format information included, scores the fewest penalty points (7.8.3);
    /// the lowest-numbered one of those that tie.
    func bestMask(correction: QRCode.ErrorCorrection) -> Int {
        let penalties = (0..<8).map { masked($0, correction: correction).penalty() }
        return penalties.firstIndex(of: penalties.min()!)!
    }

    /// The penalty points of the symbol (7.8.3.1, table 11), the sum of four rules, each applied to rows and
    /// columns alike:
    /// 1. each run of 5 or more modules of one colour: 3 points, plus 1 per module beyond 5;
    /// 2. each 2 × 2 block of one colour (blocks may overlap): 3 points;
    /// 3. each 1:1:3:1:1 dark–light–dark–light–dark pattern preceded, or followed, by 4 light modules, inside the
    ///    symbol (10111010000 or 00001011101; one with light on both sides counts twice): 40 points;
    /// 4. 10 points for each full 5 % by which the share of dark modules departs from 50 %.
    func penalty() -> Int {
        Self.penalty(size: size, modules: modules)
    }

    /// `penalty()` of any square of modules, row-major, true = dark.
    static func penalty(size: Int, modules: [Bool]) -> Int {
        func dark(_ x: Int, _ y: Int) -> Bool { modules[y * size + x] }
        var points = 0
        // Rules 1 and 3 on each row (line 0) and each column (line 1).
        for line in 0..<2 {
            for a in 0..<size {
                func module(_ b: Int) -> Bool { line == 0 ? dark(b, a) : dark(a, b) }
                var runLength = 0
                var runColour = false
                for b in 0..<size {
                    if module(b) == runColour {
                        runLength += 1
                    } else {
                        if runLength >= 5 {
                            points += runLength - 2
                        }
                        runColour = module(b)
                        runLength = 1
                    }
                }
                if runLength >= 5 {
                    points += runLength - 2
                }
                var window = 0  // the last 11 modules, the newest in the lowest bit
                for b in 0..<size {
                    window = (window << 1 | (module(b) ? 1 : 0)) & 0x7FF
                    if b >= 10 && (window == 0b101_1101_0000 || window == 0b000_0101_1101) {
                        points += 40
                    }
                }
            }
        }
        // Rule 2.
        for y in 0..<size - 1 {
            for x in 0..<size - 1 {
                let colour = dark(x, y)
                if dark(x + 1, y) == colour && dark(x, y + 1) == colour && dark(x + 1, y + 1) == colour {
                    points += 3
                }
            }
        }
        // Rule 4: k = floor(|dark / total × 100 − 50| / 5), in integers.
        let darkCount = modules.count(where: { $0 })
        let total = size * size
        points += abs(darkCount * 20 - total * 10) / total * 10
        return points
    }
}
