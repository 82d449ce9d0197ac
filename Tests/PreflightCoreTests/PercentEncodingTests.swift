import PreflightCore
import Testing

@Suite struct PercentEncodingTests {
    @Test(arguments: [
        ("", ""),
        ("AZaz09-._~", "AZaz09-._~"),
        ("a b", "a%20b"),
        ("a+b=c&d/e?f#g", "a%2Bb%3Dc%26d%2Fe%3Ff%23g"),
        ("%", "%25"),
        ("é", "%C3%A9"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("\u{0}\u{7F}", "%00%7F"),
        ("!*'();:@$,[]", "%21%2A%27%28%29%3B%3A%40%24%2C%5B%5D"),
    ])
    func encodesAllButTheUnreservedSet(input: String, expected: String) {
        #expect(PercentEncoding.encode(input) == expected)
    }
}
