/// The browser and platform a request's user agent (or client hints) names, as Adobe's engines give
/// them to rules as `user.browserType`, `user.browserVersion` and `user.platform`.
///
/// The Node.js engine matches target-tools' regular expressions in order (clientInfo.js) and maps the
/// platform to Target's names (contextProvider.js). Each expression is matched here by hand over
/// UTF-16 code units, with the same leftmost-first and backtracking results as JavaScript's `match`
/// for these patterns: a request pays for no regular-expression engine.
struct UserAgent: Equatable {
    /// Lowercased browser name: "chrome", "firefox", "safari", "mobile safari", "edge", "ie", "unknown".
    let browserType: String
    /// The major version, NaN when the matched version does not start with digits, -1 when unknown.
    let browserVersion: Double
    /// "mac", "windows", "linux", "iOS", "Android", "Unix", "unknown", or the client hints' platform.
    let platform: String?

    private static let unknown = "unknown"

    init(userAgent: String, clientHints: BrowserHints?) {
        let units = Array(userAgent.utf16)
        var browser = UserAgent.browser(units)
        if let hint = clientHints?.fullVersionList ?? clientHints?.majorVersionList {
            let hinted = UserAgent.hintedBrowser(Array(hint.utf16))
            if hinted.name != UserAgent.unknown { browser.name = hinted.name }
            if hinted.version >= 0 { browser.version = hinted.version }
        }
        browserType = browser.name.lowercased()
        browserVersion = browser.version
        let platform = clientHints?.platform ?? .some(UserAgent.operatingSystem(units))
        self.platform = platform.map { UserAgent.targetPlatforms[$0] ?? $0 }
    }

    /// The client hints that replace the user agent's answers (`context.clientHints`).
    struct BrowserHints: Equatable {
        var fullVersionList: String?
        var majorVersionList: String?
        /// `.some(nil)` when the request sends `"platform": null`.
        var platform: String??
    }

    private static let targetPlatforms = [
        "Windows": "windows", "Macintosh": "mac", "Mac OS": "mac", "macOS": "mac", "Linux": "linux",
    ]

    // MARK: Browser (browserFromUserAgent)

    private static func browser(_ s: [UInt16]) -> (name: String, version: Double) {
        if let version = edge(s) { return ("Edge", major(version)) }
        if let version = versionThenSafari(s, mobileOnly: true) { return ("Mobile Safari", major(version)) }
        if let version = versionThenSafari(s, mobileOnly: false) { return ("Safari", major(version)) }
        if let version = chrome(s) { return ("Chrome", major(version)) }
        if let version = firefox(s) { return ("Firefox", major(version)) }
        if let version = msie(s) { return ("IE", major(version)) }
        if let version = trident(s) { return ("IE", major(version)) }
        return (unknown, -1)
    }

    /// `withVersion`: an empty version is "-1"; the major version is `parseInt` of what precedes the
    /// first dot.
    private static func major(_ version: ArraySlice<UInt16>) -> Double {
        let text = version.isEmpty ? "-1" : String(decoding: version, as: UTF16.self)
        let head = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return JavaScript.parseInt(String(head))
    }

    /// `/(edge|edgios|edga|edg)\/((\d+)?[\w.]+)/i`
    private static func edge(_ s: [UInt16]) -> ArraySlice<UInt16>? {
        for start in s.indices where matches(s, start, "edg") {
            for suffix in ["e/", "ios/", "a/", "/"] where matches(s, start + 3, suffix) {
                let from = start + 3 + suffix.utf16.count
                let end = run(s, from, isWordOrDot)
                if end > from { return s[from..<end] }
            }
        }
        return nil
    }

    /// `/version\/([\w.]+).+?mobile\/\w+\s(safari)/i` (`mobileOnly`) and
    /// `/version\/([\w.]+).+?(mobile\s?safari|safari)/i`.
    private static func versionThenSafari(_ s: [UInt16], mobileOnly: Bool) -> ArraySlice<UInt16>? {
        let tail = mobileOnly ? mobileSafariTail : safariTail
        for start in s.indices where matches(s, start, "version/") {
            let from = start + 8
            if let end = lazyGapThenTail(s, groupFrom: from, tail) { return s[from..<end] }
        }
        return nil
    }

