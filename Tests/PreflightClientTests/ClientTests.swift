import PreflightProtocol
import Synchronization
import Testing

@testable import PreflightClient

#if canImport(Glibc)
import Glibc
#endif

/// A private folder under /tmp (short: a socket path must fit in 108 bytes), removed afterwards.
final class ScratchFolder {
    let path: String

    init() throws {
        var template = Array("/tmp/pfc-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw ScratchError(message: "mkdtemp failed")
        }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    func write(_ name: String, _ text: String) throws {
        let descriptor = open(file(name), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw ScratchError(message: "cannot create \(name)") }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else {
            throw ScratchError(message: "cannot write \(name)")
        }
    }

    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { unlink(file(name)) }
            }
            closedir(directory)
        }
        rmdir(path)
    }
}

struct ScratchError: Error {
    var message: String
}

@Suite struct ConfiguredEndpointTests {
    @Test func readsAgentAppEndpointFromTheConfigurationFile() throws {
        let folder = try ScratchFolder()
        try folder.write(
            "preflight.json",
            #"{"agent": {"appEndpoint": "ipc:///tmp/elsewhere/app.sock", "adminEndpoint": "ipc:///x"}, "target": {}}"#
        )
        #expect(
            PreflightClient.configuredAppEndpoint(configurationFile: folder.file("preflight.json"))
                == "ipc:///tmp/elsewhere/app.sock"
        )
    }

    @Test func readsAgentEventsEndpointFromTheConfigurationFile() throws {
        let folder = try ScratchFolder()
        try folder.write(
            "preflight.json",
            #"{"agent": {"appEndpoint": "ipc:///tmp/elsewhere/app.sock", "eventsEndpoint": "ipc:///tmp/e/events.sock"}}"#
        )
        try folder.write("no-key.json", #"{"agent": {"appEndpoint": "ipc:///x"}}"#)
        try folder.write("empty.json", #"{"agent": {"eventsEndpoint": ""}}"#)
        #expect(
            PreflightClient.configuredEventsEndpoint(configurationFile: folder.file("preflight.json"))
                == "ipc:///tmp/e/events.sock"
        )
        for name in ["missing.json", "no-key.json", "empty.json"] {
            #expect(
                PreflightClient.configuredEventsEndpoint(configurationFile: folder.file(name))
                    == "ipc:///run/preflight/events.sock"
            )
        }
        #expect(PreflightClient.defaultEventsEndpoint == "ipc:///run/preflight/events.sock")
    }

    @Test func fallsBackToTheDocumentedDefault() throws {
        let folder = try ScratchFolder()
        try folder.write("no-key.json", #"{"agent": {"adminEndpoint": "ipc:///x"}}"#)
        try folder.write("broken.json", #"{"agent": "#)
        try folder.write("wrong-type.json", #"{"agent": {"appEndpoint": 7}}"#)
        for name in ["missing.json", "no-key.json", "broken.json", "wrong-type.json"] {
            #expect(
                PreflightClient.configuredAppEndpoint(configurationFile: folder.file(name))
                    == "ipc:///run/preflight/app.sock"
            )
        }
        #expect(PreflightClient.defaultAppEndpoint == "ipc:///run/preflight/app.sock")
    }

    @Test func configurationKeepsRetriesAtLeastZero() {
        #expect(PreflightClient.Configuration(retries: -3).retries == 0)
        #expect(PreflightClient.Configuration().retries == 2)
    }
}

/// A client against an endpoint where nothing listens: no agent needed, answers must still come, fast.
@Suite struct OfflineClientTests {
    let quick = PreflightClient.Configuration(requestTimeout: .seconds(10), retries: 2, retryDelay: .milliseconds(10))

    @Test func aLoadWithoutAnAgentAnswersEveryDefaultAndCallsEveryCallback() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        let called = Recorder()
        let requests = [
            TargetRequestObject(name: "logo", defaultContent: "BlueWhale") { called.append("logo:\($0 ?? "nil")") },
            TargetRequestObject(name: "buttonColor", defaultContent: "red") {
                called.append("buttonColor:\($0 ?? "nil")")
            },
        ]

        let contents = await client.targetLoadRequests(requests)

        #expect(contents.map(\.content) == ["BlueWhale", "red"])
        #expect(contents.allSatisfy { $0.source == .default && $0.failure?.code == .agentUnreachable })
        #expect(called.values.sorted() == ["buttonColor:red", "logo:BlueWhale"])
    }

    @Test func preauthorizeWithoutAnAgentFailsWithNetworkError() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(
            endpoint: "ipc://\(folder.file("app.sock"))",
            requestor: "acme-requestor",
            configuration: quick
        )
        let request = PreauthorizeRequest.Builder().setResources(["r1"]).build()

        let failure = await #expect(throws: PreauthorizeFailure.self) { try await client.preauthorize(request) }

        #expect(failure?.status.getStatus() == 0)
        #expect(failure?.status.getCode() == "network_error")
    }

    @Test func preauthorizeWithoutARequestorSaysSo() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        let failure = await #expect(throws: PreauthorizeFailure.self) {
            try await client.preauthorize(PreauthorizeRequest.Builder().setResources(["r1"]).build())
        }
        #expect(failure?.status.getCode() == "requestor_not_configured")
        client.setRequestor("acme-requestor")
        #expect(client.requestor == "acme-requestor")
    }

    @Test func callsAfterCloseAnswerAtOnce() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        client.close()
        client.close()
        let contents = await client.targetLoadRequests([TargetRequestObject(name: "logo", defaultContent: "d")])
        #expect(contents.first?.failure?.code == .closed)
        #expect(await client.targetPrefetchContent([TargetPrefetchObject(name: "logo")]) == false)
        await #expect(throws: PreflightError.self) { try await client.ping() }
    }

    @Test func anEmptyLoadAnswersNothingWithoutARoundTrip() async throws {
        let folder = try ScratchFolder()
        let client = try PreflightClient(endpoint: "ipc://\(folder.file("app.sock"))", configuration: quick)
        #expect(await client.targetLoadRequests([]).isEmpty)
    }
}

/// Collects values from callbacks running on other tasks.
final class Recorder: Sendable {
    private let storage = LockedBox<[String]>([])

    func append(_ value: String) {
        storage.withLock { $0.append(value) }
    }

    var values: [String] {
        storage.withLock { $0 }
    }
}

final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }
}

extension PreflightClient.Configuration {
    /// For tests whose fake or real agent will answer: attempts long enough for the slowest machine.
    static let patient = Self(requestTimeout: .seconds(60), preauthorizeTimeout: .seconds(60))
}
