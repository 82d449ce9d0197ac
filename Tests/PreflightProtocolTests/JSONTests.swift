import Testing

@testable import PreflightProtocol

@Suite struct JSONReaderTests {
    @Test func readsEveryValueKind() throws {
        let value = try JSONReader.read(#"{"a":[1,-2.5,true,false,null,"x"],"b":{"c":1e2},"d":""}"#)
        #expect(
            value == [
                "a": [.integer(1), .number(-2.5), true, false, nil, "x"],
                "b": ["c": .number(100)],
                "d": "",
            ]
        )
    }

    @Test func keepsMemberOrder() throws {
        let value = try JSONReader.read(#"{"z":1,"a":2,"m":3}"#)
        #expect(value.objectValue?.keys == ["z", "a", "m"])
    }

    @Test func tellsIntegersFromOtherNumbers() throws {
        #expect(try JSONReader.read("1") == .integer(1))
        #expect(try JSONReader.read("1.0") == .number(1))
        #expect(try JSONReader.read("-0") == .integer(0))
        #expect(try JSONReader.read("12345678901234567890") == .number(1.2345678901234567e19))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONReader.read(#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00\u0000""#)
        #expect(value == .string("a\"b\\c/d\n\té😀\u{0}"))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "{'a':1}", "01", "1.", ".5", "-", "tru", "nul", "\"abc", "\"\\x\"",
        "\"\\ud800\"", "\"\\udc00x\"", "{\"a\" 1}", "[1 2]", "1 2", "\"a\u{01}b\"", "NaN", "Infinity", "1e999",
    ])
    func refusesMalformedJSON(_ text: String) {
        #expect(throws: JSONReadError.self) { try JSONReader.read(text) }
    }

    @Test func refusesDuplicateKeys() {
        #expect(throws: JSONReadError.self) { try JSONReader.read(#"{"a":1,"b":2,"a":3}"#) }
    }

    @Test func refusesInvalidUTF8() throws {
        let bytes: [UInt8] = [UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\"")]
        #expect(throws: JSONReadError.self) { try JSONReader.read(bytes) }
        let overlong: [UInt8] = [UInt8(ascii: "\""), 0xC0, 0xAF, UInt8(ascii: "\"")]
        #expect(throws: JSONReadError.self) { try JSONReader.read(overlong) }
        // ASCII around the bad byte must not let the ASCII fast path skip validation.
        let hidden = Array(#""abc"#.utf8) + [0xFF] + Array(#"def""#.utf8)
        #expect(throws: JSONReadError.self) { try JSONReader.read(hidden) }
        #expect(try JSONReader.read(Array(#"["ascii","é😀"]"#.utf8)) == ["ascii", "é😀"])
    }

    @Test func refusesDeepNestingWithoutRecursingFurther() {
        let deep = String(repeating: "[", count: 20_000) + String(repeating: "]", count: 20_000)
        #expect(throws: JSONReadError.self) { try JSONReader.read(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONReader.read(fine) }
    }

    @Test func errorNamesTheOffset() {
        do {
            _ = try JSONReader.read("[1, x]")
            Issue.record("expected an error")
        } catch {
            #expect(error.offset == 4)
        }
    }
}

@Suite struct JSONWriterTests {
    @Test func writesCompactOrderedJSON() {
        let value: JSONValue = ["b": 1, "a": [true, nil, "x"], "n": .number(2.5), "i": .number(3)]
        #expect(JSONWriter.string(value) == #"{"b":1,"a":[true,null,"x"],"n":2.5,"i":3.0}"#)
    }

    @Test func escapesStrings() {
        #expect(JSONWriter.string("q\"b\\n\n\u{1}é") == #""q\"b\\n\n\u0001é""#)
    }

    @Test func escapesEveryControlCharacterAndCopiesTheRunsBetween() throws {
        for byte in UInt8(0)..<0x20 {
            let text = "ab" + String(UnicodeScalar(byte)) + "cd\"e"
            let encoded = JSONWriter.encode(.string(text))
            #expect(!encoded.contains(byte), "raw control byte \(byte) in \(encoded)")
            #expect(try JSONReader.read(encoded) == .string(text))
        }
        #expect(JSONWriter.string("") == #""""#)
        #expect(JSONWriter.string("\"") == #""\"""#)
        #expect(JSONWriter.string("plain ascii") == #""plain ascii""#)
    }

    @Test func writesIntegersAtBothEnds() throws {
        for number: Int64 in [0, 7, -7, 10, -10, 1_000_000_007, .max, .min] {
            #expect(JSONWriter.string(.integer(number)) == String(number))
            #expect(try JSONReader.read(JSONWriter.encode(.integer(number))) == .integer(number))
        }
    }

    @Test func integralNumbersStayNumbersAcrossARoundTrip() throws {
        // tools/fuzzing/regressions/integral-number-round-trip.json
        let value = try JSONReader.read(#"{"a":[-2.5e3,0.0,1E2]}"#)
        #expect(try JSONReader.read(JSONWriter.encode(value)) == value)
    }

    @Test func roundTripsThroughTheReader() throws {
        let value: JSONValue = ["s": "line\nnext \"quoted\" \u{7f} 😀", "a": [[], [:], -7, .number(0.125)]]
        #expect(try JSONReader.read(JSONWriter.encode(value)) == value)
    }
}