    /// Where a greedy `[\w.]+` group starting at `from` ends when followed by `.+?` and `tail`: the
    /// longest group that leaves room for at least one character, free of line terminators, before
    /// some place `tail` matches. nil when there is none.
    private static func lazyGapThenTail(
        _ s: [UInt16],
        groupFrom from: Int,
        _ tail: ([UInt16], Int) -> Bool
    ) -> Int? {
        let runEnd = run(s, from, isWordOrDot)
        guard runEnd > from else { return nil }
        var lastTail: Int?
        var position = from + 1
        while position <= s.count {
            if position > runEnd, isLineTerminator(s[position - 1]) { break }
            if tail(s, position) { lastTail = position }
            position += 1
        }
        guard let lastTail else { return nil }
        let end = min(runEnd, lastTail - 1)
        return end > from ? end : nil
    }

    /// `mobile\/\w+\s(safari)`
    private static func mobileSafariTail(_ s: [UInt16], _ at: Int) -> Bool {
        guard matches(s, at, "mobile/") else { return false }
        let wordEnd = run(s, at + 7, isWord)
        guard wordEnd > at + 7, wordEnd < s.count, isSpace(s[wordEnd]) else { return false }
        return matches(s, wordEnd + 1, "safari")
    }

    /// `(mobile\s?safari|safari)`
    private static func safariTail(_ s: [UInt16], _ at: Int) -> Bool {
        if matches(s, at, "mobile") {
            if matches(s, at + 6, "safari") { return true }
            if at + 6 < s.count, isSpace(s[at + 6]), matches(s, at + 7, "safari") { return true }
        }
        return matches(s, at, "safari")
    }

    /// `/(chrome)\/v?([\w.]+)/i`
    private static func chrome(_ s: [UInt16]) -> ArraySlice<UInt16>? {
        for start in s.indices where matches(s, start, "chrome/") {
            var from = start + 7
            if matches(s, from, "v"), run(s, from + 1, isWordOrDot) > from + 1 { from += 1 }
            let end = run(s, from, isWordOrDot)
            if end > from { return s[from..<end] }
        }
        return nil
    }

    /// `/(firefox)\/([\w.-]+)$/i`
    private static func firefox(_ s: [UInt16]) -> ArraySlice<UInt16>? {
        for start in s.indices where matches(s, start, "firefox/") {
            let from = start + 8
            let end = run(s, from) { isWordOrDot($0) || $0 == 0x2D }
            if end > from, end == s.count { return s[from..<end] }
        }
        return nil
    }

    /// `/(?:ms|\()(ie)\s([\w.]+)/i`
    private static func msie(_ s: [UInt16]) -> ArraySlice<UInt16>? {
        for start in s.indices {
            let after: Int
            if matches(s, start, "msie") {
                after = start + 4
            } else if matches(s, start, "(ie") {
                after = start + 3
            } else {
                continue
            }
            guard after < s.count, isSpace(s[after]) else { continue }
            let end = run(s, after + 1, isWordOrDot)
            if end > after + 1 { return s[(after + 1)..<end] }
        }
        return nil
    }

    /// `/(trident).+rv[:\s]([\w.]+).+like\sgecko/i`: the greedy `.+` makes the last workable `rv` win.
    private static func trident(_ s: [UInt16]) -> ArraySlice<UInt16>? {
        for start in s.indices where matches(s, start, "trident") {
            var limit = start + 7
            while limit < s.count, !isLineTerminator(s[limit]) { limit += 1 }
            var rv = limit - 1
            while rv >= start + 8 {
                defer { rv -= 1 }
                guard matches(s, rv, "rv"), rv + 2 < s.count, s[rv + 2] == 0x3A || isSpace(s[rv + 2]) else { continue }
                let from = rv + 3
                if let end = lazyGapThenTail(s, groupFrom: from, likeGecko) { return s[from..<end] }
            }
        }
        return nil
    }

