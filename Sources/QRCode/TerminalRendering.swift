// Drawing a symbol as text for a terminal, two module rows per line with the Unicode half blocks, so that modules
// come out roughly square in a terminal font (a character cell is about twice as high as it is wide).

extension QRCode {
    /// The symbol as lines of text: each character is one module column, and covers two module rows — `█` both,
    /// `▀` the upper, `▄` the lower, a space neither. A block stands for a module printed in the terminal's text
    /// colour; a space shows the background. Every line has `size + 2 × quietZone` characters and there are
    /// `(size + 2 × quietZone + 1) / 2` lines (the last line's lower half is outside the quiet zone and is left
    /// blank).
    ///
    /// - Parameters:
    ///   - quietZone: The light margin around the symbol, in modules. The standard asks for 4 (ISO/IEC 18004:2015,
    ///     section 6.3.8), but terminals are tight, and most phone scanners read a symbol with a margin of 2 when
    ///     it is printed dark on light.
    ///   - inverted: Set it for a terminal with light text on a dark background. Scanners look for dark modules
    ///     on a light background, and blocks are printed in the text colour: on a dark terminal a block is light.
    ///     So the light modules, quiet zone included, must be the blocks, and the dark modules the (dark)
    ///     background. Without `inverted`, the dark modules are the blocks, for dark text on a light background.
    public func terminalLines(quietZone: Int = 2, inverted: Bool = false) -> [String] {
        Self.halfBlockLines(size: size, quietZone: quietZone, inverted: inverted) { x, y in self[x, y] }
    }

    /// `terminalLines` for any square of modules, `isDark(x, y)` for x and y in `0..<size`.
    static func halfBlockLines(size: Int, quietZone: Int, inverted: Bool, isDark: (Int, Int) -> Bool) -> [String] {
        precondition(quietZone >= 0, "the quiet zone cannot be negative")
        let extent = size + 2 * quietZone
        // Whether the module at (x, y) of the symbol with its quiet zone is printed as a block.
        func ink(_ x: Int, _ y: Int) -> Bool {
            let symbolX = x - quietZone
            let symbolY = y - quietZone
            let inSymbol = symbolX >= 0 && symbolX < size && symbolY >= 0 && symbolY < size
            let dark = inSymbol && isDark(symbolX, symbolY)
            return dark != inverted
        }
        var lines: [String] = []
        for top in stride(from: 0, to: extent, by: 2) {
            var line = ""
            for x in 0..<extent {
                let upper = ink(x, top)
                let lower = top + 1 < extent && ink(x, top + 1)
                switch (upper, lower) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines
    }
}
