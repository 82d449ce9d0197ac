import Foundation
import PreflightProtocol
import StateFiles
import TestSupport
import Testing
import UpstreamHTTP
import UpstreamHTTPClient

@testable import PassEntitlement

/// The real `tools/preflight-sim`, started for one test on a free loopback port, validating every request
/// against the official Adobe Pass OpenAPI files in `../shared/specs`.
final class Simulator {
    /// The repository root (this file lives in `Tests/PassEntitlementTests/`).
    static let repository = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `$PREFLIGHT_SHARED/specs`, else `shared/specs` beside the repository (as the simulator reads it).
    static let specs: URL = {
        if let shared = ProcessInfo.processInfo.environment["PREFLIGHT_SHARED"], !shared.isEmpty {
            return URL(fileURLWithPath: shared).appendingPathComponent("specs")
        }
        return repository.deletingLastPathComponent().appendingPathComponent("shared/specs")
    }()
    static let script = repository.appendingPathComponent("tools/preflight-sim")

    /// Whether the specs and the simulator are there to run against.
    static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: specs.appendingPathComponent("adobe-pass/restApiV2.json").path)
            && FileManager.default.fileExists(atPath: script.path)
    }

    let baseURL: String
    let transport: AsyncHTTPClientTransport
    private let process: Process

    private init(baseURL: String, transport: AsyncHTTPClientTransport, process: Process) {
        self.baseURL = baseURL
        self.transport = transport
        self.process = process
    }

    static func start() async throws -> Simulator {
        let directory = makeTemporaryDirectory()
        let portFile = "\(directory)/sim.port"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "--port", "0", "--port-file", portFile, "--quiet"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let started = await eventually(within: .seconds(30)) {
            FileManager.default.fileExists(atPath: portFile) || !process.isRunning
        }
        guard started, process.isRunning,
            let text = try? String(contentsOfFile: portFile, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            if process.isRunning { process.terminate() }
            throw SimulatorError(message: "preflight-sim did not start (port file \(portFile))")
        }
        return Simulator(baseURL: "http://127.0.0.1:\(port)", transport: AsyncHTTPClientTransport(), process: process)
    }

    func stop() async {
        await transport.shutdown()
        guard process.isRunning else { return }
        process.terminate()
        // A child of the test runner may inherit a signal mask that blocks SIGTERM; then SIGKILL it.
        if await !eventually(within: .seconds(1), { !process.isRunning }) {
            kill(process.processIdentifier, SIGKILL)
            _ = await eventually(within: .seconds(10)) { !process.isRunning }
        }
    }

    /// A control API call; the decoded JSON answer.
    @discardableResult
    func control(_ method: String, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
        let request = HTTPRequest(
            method: method,
            url: "\(baseURL)\(path)",
            headers: body == nil ? [] : [(name: "Content-Type", value: "application/json")],
            body: body.map { JSONWriter.encode($0) } ?? [],
            timeout: .seconds(10)
        )
        let response = try await transport.send(request)
        guard (200..<300).contains(response.status) else {
            throw SimulatorError(
                message: "\(method) \(path): HTTP \(response.status) \(String(decoding: response.body, as: UTF8.self))"
            )
        }
        return try JSONReader.read(response.body)
    }

    /// Asserts the simulator recorded no contract violation.
    func expectNoViolations(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let violations = try await control("GET", "/_sim/violations")
        #expect(violations["count"] == 0, "\(violations.text)", sourceLocation: sourceLocation)
    }
}

struct SimulatorError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A Entitlement on the system clock, talking to the simulator over loopback.
private func makeEntitlement(
    _ simulator: Simulator,
    requestors: [String] = ["espn"],
    events: EventRecorder = EventRecorder(),
    logs: LogRecorder = LogRecorder()
) -> (Entitlement, String) {
    let directory = makeTemporaryDirectory()
    let configuration = PassConfiguration(
        serverURL: simulator.baseURL,
        softwareStatement: Harness.softwareStatement,
        requestors: requestors,
        deviceIdentifier: .fixed("simulated-box"),
        deviceInfo: DeviceInfo(model: "SimBox", version: "1.0", osVersion: "6.1.0"),
        timeout: .seconds(5)
    )
    let entitlement = Entitlement(
        configuration: configuration,
        transport: simulator.transport,
        stateDirectory: directory,
        logger: logs.logger,
        publish: events.publish
    )
    return (entitlement, directory)
}