    /// `like\sgecko`
    private static func likeGecko(_ s: [UInt16], _ at: Int) -> Bool {
        matches(s, at, "like") && at + 4 < s.count && isSpace(s[at + 4]) && matches(s, at + 5, "gecko")
    }

    // MARK: Client hints (browserFromClientHintsUA)

    private static func hintedBrowser(_ s: [UInt16]) -> (name: String, version: Double) {
        for name in ["Chrome", "Edge", "Safari", "Firefox"] {
            let prefix = name.lowercased() + "\";v=\""
            for start in s.indices where matches(s, start, prefix) {
                let from = start + prefix.utf16.count
                let end = run(s, from) { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
                if end > from, end < s.count, s[end] == 0x22 { return (name, major(s[from..<end])) }
            }
        }
        return (unknown, -1)
    }

    // MARK: Operating system (operatingSystemFromUserAgent)

    private static func operatingSystem(_ s: [UInt16]) -> String {
        if contains(s, "iPhone") || contains(s, "iPad") || contains(s, "iPod") { return "iOS" }
        if android(s) { return "Android" }
        if contains(s, " Linux ") { return "Linux" }
        if contains(s, "FreeBSD") || contains(s, "OpenBSD") || contains(s, "CrOS") { return "Unix" }
        if contains(s, "(Windows ") || contains(s, " Windows ") { return "Windows" }
        if contains(s, "Macintosh;") { return "Mac OS" }
        return unknown
    }

    /// `/Android [0-9.]+;/`
    private static func android(_ s: [UInt16]) -> Bool {
        let marker = Array("Android ".utf16)
        for start in s.indices where s[start...].starts(with: marker) {
            let from = start + marker.count
            let end = run(s, from) { ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E }
            if end > from, end < s.count, s[end] == 0x3B { return true }
        }
        return false
    }

    // MARK: Matching helpers

    /// Whether `literal` (lowercase ASCII) stands at `at`, ignoring ASCII case as JavaScript's `/i` does.
    private static func matches(_ s: [UInt16], _ at: Int, _ literal: String) -> Bool {
        var index = at
        for unit in literal.utf16 {
            guard index < s.count else { return false }
            var candidate = s[index]
            if candidate >= 0x41, candidate <= 0x5A { candidate += 0x20 }
            guard candidate == unit else { return false }
            index += 1
        }
        return true
    }

    private static func contains(_ s: [UInt16], _ literal: String) -> Bool {
        let needle = Array(literal.utf16)
        guard needle.count <= s.count else { return false }
        return (0...(s.count - needle.count)).contains { s[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    private static func run(_ s: [UInt16], _ from: Int, _ accepts: (UInt16) -> Bool) -> Int {
        var end = from
        while end < s.count, accepts(s[end]) { end += 1 }
        return end
    }

    /// `\w`: ASCII letters, digits and `_` (JavaScript's, without the `u` flag).
    private static func isWord(_ unit: UInt16) -> Bool {
        (unit >= 0x30 && unit <= 0x39) || (unit >= 0x41 && unit <= 0x5A) || (unit >= 0x61 && unit <= 0x7A)
            || unit == 0x5F
    }

    private static func isWordOrDot(_ unit: UInt16) -> Bool {
        isWord(unit) || unit == 0x2E
    }

    /// `\s`: JavaScript's white space and line terminators.
    private static func isSpace(_ unit: UInt16) -> Bool {
        guard let scalar = Unicode.Scalar(unit) else { return false }
        return JavaScript.isWhiteSpace(scalar)
    }

    /// What `.` does not match.
    private static func isLineTerminator(_ unit: UInt16) -> Bool {
        unit == 0x0A || unit == 0x0D || unit == 0x2028 || unit == 0x2029
    }
}
