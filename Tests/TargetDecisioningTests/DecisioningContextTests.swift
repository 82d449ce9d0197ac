import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// What rules see of a request. Expected values come from the JavaScript the Node.js engine runs,
/// evaluated with node 20: target-tools' user agent expressions, the `parse-uri` loose expression, and
/// Debian's node-psl 1.8.0 (the `psl` package the Node.js SDK uses).
@Suite struct DecisioningContextTests {
    @Test(
        arguments: [
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_3) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/80.0.3987.163 Safari/537.36",
                "chrome", 80.0, "mac"
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:73.0) Gecko/20100101 Firefox/73.0", "firefox", 73,
                "mac"
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_3) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0.5 Safari/605.1.15",
                "safari", 13, "mac"
            ),
            ("Mozilla/5.0 (Windows NT 10.0; Trident/7.0; rv:11.0) like Gecko", "ie", 11, "windows"),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/91.0.4472.124 Safari/537.36 Edg/91.0.864.59",
                "edge", 91, "windows"
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 13_2_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.0.3 Mobile/15E148 Safari/604.1",
                "mobile safari", 13, "iOS"
            ),
            (
                "Mozilla/5.0 (Linux; Android 9; SHIELD Android TV Build/PPR1.180610.011; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/74.0.3729.186 Mobile Safari/537.36",
                "safari", 4, "Android"
            ),
            (
                "Mozilla/5.0 (SMART-TV; Linux; Tizen 5.0) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/2.2 Chrome/63.0.3239.84 TV Safari/537.36",
                "chrome", 63, "unknown"
            ),
            ("Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)", "ie", 10, "windows"),
            (
                "Mozilla/5.0 (X11; CrOS x86_64 13597.84.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/88.0.4324.186 Safari/537.36",
                "chrome", 88, "Unix"
            ),
            (
                "Mozilla/5.0 (Windows NT 6.1; WOW64; Trident/7.0; rv:11.0) like Gecko rv:12.0 like Gecko", "ie", 12,
                "windows"
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:89.0) Gecko/20100101 Firefox/89.0 extra", "unknown", -1,
                "windows"
            ),
            ("Mozilla/5.0 Version/1mobile/x safari", "safari", 1, "unknown"),
            ("Roku/DVP-9.10 (519.10E04111A)", "unknown", -1, "unknown"),
        ] as [(String, String, Double, String)]
    )
    func readsTheBrowserAndPlatformFromTheUserAgent(
        _ agent: String,
        _ browser: String,
        _ version: Double,
        _ platform: String
    ) {
        let parsed = UserAgent(userAgent: agent, clientHints: nil)
        #expect(parsed.browserType == browser)
        #expect(parsed.browserVersion == version)
        #expect(parsed.platform == platform)
    }

    @Test func aVersionThatIsNotANumberIsNaN() {
        #expect(UserAgent(userAgent: "Mozilla/5.0 (Macintosh) Chrome/v", clientHints: nil).browserVersion.isNaN)
        #expect(UserAgent(userAgent: "Mozilla/5.0 (Macintosh) Chrome/v9", clientHints: nil).browserVersion == 9)
    }

    @Test func clientHintsOverrideTheUserAgent() {
        let hints = UserAgent.BrowserHints(
            fullVersionList: #""Chromium";v="110.0.5481.77", "Google Chrome";v="110.0.5481.77""#,
            majorVersionList: nil,
            platform: .some("macOS")
        )
        let parsed = UserAgent(userAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/90.0", clientHints: hints)
        #expect(parsed.browserType == "chrome")
        #expect(parsed.browserVersion == 110)
        #expect(parsed.platform == "mac")
        let nullPlatform = UserAgent.BrowserHints(platform: .some(nil))
        #expect(UserAgent(userAgent: "Mozilla/5.0 (Windows NT 10.0)", clientHints: nullPlatform).platform == nil)
    }

    @Test(arguments: [
        ("http://local-target-test:8080/home?bar=true#hello", "local-target-test", "/home", "bar=true", "hello"),
        ("https://www.adobe.com/a/b.html/c?x=1&y=2#frag", "www.adobe.com", "/a/b.html/c", "x=1&y=2", "frag"),
        ("www.adobe.com/path/file.html", "www.adobe.com", "/path/file.html", "", ""),
        ("localhost:8080/x", "8080", "/x", "", ""),
        ("//cdn.example.com/lib.js", "cdn.example.com", "/lib.js", "", ""),
        ("http://user:pass@host.com:81/p", "host.com", "/p", "", ""),
        ("http://host.com/p?q=a@b", "b", "", "", ""),
        ("http://a@b@c.com/x", "b@c.com", "/x", "", ""),
        ("http://host:abc/def?q#a", "host", "abc", "", ""),
        ("mailto:someone@example.com", "example.com", "", "", ""),
        ("/relative/path?x#y", "", "/relative/path", "x", "y"),
        ("http://host/p#a#b?c", "host", "/p", "", "a#b?c"),
        ("http://[::1]:8080/x", "[", ":1]:8080", "", ""),
        ("http://host.com/path with spaces/é?ü=1#ß", "host.com", "/path with spaces/é", "ü=1", "ß"),
        ("", "", "", "", ""),
    ])
    func splitsAddressesAsParseURIDoes(_ url: String, _ host: String, _ path: String, _ query: String, _ anchor: String)
    {
        let parts = PageAddress.looseParts(Array(url.unicodeScalars))
        #expect(parts.host == host)
        #expect(parts.path == path)
        #expect(parts.query == query)
        #expect(parts.anchor == anchor)
    }

    @Test(arguments: [
        ("local-target-test", "", "local-target-test", ""),
        ("WWW.Adobe.COM", "", "adobe.com", "com"),
        ("pied.piper.decentralized.test.hooli.com", "pied.piper.decentralized.test", "hooli.com", "com"),
        (
            "test.wayne-enterprises.us-east-1.elasticbeanstalk.com", "test",
            "wayne-enterprises.us-east-1.elasticbeanstalk.com", "us-east-1.elasticbeanstalk.com"
        ),
        ("a.b.c.bbc.co.uk", "a.b.c", "bbc.co.uk", "co.uk"),
        ("foo.city.kawasaki.jp", "foo", "city.kawasaki.jp", "kawasaki.jp"),
        ("bar.foo.kawasaki.jp", "", "bar.foo.kawasaki.jp", "foo.kawasaki.jp"),
        ("x.www.ck", "x", "www.ck", "ck"),
        ("127.0.0.1", "", "127.0.0.1", ""),
        ("example.local", "", "example.local", ""),
        ("my_host.com", "", "my_host.com", ""),
        ("co.uk", "", "co.uk", ""),
        ("wwwtest.example.com", "est", "example.com", "com"),
        ("foo.xn--fiqs8s", "", "foo.xn--fiqs8s", "中国"),
        ("www.例子.中国", "", "例子.中国", "中国"),
        ("shop.münchen.de", "shop", "münchen.de", "de"),
        ("a.xn--mnchen-3ya.de", "a", "xn--mnchen-3ya.de", "de"),
        ("example.com.", "", "example.com", "com"),
        ("a.b.github.io", "a", "b.github.io", "github.io"),
    ])
    func splitsHostsByThePublicSuffixList(_ host: String, _ subdomain: String, _ domain: String, _ topLevel: String) {
        let parts = PublicSuffixList.shared.split(host: host)
        #expect(parts.subdomain == subdomain)
        #expect(parts.domain == domain)
        #expect(parts.topLevelDomain == topLevel)
    }

    @Test func encodesInternationalLabelsWithPunycode() {
        #expect(Punycode.asciiDomain("münchen.de") == "xn--mnchen-3ya.de")
        #expect(Punycode.asciiDomain("例子.中国") == "xn--fsqu00a.xn--fiqs8s")
        #expect(Punycode.asciiDomain("adobe.com") == "adobe.com")
    }

    @Test func pageContextHasLowercaseCopies() {
        let page = PageAddress(url: "HTTP://Shop.Example.COM/Cart?ID=7#Top").json
        #expect(page["url"] == "HTTP://Shop.Example.COM/Cart?ID=7#Top")
        #expect(page["url_lc"] == "http://shop.example.com/cart?id=7#top")
        #expect(page["subdomain"] == "shop")
        #expect(page["domain"] == "example.com")
        #expect(page["path_lc"] == "/cart")
        #expect(page.objectValue?.keys.count == 14)
    }

    @Test(arguments: [
        // 2020-03-25 01:05 UTC, a Wednesday (NOTIFICATIONS' mockDate).
        (1_585_098_300_000 as Int64, "0105", 3),
        // 2021-02-07 23:59:59.999 UTC, a Sunday: day 7, not 0.
        (1_612_742_399_999, "2359", 7),
        // 2021-02-08 00:00 UTC, a Monday.
        (1_612_742_400_000, "0000", 1),
        // Before the epoch: 1969-12-31 23:59 UTC, a Wednesday.
        (-60_000, "2359", 3),
    ])
    func timingIsUTCWithMondayAsDayOne(_ now: Int64, _ time: String, _ day: Int) {
        let context = RequestContext(nowMs: now, context: JSONObject(), geo: JSONObject())
        #expect(context.timestamp == now)
        #expect(context.time == time)
        #expect(context.day == day)
    }

    @Test func parametersAreUnflattenedWithLowercaseStringCopies() throws {
        let parameters = try JSONReader.read(
            #"{"favorite.color":"Red","favorite.size":3,"a..b":"x",".c":"y","d.":"z","Plain":"ABC","n":1}"#
        )
        let mbox = DetailContext.parameters(parameters.objectValue!)
        #expect(
            JSONValue.object(mbox)
                == (try JSONReader.read(
                    #"{"favorite":{"color":"Red","size":3,"color_lc":"red"},"a..b":"x",".c":"y","d.":"z","Plain":"ABC","n":1,"a..b_lc":"x",".c_lc":"y","d._lc":"z","Plain_lc":"abc"}"#
                ))
        )
    }

    @Test func geoContextRenamesTheRequestsFields() {
        let context = RequestContext(
            nowMs: 0,
            context: JSONObject(),
            geo: [
                "countryCode": "US", "stateCode": "CA", "city": "SAN FRANCISCO", "latitude": 37.75,
                "ipAddress": "1.2.3.4",
            ]
        )
        #expect(context.geo == ["country": "US", "region": "CA", "city": "SAN FRANCISCO", "latitude": 37.75])
    }

    @Test func varReadsTheRuleContext() throws {
        let request = RequestContext(
            nowMs: 1_585_098_300_000,
            context: ["address": ["url": "https://shop.example.com/cart"], "userAgent": "Firefox/73.0"],
            geo: ["city": "PARIS"]
        )
        let detail = DetailContext(request: request, detail: ["parameters": ["tier": "Gold"]])
        let context = RuleContext(detail: detail, allocation: 42.5)
        func value(_ path: String) -> JSONValue? {
            context.lookup(VariablePath(.string(path)))
        }
        #expect(value("allocation") == .number(42.5))
        #expect(value("page.domain") == "example.com")
        #expect(value("mbox.tier_lc") == "gold")
        #expect(value("geo.city") == "PARIS")
        #expect(value("user.browserType") == "firefox")
        #expect(value("current_time") == "0105")
        #expect(value("current_day") == 3)
        #expect(value("nothing.here") == nil)
        #expect(context.wholeValue?["allocation"] == .number(42.5))
    }

    @Test func theCacheAnswersAsTheParserAndStaysBounded() {
        let cache = ContextCache()
        var made = 0
        for round in 0..<2 {
            for index in 0..<(ContextCache.limit + 5) {
                let value = cache.user(key: "agent \(index)") {
                    made += 1
                    return .string("user \(index)")
                }
                #expect(value == .string("user \(index)"), "round \(round)")
            }
        }
        #expect(made > ContextCache.limit + 5)  // emptied when full, so some were made again
        #expect(cache.page(url: "https://www.adobe.com/x") == PageAddress(url: "https://www.adobe.com/x").json)
    }
}