@Suite(
    .serialized,
    .enabled(
        if: Simulator.isAvailable,
        "needs ../shared/specs or $PREFLIGHT_SHARED/specs (the Adobe Pass OpenAPI files) and tools/preflight-sim; absent in a bare clone"
    )
)
struct SimulatorTests {
    @Test func preauthorizesEndToEnd() async throws {
        let simulator = try await Simulator.start()
        do {
            try await simulator.control(
                "POST",
                "/_sim/pass/login",
                ["serviceProvider": "espn", "mvpd": "Cablevision", "ttlSeconds": 3600]
            )
            let events = EventRecorder()
            let (entitlement, directory) = makeEntitlement(simulator, events: events)
            let answer = await entitlement.preauthorize(
                PreauthorizeCommand(requestor: "espn", resources: ["r1", "r2"])
            )
            #expect(answer == permits(["r1", "r2"]))
            let cached = entitlement.cachedResponse(for: PreauthorizeCommand(requestor: "espn", resources: ["r2"]))
            #expect(cached == permits(["r2"]))
            #expect(FileSystem.permissions(of: "\(directory)/pass-registration.json") == 0o600)
            let espn = entitlement.snapshot().requestor("espn")
            #expect(espn?.configurationState == .configured)
            #expect(espn?.sessionMvpd == "Cablevision")
            #expect(events.bodies("auth.session").first?["state"] == "authenticated")
            let stats = try await simulator.control("GET", "/_sim/stats")
            #expect(stats["registrations"] == 1)
            #expect(stats["operations"]?.objectValue?.isEmpty == false)
            try await simulator.expectNoViolations()
        } catch {
            await simulator.stop()
            throw error
        }
        await simulator.stop()
    }

    @Test func passesADenialWithItsEnhancedErrorThrough() async throws {
        let simulator = try await Simulator.start()
        do {
            try await simulator.control(
                "POST",
                "/_sim/pass/login",
                ["serviceProvider": "espn", "mvpd": "Comcast_SSO", "ttlSeconds": 3600]
            )
            try await simulator.control(
                "PUT",
                "/_sim/pass/decisions",
                [
                    "serviceProvider": "espn",
                    "decisions": ["premium": ["authorized": false, "error": "preauthorization_denied_by_mvpd"]],
                ]
            )
            let (entitlement, _) = makeEntitlement(simulator)
            let answer = await entitlement.preauthorize(
                PreauthorizeCommand(
                    requestor: "espn",
                    resources: ["free", "premium"],
                    disabledFeatures: [.remoteCache]
                )
            )
            #expect(answer.outcome == "response")
            let resources = answer.decisions
            #expect(resources.count == 2)
            #expect(resources.first == ResourceDecision(resource: "free", authorized: true, source: "mvpd"))
            let premium = try #require(resources.dropFirst().first)
            #expect(premium.resource == "premium")
            #expect(premium.authorized == false)
            let error = try #require(premium.error?.fields)
            #expect(error["status"] == 403)
            #expect(error["code"] == "preauthorization_denied_by_mvpd")
            #expect(error["action"] == "none")
            #expect(error["message"]?.stringValue?.isEmpty == false)
            #expect(error["helpUrl"] != nil && error["trace"] != nil)
            // The session missing for another requestor comes back as the agent-side code.
            try await simulator.control("POST", "/_sim/pass/logout", [:])
            let (second, _) = makeEntitlement(simulator, requestors: ["nbc"])
            let missing = await second.preauthorize(PreauthorizeCommand(requestor: "nbc", resources: ["x"]))
            #expect(missing.statusCode == "authentication_session_missing")
            try await simulator.expectNoViolations()
        } catch {
            await simulator.stop()
            throw error
        }
        await simulator.stop()
    }

    @Test func twentyConcurrentAppsUnderTheRateLimitNeverFail() async throws {
        let simulator = try await Simulator.start()
        do {
            try await simulator.control(
                "POST",
                "/_sim/pass/login",
                ["serviceProvider": "espn", "mvpd": "Cablevision", "ttlSeconds": 3600]
            )
            try await simulator.control("POST", "/_sim/pass/ratelimit", ["enabled": true, "perSecond": 1, "burst": 10])
            let (entitlement, _) = makeEntitlement(simulator)
            let apps = (0..<20).map { index in
                Pending {
                    await entitlement.preauthorize(
                        PreauthorizeCommand(
                            requestor: "espn",
                            resources: ["movie-\(index % 12)", "channel-\(index % 3)"]
                        )
                    )
                }
            }
            for (index, app) in apps.enumerated() {
                let answer = await app.wait(within: .seconds(60))
                #expect(
                    answer == permits(["movie-\(index % 12)", "channel-\(index % 3)"]),
                    "app \(index): \(answer.map { "\($0)" } ?? "no answer")"
                )
            }
            let state = try await simulator.control("GET", "/_sim/pass/state")
            #expect(state["rateLimit"]?["limited"] == 0, "the agent stayed inside the device budget")
            try await simulator.expectNoViolations()
        } catch {
            await simulator.stop()
            throw error
        }
        await simulator.stop()
    }

    @Test func retriesAfterTheSimulators429() async throws {
        let simulator = try await Simulator.start()
        do {
            try await simulator.control(
                "POST",
                "/_sim/pass/login",
                ["serviceProvider": "espn", "mvpd": "Cablevision", "ttlSeconds": 3600]
            )
            try await simulator.control(
                "POST",
                "/_sim/faults",
                ["path": "/api/v2/espn/decisions/preauthorize/Cablevision", "status": 429, "retryAfter": 1, "count": 1]
            )
            let events = EventRecorder()
            let (entitlement, _) = makeEntitlement(simulator, events: events)
            let answer = await entitlement.preauthorize(PreauthorizeCommand(requestor: "espn", resources: ["r1"]))
            #expect(answer == permits(["r1"]))
            #expect(events.bodies("upstream.error").contains { $0["status"] == 429 })
            try await simulator.expectNoViolations()
        } catch {
            await simulator.stop()
            throw error
        }
        await simulator.stop()
    }
}
