import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// The operators json-logic-js evaluates with JavaScript's own operators. Each expected value is what
/// Node.js gives for the JavaScript expression json-logic-js runs (`a == b`, `a < b && b < c`,
/// `0 + parseFloat(a) + ...`, `String(s).substr(...)`), computed with node 20 when these were written.
@Suite struct JsonLogicTests {
    private func evaluate(_ logic: String, _ data: String = "null") throws -> JSONValue? {
        try JsonLogic(compiling: try JSONReader.read(logic)).evaluate(ValueData(value: try JSONReader.read(data)))
    }

    private func same(_ left: JSONValue?, _ right: JSONValue?) -> Bool {
        if let a = left?.doubleValue, let b = right?.doubleValue { return a == b }
        return left == right
    }

    @Test(arguments: [
        (#"{"==":[1,"1"]}"#, "true"), (#"{"==":[0,""]}"#, "true"), (#"{"==":[0,"0"]}"#, "true"),
        (#"{"==":["",false]}"#, "true"), (#"{"==":[null,0]}"#, "false"), (#"{"==":[null,null]}"#, "true"),
        (#"{"==":[true,"1"]}"#, "true"), (#"{"==":[[1,2],"1,2"]}"#, "true"), (#"{"==":[[1],1]}"#, "true"),
        (#"{"==":["1e3",1000]}"#, "true"), (#"{"==":["0x10",16]}"#, "true"), (#"{"==":[" 12 ",12]}"#, "true"),
        (#"{"==":["abc","ABC"]}"#, "false"), (#"{"===":[1,"1"]}"#, "false"), (#"{"===":[1,1.0]}"#, "true"),
        (#"{"!=":["a","b"]}"#, "true"), (#"{"!==":[1,"1"]}"#, "true"),
    ])
    func equalityCoercesAsJavaScriptDoes(_ logic: String, _ expected: String) throws {
        #expect(try evaluate(logic) == JSONReader.read(expected))
    }

    @Test(arguments: [
        (#"{"<":["10",9]}"#, "false"), (#"{"<":["10","9"]}"#, "true"), (#"{"<":["a",1]}"#, "false"),
        (#"{"<":[null,1]}"#, "true"), (#"{"<=":[null,0]}"#, "true"), (#"{">=":[null,0]}"#, "true"),
        (#"{">":["b","a"]}"#, "true"), (#"{">":["B","a"]}"#, "false"), (#"{">=":["0800","0800"]}"#, "true"),
        (#"{"<":[[2],3]}"#, "true"), (#"{"<":[true,2]}"#, "true"), (#"{"<=":["abc",null]}"#, "false"),
        (#"{"<=":["abc","abc"]}"#, "true"), (#"{">":[{"var":"missing"},0]}"#, "false"),
    ])
    func comparisonCoercesAsJavaScriptDoes(_ logic: String, _ expected: String) throws {
        #expect(try evaluate(logic) == JSONReader.read(expected))
    }

    @Test(arguments: [
        (#"{"<":[1,2,3]}"#, "true"), (#"{"<":[1,3,3]}"#, "false"), (#"{"<=":[1,3,3]}"#, "true"),
        (#"{"<=":["0900","1200","1700"]}"#, "true"), (#"{"<=":["0900","1800","1700"]}"#, "false"),
    ])
    func threeArgumentComparisonIsBetween(_ logic: String, _ expected: String) throws {
        #expect(try evaluate(logic) == JSONReader.read(expected))
        #expect(try evaluate(#"{"<=":[0,{"var":"allocation"},50]}"#, #"{"allocation":48.44}"#) == true)
    }

    @Test(arguments: [
        (#"{"in":["Spring","Springfield"]}"#, "true"), (#"{"in":["spring","Springfield"]}"#, "false"),
        (#"{"in":[1,"a1b"]}"#, "true"), (#"{"in":["","abc"]}"#, "true"), (#"{"in":["x",""]}"#, "false"),
        (#"{"in":["b",["a","b"]]}"#, "true"), (#"{"in":[1,["1",2]]}"#, "false"),
        (#"{"in":[null,"a null"]}"#, "true"), (#"{"in":["a",5]}"#, "false"), (#"{"in":["a",null]}"#, "false"),
    ])
    func inIsSubstringOrStrictArrayMembership(_ logic: String, _ expected: String) throws {
        #expect(try evaluate(logic) == JSONReader.read(expected))
    }

    @Test(arguments: [
        (#"{"+":["1",2,"3.5abc"]}"#, "6.5"), (#"{"+":[]}"#, "0"), (#"{"*":["2","3"]}"#, "6"),
        (#"{"*":["7"]}"#, #""7""#), (#"{"-":["10",3]}"#, "7"), (#"{"-":["4"]}"#, "-4"), (#"{"/":[1,4]}"#, "0.25"),
        (#"{"%":[-7,3]}"#, "-1"), (#"{"%":[7.5,2]}"#, "1.5"), (#"{"min":[3,"1",2]}"#, "1"),
        (#"{"max":[3,"7",2]}"#, "7"),
    ])
    func arithmeticConvertsItsArguments(_ logic: String, _ expected: String) throws {
        #expect(same(try evaluate(logic), try JSONReader.read(expected)))
    }

    @Test func arithmeticOnNonNumbersIsNaN() throws {
        #expect(try evaluate(#"{"+":["x"]}"#)?.doubleValue?.isNaN == true)
        #expect(try evaluate(#"{"max":[3,"x"]}"#)?.doubleValue?.isNaN == true)
        #expect(try evaluate(#"{"max":[]}"#)?.doubleValue == -.infinity)
        #expect(try evaluate(#"{"min":[]}"#)?.doubleValue == .infinity)
    }

    @Test(arguments: [
        (#"{"cat":["a",1,null,true,[1,2],1.5]}"#, #""a1true1,21.5""#),
        (#"{"cat":[0.1,1e21,1e-7,123456789012345680000]}"#, #""0.11e+211e-7123456789012345680000""#),
        (#"{"substr":["jsonlogic",4]}"#, #""logic""#), (#"{"substr":["jsonlogic",-5]}"#, #""logic""#),
        (#"{"substr":["jsonlogic",1,3]}"#, #""son""#), (#"{"substr":["jsonlogic",4,-2]}"#, #""log""#),
        (#"{"substr":[12345,1,2]}"#, #""23""#), (#"{"substr":[null,1]}"#, #""ull""#),
    ])
    func stringOperatorsPrintValuesAsJavaScriptDoes(_ logic: String, _ expected: String) throws {
        #expect(try evaluate(logic) == JSONReader.read(expected))
    }

    @Test func varReadsDottedPathsWithDefaults() throws {
        let data = #"{"a":{"b":[10,{"c":"x"}]},"n":null,"s":"hey","z":0}"#
        #expect(try evaluate(#"{"var":"a.b.1.c"}"#, data) == "x")
        #expect(try evaluate(#"{"var":["a.b.0"]}"#, data) == 10)
        #expect(try evaluate(#"{"var":"a.b.length"}"#, data) == 2)
        #expect(try evaluate(#"{"var":"s.length"}"#, data) == 3)
        #expect(try evaluate(#"{"var":"s.1"}"#, data) == "e")
        #expect(try evaluate(#"{"var":"missing"}"#, data) == .null)
        #expect(try evaluate(#"{"var":["missing","fallback"]}"#, data) == "fallback")
        #expect(try evaluate(#"{"var":["a.missing.deeper",5]}"#, data) == 5)
        // A null on the way gives the default; a null at the end is the value.
        #expect(try evaluate(#"{"var":["n.x",5]}"#, data) == 5)
        #expect(try evaluate(#"{"var":["n",5]}"#, data) == .null)
        #expect(try evaluate(#"{"var":"z"}"#, data) == 0)
        #expect(try evaluate(#"{"var":""}"#, #"{"k":1}"#) == ["k": 1])
        #expect(try evaluate(#"{"var":{"cat":["a",".b.0"]}}"#, data) == 10)
    }

    @Test func truthinessTreatsEmptyArraysAsFalse() throws {
        #expect(try evaluate(#"{"!":[[]]}"#) == true)
        #expect(try evaluate(#"{"!!":[[]]}"#) == false)
        #expect(try evaluate(#"{"!!":["0"]}"#) == true)
        #expect(try evaluate(#"{"!":[0]}"#) == true)
        #expect(try evaluate(#"{"!":{"var":"x"}}"#, #"{"x":""}"#) == true)
    }

    @Test func andOrReturnTheDecidingValue() throws {
        #expect(try evaluate(#"{"and":[1,"a",0,2]}"#) == 0)
        #expect(try evaluate(#"{"and":[1,"a"]}"#) == "a")
        #expect(try evaluate(#"{"or":[0,"",[],"x"]}"#) == "x")
        #expect(try evaluate(#"{"or":[0,false]}"#) == false)
        #expect(try evaluate(#"{"and":[]}"#) == nil)
    }

    @Test func ifPicksTheFirstTruthyBranch() throws {
        #expect(try evaluate(#"{"if":[false,1,true,2,3]}"#) == 2)
        #expect(try evaluate(#"{"if":[false,1,false,2,3]}"#) == 3)
        #expect(try evaluate(#"{"if":[false,1]}"#) == .null)
        #expect(try evaluate(#"{"?:":[[],"yes","no"]}"#) == "no")
        #expect(try evaluate(#"{"if":true}"#) == true)
    }

    @Test func iteratingOperatorsScopeVarToEachElement() throws {
        let data = #"{"items":[{"n":1},{"n":5},{"n":9}],"empty":[]}"#
        #expect(try evaluate(#"{"some":[{"var":"items"},{">":[{"var":"n"},8]}]}"#, data) == true)
        #expect(try evaluate(#"{"all":[{"var":"items"},{">":[{"var":"n"},0]}]}"#, data) == true)
        #expect(try evaluate(#"{"all":[{"var":"empty"},true]}"#, data) == false)
        #expect(try evaluate(#"{"none":[{"var":"items"},{"==":[{"var":"n"},5]}]}"#, data) == false)
        #expect(try evaluate(#"{"filter":[{"var":"items"},{"<":[{"var":"n"},6]}]}"#, data) == [["n": 1], ["n": 5]])
        #expect(try evaluate(#"{"map":[[1,2],{"*":[{"var":""},2]}]}"#) == [.number(2), .number(4)])
        let sum = #"{"reduce":[[1,2,3],{"+":[{"var":"current"},{"var":"accumulator"}]},10]}"#
        #expect(same(try evaluate(sum), 16))
        #expect(try evaluate(#"{"merge":[[1,2],3,[[4]]]}"#) == [1, 2, 3, [4]])
        #expect(try evaluate(#"{"missing":["a","b","c"]}"#, #"{"a":1,"b":""}"#) == ["b", "c"])
        #expect(try evaluate(#"{"missing_some":[1,["a","b"]]}"#, #"{"a":1}"#) == [])
        #expect(try evaluate(#"{"missing_some":[2,["a","b"]]}"#, #"{"a":1}"#) == ["b"])
    }

    @Test func objectsThatAreNotOneKeyAreData() throws {
        #expect(try evaluate(#"{"==":[{"a":1,"b":2},"[object Object]"]}"#) == true)
        #expect(try evaluate(#"[1,{"var":"x"}]"#, #"{"x":2}"#) == [1, 2])
    }

    @Test func anUnknownOperatorFailsWhenEvaluated() throws {
        let logic = JsonLogic(compiling: try JSONReader.read(#"{"and":[false,{"startsWith":["a","b"]}]}"#))
        #expect(try logic.evaluate(ValueData(value: nil)) == false)
        #expect(throws: LogicError.self) {
            try JsonLogic(compiling: try JSONReader.read(#"{"startsWith":["a","b"]}"#)).evaluate(ValueData(value: nil))
        }
    }

    @Test func compilingFoldsLiteralArrays() throws {
        guard case .literal = JsonLogic(compiling: try JSONReader.read(#"["a",1,[2]]"#)) else {
            Issue.record("a literal array should compile to a literal")
            return
        }
        guard case .variable(let path, _) = JsonLogic(compiling: try JSONReader.read(#"{"var":"page.url_lc"}"#)) else {
            Issue.record("a var with a literal path should compile to a variable")
            return
        }
        #expect(path.segments == ["page", "url_lc"])
        #expect(path.contextKey == .page)
    }
}

/// JavaScript's conversions, checked against node 20.
@Suite struct JavaScriptTests {
    @Test(
        arguments: [
            (1.0, "1"), (-0.0, "0"), (0.1, "0.1"), (1.5e-7, "1.5e-7"), (1e21, "1e+21"),
            (1.234_567_890_123_456_8e20, "123456789012345680000"),
            (0.000001, "0.000001"), (1e-7, "1e-7"), (48.44, "48.44"), (1 / 3.0, "0.3333333333333333"),
            (-2.5e25, "-2.5e+25"),
            (Double.nan, "NaN"), (Double.infinity, "Infinity"), (100, "100"), (Double.leastNonzeroMagnitude, "5e-324"),
        ] as [(Double, String)]
    )
    func printsNumbersAsJavaScriptDoes(_ number: Double, _ expected: String) {
        #expect(JavaScript.numberToString(number) == expected)
    }

    @Test(
        arguments: [
            ("", 0.0), ("  12  ", 12), ("1e3", 1000), (".5", 0.5), ("5.", 5), ("-1.5", -1.5), ("+2", 2), ("0x1F", 31),
            ("0b101", 5), ("0o17", 15), ("Infinity", .infinity), ("-Infinity", -.infinity), ("\u{A0}7\u{FEFF}", 7),
        ] as [(String, Double)]
    )
    func readsNumericStrings(_ text: String, _ expected: Double) {
        #expect(JavaScript.stringToNumber(text) == expected)
    }

    @Test(arguments: ["abc", "1_000", "1e", "0x", "-0x10", "1 2", "infinity", "NaN"])
    func otherStringsAreNaN(_ text: String) {
        #expect(JavaScript.stringToNumber(text).isNaN)
    }

    @Test func parseFloatAndParseIntReadAPrefix() {
        #expect(JavaScript.parseFloat("3.5abc") == 3.5)
        #expect(JavaScript.parseFloat("  -.5e2x") == -50)
        #expect(JavaScript.parseFloat("1e") == 1)
        #expect(JavaScript.parseFloat("abc").isNaN)
        #expect(JavaScript.parseInt("80.0.3987") == 80)
        #expect(JavaScript.parseInt("-12px") == -12)
        #expect(JavaScript.parseInt("v80").isNaN)
    }

    @Test func roundsHalvesUp() {
        #expect(JavaScript.round(2.5) == 3)
        #expect(JavaScript.round(-2.5) == -2)
        #expect(JavaScript.round(0.49999999999999994) == 0)
    }

    @Test func comparesStringsByUTF16CodeUnits() {
        // U+FF61 is one code unit; U+1F600 is a surrogate pair starting 0xD83D, which sorts below it.
        #expect(JavaScript.lessThan("😀", "｡"))
        #expect(!JavaScript.looseEquals("e\u{301}", "é"))
    }

    @Test func listsKeysAsObjectKeysDoes() {
        #expect(JavaScript.propertyOrder(["home", "2", "contact", "1", "01"]) == ["1", "2", "home", "contact", "01"])
    }
}

@Suite struct JavaScriptIncludesTests {
    @Test func findsASCIIByCodeUnitsAsIndexOfDoes() {
        #expect(JavaScript.includes("<b>${mbox.name}</b>", "${"))
        #expect(!JavaScript.includes("<b>$ {x}</b>", "${"))
        #expect(JavaScript.includes("ab", ""))
        #expect(!JavaScript.includes("$", "${"))
        #expect(JavaScript.includes("xx.xn--p1ai", "xn--"))
        // A combining mark after "{": one Character "{́" for String.contains, two code units for JavaScript.
        #expect(JavaScript.includes("${\u{301}x}", "${"))
        #expect(JavaScript.includes("é${", "${"))
    }
}
