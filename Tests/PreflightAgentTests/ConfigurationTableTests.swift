import PreflightProtocol
import Testing

@testable import PreflightAgent

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The configuration table is the one place a key is declared: these pin what is derived from it.
@Suite struct ConfigurationTableTests {
    private static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static func text(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: repository.appendingPathComponent(path)), as: UTF8.self)
    }

    /// docs/OPERATIONS.md's reference tables are the table's own rendering, row for row, per section.
    @Test(arguments: ConfigurationSection.allCases)
    func operationsGuideListsEveryKeyAsTheTableDeclaresIt(section: ConfigurationSection) throws {
        let lines = try Self.text("docs/OPERATIONS.md").split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        let heading = try #require(lines.firstIndex(of: "### `\(section.rawValue)`"))
        let header = try #require(lines[heading...].firstIndex { $0.hasPrefix("| key |") })
        let rows = lines[header...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
        let expected = AgentConfiguration.markdownTable(section)
        #expect(rows == expected, "paste AgentConfiguration.markdownTable(.\(section.rawValue)):\n\(expected)")
    }

    @Test func messagesNameAKeyByItsField() {
        #expect(AgentConfiguration.path(of: \.pass.requestors) == "pass.requestors")
        #expect(AgentConfiguration.path(of: \.agent.allowedAdminGroups) == "agent.allowedAdminGroups")
    }

    /// docs/ARCHITECTURE.md's example declaration is one of the table's, word for word.
    @Test func architectureExampleIsARealDeclaration() throws {
        let doc = try Self.text("docs/ARCHITECTURE.md")
        let section = try #require(doc.range(of: "## Adding a configuration key"))
        let start = try #require(doc.range(of: "```swift\n", range: section.upperBound..<doc.endIndex))
        let end = try #require(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
        let words = { (text: Substring) in text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let example = words(doc[start.upperBound..<end.lowerBound])
        #expect(example.hasPrefix("ConfigurationKey("))
        #expect(words(try Self.text("Sources/PreflightAgent/ConfigurationTable.swift")[...]).contains(example))
    }

    @Test func keysAreUniqueAndEachSectionHasSome() {
        let paths = AgentConfiguration.keys.map(\.path)
        #expect(Set(paths).count == paths.count)
        for section in ConfigurationSection.allCases {
            #expect(AgentConfiguration.keys.contains { $0.section == section })
        }
    }

    /// `config.show` shows every key of the table, in its order, and nothing else.
    @Test func configShowListsEveryKey() throws {
        let shown = AgentConfiguration().redactedJSON
        for section in ConfigurationSection.allCases {
            let names = try #require(shown[section.rawValue]?.objectValue).keys
            #expect(names == AgentConfiguration.keys.filter { $0.section == section }.map(\.name))
        }
    }

    @Test func secretsAreRedactedInConfigShow() throws {
        var configuration = AgentConfiguration()
        let secrets = AgentConfiguration.keys.filter(\.isSecret)
        #expect(!secrets.isEmpty)
        configuration.pass.softwareStatement = "eyJ-a-secret-value"
        let shown = JSONWriter.string(configuration.redactedJSON)
        #expect(!shown.contains("eyJ-a-secret-value"))
        for key in secrets {
            #expect(key.shown(in: configuration) == .string("(redacted, 18 characters)"), "\(key.path)")
            #expect(key.shown(in: AgentConfiguration()) == .string("(empty)"), "\(key.path)")
        }
        configuration.pass.deviceIdentifier = "serial-1234"
        #expect(!JSONWriter.string(configuration.redactedJSON).contains("serial-1234"))
    }

    /// A value of the wrong type is an error naming the key, for every key of the table.
    @Test func everyKeyRefusesAWrongTypeNamingItself() {
        for key in AgentConfiguration.keys {
            var sections: JSONObject = ["target": ["clientCode": "acme"]]
            var section = sections[key.section.rawValue]?.objectValue ?? JSONObject()
            section[key.name] = ["not": "a value"]
            sections[key.section.rawValue] = .object(section)
            do {
                _ = try AgentConfiguration.parse(JSONWriter.encode(.object(sections)))
                Issue.record("\(key.path) took an object")
            } catch {
                #expect(error.key == key.path)
            }
        }
    }

    /// Every key a file sets is read: the configuration shown after reading it holds the file's value.
    @Test(arguments: ["conf/preflight.json", "conf/demo.json"])
    func shippedFilesUseOnlyKnownKeysAndReadBack(path: String) throws {
        let file = try Self.text(path)
        let loaded = try AgentConfiguration.parse(Array(file.utf8))
        #expect(loaded.warnings.isEmpty, "\(loaded.warnings)")
        let written = try JSONReader.read(Array(file.utf8))
        let shown = loaded.configuration.redactedJSON
        for key in AgentConfiguration.keys where !key.isSecret {
            guard let value = written[key.section.rawValue]?[key.name] else { continue }
            #expect(shown[key.section.rawValue]?[key.name]?.doubleValue == value.doubleValue, "\(key.path)")
            if value.doubleValue == nil {
                #expect(shown[key.section.rawValue]?[key.name] == value, "\(key.path)")
            }
        }
    }

    /// conf/preflight.json, the production example, repeats the table's defaults except where a box must
    /// set its own value.
    @Test func productionExampleRepeatsTheDefaults() throws {
        let boxSpecific: Set = [
            "agent.appSocketGroup", "agent.adminSocketGroup", "target.clientCode", "pass.softwareStatement",
            "pass.requestors",
        ]
        let written = try JSONReader.read(Array(try Self.text("conf/preflight.json").utf8))
        let defaults = AgentConfiguration().redactedJSON
        for key in AgentConfiguration.keys where !boxSpecific.contains(key.path) {
            guard let value = written[key.section.rawValue]?[key.name] else { continue }
            let standard = try #require(defaults[key.section.rawValue]?[key.name])
            #expect(value.doubleValue ?? -1 == standard.doubleValue ?? -1, "\(key.path)")
            if value.doubleValue == nil { #expect(value == standard, "\(key.path)") }
        }
    }

    /// A reload applies what it can and keeps, and reports, every key that needs a restart.
    @Test func reloadKeepsEveryRestartKeyAndAppliesTheRest() throws {
        let running = AgentConfiguration()
        var next = running
        next.agent.appEndpoint = "ipc:///tmp/elsewhere.sock"
        next.agent.logLevel = "debug"
        next.agent.allowedAdminGroups = ["wheel"]
        next.target.notificationQueueCapacity = 500
        next.target.timeout = 1.5
        next.pass.requestors = ["acme"]
        let (applied, refused) = AgentConfiguration.reloaded(next, running: running)
        #expect(
            refused.map(\.key.path) == [
                "agent.appEndpoint", "agent.logLevel", "agent.allowedAdminGroups", "target.notificationQueueCapacity",
            ]
        )
        #expect(refused.first?.requested == .string("ipc:///tmp/elsewhere.sock"))
        #expect(refused.first?.running == .string(running.agent.appEndpoint))
        #expect(applied.target.timeout == 1.5 && applied.pass.requestors == ["acme"])
        for key in AgentConfiguration.keys where key.reload == .needsRestart {
            #expect(key.isSame(in: applied, and: running), "\(key.path)")
        }
        #expect(AgentConfiguration.reloaded(running, running: running).refused.isEmpty)
    }
}
