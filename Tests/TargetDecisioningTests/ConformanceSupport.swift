import Foundation
import PreflightProtocol
import Testing

@testable import TargetDecisioning

/// One case of Adobe's shared conformance suite (`target-sdk-testing`), with its suite's defaults.
struct ConformanceCase: Sendable, CustomTestStringConvertible {
    let suite: String
    let name: String
    /// The case (`input`, `output`, `notificationOutput`, `mockDate`, `mockGeo`, `conf`, `artifact`).
    let test: JSONObject
    let conf: JSONObject
    /// The artifact, hydrated from `artifacts/` when the case or its suite names one.
    let artifact: JSONValue

    var testDescription: String { "\(suite) / \(name)" }

    /// `$PREFLIGHT_SHARED/conformance/target-sdk-testing`, else the folder beside the package:
    /// `../shared/conformance/target-sdk-testing`.
    static let folder: URL = {
        if let shared = ProcessInfo.processInfo.environment["PREFLIGHT_SHARED"], !shared.isEmpty {
            return URL(fileURLWithPath: shared).appendingPathComponent("conformance/target-sdk-testing")
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/conformance/target-sdk-testing")
    }()

    /// Every case of every suite in `models/`, suites by file name, cases in file order; empty when
    /// the folder cannot be read (a separate test fails then).
    static func all() -> [ConformanceCase] {
        (try? load()) ?? []
    }

    static func load() throws -> [ConformanceCase] {
        let models = folder.appendingPathComponent("models")
        let files = try FileManager.default.contentsOfDirectory(atPath: models.path)
            .filter { $0.hasPrefix("TEST_SUITE_") && $0.hasSuffix(".json") }.sorted()
        var cases: [ConformanceCase] = []
        for file in files {
            guard case .object(let suite) = try readJSON(models.appendingPathComponent(file)) else { continue }
            let suiteName = String(file.dropLast(".json".count))
            for (name, value) in suite["test"]?.objectValue ?? JSONObject() {
                guard case .object(let test) = value else { continue }
                let conf = test["conf"]?.objectValue ?? suite["conf"]?.objectValue ?? JSONObject()
                let artifact = try hydrate(test["artifact"] ?? suite["artifact"] ?? .null)
                cases.append(ConformanceCase(suite: suiteName, name: name, test: test, conf: conf, artifact: artifact))
            }
        }
        return cases
    }

    /// Adobe's runner replaces an artifact name with the artifact of that name.
    private static func hydrate(_ artifact: JSONValue) throws -> JSONValue {
        guard case .string(let name) = artifact else { return artifact }
        return try readJSON(folder.appendingPathComponent("artifacts").appendingPathComponent(name + ".json"))
    }

    static func readJSON(_ url: URL) throws -> JSONValue {
        try JSONReader.read(Array(try Data(contentsOf: url)), maxDepth: DecisioningArtifact.maxDepth)
    }

    /// `Date.UTC(year, month, date, hours, minutes, seconds)` of a case's `mockDate` (month 0-based).
    static func epochMilliseconds(mockDate: JSONObject) -> Int64 {
        func part(_ key: String, _ fallback: Int64) -> Int64 {
            mockDate[key]?.doubleValue.map { Int64($0) } ?? fallback
        }
        var year = part("year", 1970)
        var month = part("month", 0)
        year += month >= 0 ? month / 12 : (month - 11) / 12
        month = ((month % 12) + 12) % 12
        let days = daysFromCivil(year: year, month: month + 1, day: part("date", 1))
        let seconds = ((days * 24 + part("hours", 0)) * 60 + part("minutes", 0)) * 60 + part("seconds", 0)
        return seconds * 1000
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Jest's `toMatchObject`, as Adobe's runner compares a result with a case's expectation: every key
/// the expectation gives must match (objects as subsets, arrays with the same length, element by
/// element), and `"expect.any(String)"`, `"expect.any(Number)"`, `"expect.any(Object)"` match any value
/// of that kind.
enum ObjectSubset {
    /// The first place the received value does not match, as "path: expected X, got Y"; nil on a match.
    static func firstDifference(_ received: JSONValue?, _ expected: JSONValue, path: String = "$") -> String? {
        switch expected {
        case .string("expect.any(String)"):
            if case .string = received { return nil }
            return mismatch(path, expected, received)
        case .string("expect.any(Number)"):
            if case .integer = received { return nil }
            if case .number = received { return nil }
            return mismatch(path, expected, received)
        case .string("expect.any(Object)"):
            switch received {
            case .object, .array, .null: return nil
            default: return mismatch(path, expected, received)
            }
        case .object(let subset):
            if subset.isEmpty { return nil }
            guard case .object(let object) = received else { return mismatch(path, expected, received) }
            for (key, value) in subset {
                guard let actual = object[key] else { return "\(path).\(key): expected \(show(value)), got nothing" }
                if let difference = firstDifference(actual, value, path: "\(path).\(key)") { return difference }
            }
            return nil
        case .array(let elements):
            guard case .array(let actual) = received, actual.count == elements.count else {
                return mismatch(path, expected, received)
            }
            for (index, (element, expectedElement)) in zip(actual, elements).enumerated() {
                if let difference = firstDifference(element, expectedElement, path: "\(path)[\(index)]") {
                    return difference
                }
            }
            return nil
        case .integer, .number:
            guard let number = received?.doubleValue, number == expected.doubleValue else {
                return mismatch(path, expected, received)
            }
            return nil
        default:
            return received == expected ? nil : mismatch(path, expected, received)
        }
    }

    private static func mismatch(_ path: String, _ expected: JSONValue, _ received: JSONValue?) -> String {
        "\(path): expected \(show(expected)), got \(received.map(show) ?? "nothing")"
    }

    private static func show(_ value: JSONValue) -> String {
        let text = JSONWriter.string(value)
        return text.count > 300 ? String(text.prefix(300)) + "…" : text
    }
}
