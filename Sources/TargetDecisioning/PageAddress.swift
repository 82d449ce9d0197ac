import PreflightProtocol

/// A page or referring address as rules see it: `page.url`, `page.path`, `page.query`,
/// `page.fragment`, `page.subdomain`, `page.domain`, `page.topLevelDomain` and a lowercase `_lc`
/// copy of each (contextProvider.js `createUrlContext`).
///
/// The URL is split as the `parse-uri` package splits it in its loose mode (what target-tools'
/// `parseURI` runs), and the host by the Public Suffix List (`parseDomainPsl`).
struct PageAddress: Equatable {
    var url = ""
    var path = ""
    var query = ""
    var fragment = ""
    var subdomain = ""
    var domain = ""
    var topLevelDomain = ""

    static let empty = PageAddress()

    init() {}

    init(url: String) {
        self.url = url
        let parts = PageAddress.looseParts(Array(url.unicodeScalars))
        path = parts.path
        query = parts.query
        fragment = parts.anchor
        (subdomain, domain, topLevelDomain) = PublicSuffixList.shared.split(host: parts.host)
    }

    /// The address as the rules' context holds it, in the Node.js engine's member order.
    var json: JSONValue {
        let fields = [
            ("url", url), ("path", path), ("query", query), ("fragment", fragment), ("subdomain", subdomain),
            ("domain", domain), ("topLevelDomain", topLevelDomain),
        ]
        var object = JSONObject()
        for (key, value) in fields { object[key] = .string(value) }
        for (key, value) in fields { object[key + "_lc"] = .string(value.lowercased()) }
        return .object(object)
    }

    /// `parse-uri`'s loose expression, step by step:
    /// `^(?:(?![^:@]+:[^:@\/]*@)([^:\/?#.]+):)?(?:\/\/)?((?:(([^:@]*)(?::([^:@]*))?)?@)?([^:\/?#]*)`
    /// `(?::(\d*))?)(((\/(?:[^?#](?![^?#\/]*\.[^?#\/.]+(?:[?#]|$)))*\/?)?([^?#\/]*))(?:\?([^#]*))?(?:#(.*))?)`.
    /// Only the host, path, query and anchor are kept.
    static func looseParts(_ s: [Unicode.Scalar]) -> (host: String, path: String, query: String, anchor: String) {
        var index = 0
        if !startsWithUserInfo(s), let colon = s.firstIndex(where: { ":/?#.".unicodeScalars.contains($0) }),
            colon > 0, s[colon] == ":"
        {
            index = colon + 1
        }
        if index + 1 < s.count, s[index] == "/", s[index + 1] == "/" { index += 2 }
        index = afterUserInfo(s, index)
        let hostStart = index
        while index < s.count, !":/?#".unicodeScalars.contains(s[index]) { index += 1 }
        let host = text(s, hostStart, index)
        if index < s.count, s[index] == ":" {
            index += 1
            while index < s.count, s[index].value >= 0x30, s[index].value <= 0x39 { index += 1 }
        }
        let pathStart = index
        if index < s.count, s[index] == "/" {
            while index < s.count, s[index] != "?", s[index] != "#" { index += 1 }
        } else {
            while index < s.count, !"?#/".unicodeScalars.contains(s[index]) { index += 1 }
        }
        let path = text(s, pathStart, index)
        var query = ""
        if index < s.count, s[index] == "?" {
            let start = index + 1
            index = start
            while index < s.count, s[index] != "#" { index += 1 }
            query = text(s, start, index)
        }
        var anchor = ""
        if index < s.count, s[index] == "#" {
            let start = index + 1
            index = start
            while index < s.count, !"\n\r\u{2028}\u{2029}".unicodeScalars.contains(s[index]) { index += 1 }
            anchor = text(s, start, index)
        }
        return (host, path, query, anchor)
    }

    /// The protocol's negative lookahead `(?![^:@]+:[^:@\/]*@)`: a `user:password@` start is not a
    /// protocol.
    private static func startsWithUserInfo(_ s: [Unicode.Scalar]) -> Bool {
        guard let first = s.firstIndex(where: { $0 == ":" || $0 == "@" }), first > 0, s[first] == ":" else {
            return false
        }
        guard let next = s[(first + 1)...].firstIndex(where: { $0 == ":" || $0 == "@" || $0 == "/" }) else {
            return false
        }
        return s[next] == "@"
    }

    /// Skips `user@` or `user:password@` when it stands at `index` (`[^:@]*` runs, so a `/` or `?`
    /// before an `@` counts as user information, as it does in parse-uri).
    private static func afterUserInfo(_ s: [Unicode.Scalar], _ index: Int) -> Int {
        var end = index
        while end < s.count, s[end] != ":", s[end] != "@" { end += 1 }
        if end < s.count, s[end] == "@" { return end + 1 }
        guard end < s.count, s[end] == ":" else { return index }
        end += 1
        while end < s.count, s[end] != ":", s[end] != "@" { end += 1 }
        return end < s.count && s[end] == "@" ? end + 1 : index
    }

    private static func text(_ s: [Unicode.Scalar], _ start: Int, _ end: Int) -> String {
        var result = ""
        result.unicodeScalars.append(contentsOf: s[start..<end])
        return result
    }
}
