import PreflightProtocol
import Testing

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The command table is the one place a command is declared: these pin what is derived from it.
@Suite struct CommandTableTests {
    /// docs/PROTOCOL.md's "Commands" table is the table's own rendering, row for row.
    @Test func protocolDocListsEveryCommandAsTheTableDeclaresIt() throws {
        let doc = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/PROTOCOL.md")
        let text = String(decoding: try Data(contentsOf: doc), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = try #require(lines.firstIndex(of: "| command | endpoints | what it does |"))
        let rows = lines[header...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
        #expect(rows == Command.markdownTable, "regenerate the table from Command.markdownTable")
    }

    /// `ordinal` reads the enum's stored case number: it must be each case's place in the declaration, distinct.
    @Test func ordinalsAreTheDeclarationOrder() {
        #expect(MemoryLayout<Command>.size == 1)
        #expect(Command.allCases.map(\.ordinal) == Array(0..<Command.allCases.count))
    }

    @Test func everyWireNameNamesItsCommandAndNothingElseDoes() {
        for command in Command.allCases {
            #expect(Command(wireName: command.wireName) == command)
        }
        #expect(Command(wireName: "Ping") == nil)
        #expect(Command(wireName: "offers") == nil)
        #expect(Command(wireName: "") == nil)
    }

    /// An app command without an argument reader would reach the admin handlers: every command an app
    /// may send must read into an `AppCommand` that says it is that command.
    @Test(arguments: Command.allCases.filter { $0.declaration.access == .anyEndpoint })
    func everyAppCommandHasAnArgumentReader(command: Command) throws {
        let valid: JSONObject =
            switch command {
            case .prefetch: ["mboxes": [["name": "logo"]]]
            case .loadRequests: ["requests": [["name": "logo", "defaultContent": "d"]]]
            case .preauthorize: ["requestor": "r", "resources": ["a"]]
            case .getAuthorization, .checkAuthorization: ["requestor": "r", "resource": "a"]
            case .setSelectedProvider: ["requestor": "r", "mvpd": "m"]
            case .setThirdPartyId: ["thirdPartyId": "t"]
            case .clickedLocation: ["name": "promo"]
            case .displayedLocations: ["names": ["promo"]]
            case .setTntId: ["tntId": .null]
            case .setSessionId: ["sessionId": "s"]
            case .setMarketingCloudVisitorId: ["marketingCloudVisitorId": "m"]
            case .setCustomerIds: ["customerIds": []]
            case .checkAuthentication, .getAuthentication, .cancelAuthentication, .logout, .getMetadata,
                .getSelectedProvider:
                ["requestor": "r"]
            default: [:]
            }
        let read = try AppCommand.decode(command, ArgumentReader(valid), limits: CommandLimits())
        #expect(read?.command == command)
    }

    @Test func adminCommandsAreNotAppCommands() throws {
        for command in Command.allCases where command.declaration.access == .adminOnly {
            #expect(try AppCommand.decode(command, ArgumentReader(JSONObject()), limits: CommandLimits()) == nil)
        }
    }

    /// Every command the one-pass reader is declared for is read by it, and what it reads is that command.
    @Test func oneShotCommandsAreReadByTheOnePassReader() {
        let bodies: [Command: String] = [
            .ping: #"{"v":1,"id":"1","cmd":"ping"}"#,
            .loadRequests:
                #"{"v":1,"id":"1","cmd":"loadRequests","args":{"requests":[{"name":"a","defaultContent":"d"}]}}"#,
            .preauthorize: #"{"v":1,"id":"1","cmd":"preauthorize","args":{"requestor":"r","resources":["a"]}}"#,
        ]
        for command in Command.allCases where command.declaration.reader == .oneShot {
            let body = bodies[command].map { Array($0.utf8) } ?? []
            let read = FastRequest.read(body, limits: CommandLimits(), maxBodyBytes: 1 << 20)
            #expect(read?.name == command, "no one-pass body for \(command.wireName), or not read")
        }
    }
}

/// The event table is the one place an event's topic is declared.
@Suite struct EventTableTests {
    @Test func protocolDocListsEveryEventAsTheTableDeclaresIt() throws {
        let doc = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/PROTOCOL.md")
        let text = String(decoding: try Data(contentsOf: doc), as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = try #require(lines.firstIndex(of: "| topic | fields | published when |"))
        let rows = lines[header...].prefix { $0.hasPrefix("|") }.joined(separator: "\n")
        #expect(rows == EventTopic.markdownTable, "regenerate the table from EventTopic.markdownTable")
    }
}

/// The entitlement commands' arguments: what each reads, and the field named when one is wrong.
struct EntitlementArgumentTests {
    private func read(_ command: Command, _ args: JSONObject) throws(ProtocolError) -> AppCommand? {
        try AppCommand.decode(command, ArgumentReader(args), limits: CommandLimits())
    }

    private func field(_ command: Command, _ args: JSONObject) -> String? {
        do {
            _ = try read(command, args)
            return nil
        } catch {
            return error.field
        }
    }

    @Test func readsEachCommandsArguments() throws {
        #expect(
            try read(
                .getAuthentication,
                ["requestor": "r", "mvpd": "m", "redirectUrl": "https://x", "domainName": "d"]
            )
                == .entitlement(
                    .getAuthentication(
                        SignInRequest(requestor: "r", mvpd: "m", redirectUrl: "https://x", domainName: "d")
                    )
                )
        )
        #expect(
            try read(.checkAuthentication, ["requestor": "r", "fresh": true])
                == .entitlement(.checkAuthentication(requestor: "r", mvpd: nil, fresh: true))
        )
        #expect(
            try read(.setSelectedProvider, ["requestor": "r", "mvpd": .null])
                == .entitlement(.setSelectedProvider(requestor: "r", mvpd: nil))
        )
        #expect(
            try read(.getMetadata, ["requestor": "r", "key": "zip"])
                == .entitlement(.getMetadata(requestor: "r", key: "zip"))
        )
    }

    @Test func namesTheFieldAtFault() {
        #expect(field(.getAuthorization, ["requestor": "r"]) == "resource")
        #expect(field(.getAuthorization, ["requestor": "r", "resource": ""]) == "resource")
        #expect(field(.checkAuthorization, ["resource": "a"]) == "requestor")
        #expect(field(.checkAuthentication, ["requestor": "r", "fresh": "yes"]) == "fresh")
        #expect(field(.getAuthentication, ["requestor": "r", "mvpd": 7]) == "mvpd")
        #expect(
            field(.getAuthentication, ["requestor": "r", "redirectUrl": .string(String(repeating: "u", count: 2049))])
                == "redirectUrl"
        )
        #expect(field(.setSelectedProvider, ["requestor": "r"]) == "mvpd")
        #expect(field(.logout, ["requestor": .string(String(repeating: "r", count: 257))]) == "requestor")
    }
}

/// Every request's `AppCommand` is copied on the cached path: commands with larger arguments are boxed, so
/// the enum stays the size of a load's.
@Test func anAppCommandIsNoLargerThanALoad() {
    #expect(MemoryLayout<AppCommand>.size <= MemoryLayout<LoadRequestsCommand>.size + 1)
}
