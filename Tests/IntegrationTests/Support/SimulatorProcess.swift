import Foundation
import PreflightProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `tools/preflight-sim` (Adobe Target and Adobe Pass stand-in) on a free loopback port, for one test, as
/// tests/python/agent_harness.py starts it: its files go in the test's folder, and Target's `edgeHost`
/// points back at it so that the agent keeps calling the simulator after the first answer.
final class SimulatorProcess {
    let process = Process()
    let url: String
    let logPath: String

    init(folder: TestFolder) async throws {
        let portFile = folder.path("sim.port")
        logPath = folder.path("sim.log")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = Binaries.packageRoot.appendingPathComponent("tools/preflight-sim")
        process.arguments = ["--port", "0", "--port-file", portFile, "--quiet"]
        process.standardError = log
        process.standardOutput = log
        let port = try await inStartupTurn { [process, logPath] in
            try process.run()
            var port = ""
            // A start that fails leaves no object to reap it (`deinit` runs only once `url` is set): killed here,
            // or it outlives the test run (a failed run on 2026-11-27 left ten simulators behind).
            defer {
                if port.isEmpty, process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    process.waitUntilExit()
                }
            }
            try await waitFor("preflight-sim to listen") {
                guard process.isRunning else {
                    throw TestFailure(
                        "preflight-sim exited: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")"
                    )
                }
                port =
                    (try? String(contentsOfFile: portFile, encoding: .utf8))?.trimmingCharacters(
                        in: .whitespacesAndNewlines
                    )
                    ?? ""
                return !port.isEmpty
            }
            return port
        }
        url = "http://127.0.0.1:\(port)"
    }

    /// Points Target's `edgeHost` at the simulator (with `serverURL` set the agent keeps scheme and port).
    func start() async throws {
        try await call("PUT", "/_sim/target/edgeHost", ["edgeHost": "127.0.0.1"])
    }

    /// One call of the control API; the JSON answer (nil when empty). Throws on a status other than 2xx.
    @discardableResult
    func call(_ method: String, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue? {
        var request = URLRequest(url: URL(string: url + path)!)
        request.httpMethod = method
        request.timeoutInterval = 10
        if let body {
            request.httpBody = Data(JSONWriter.encode(body))
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            throw TestFailure("\(method) \(path) answered \(status): \(String(decoding: data, as: UTF8.self))")
        }
        return data.isEmpty ? nil : try JSONReader.read(Array(data))
    }

    /// The requests the simulator logged for `operation` (e.g. `delivery`, `preauthorize`).
    func requests(_ operation: String) async throws -> [JSONValue] {
        let all = try await call("GET", "/_sim/requests")?["requests"]?.arrayValue ?? []
        return all.filter { $0["operation"]?.stringValue == operation }
    }

    /// Contract violations the simulator recorded (requests the real services would refuse).
    func violationCount() async throws -> Int {
        Int(try await call("GET", "/_sim/violations")?["count"]?.doubleValue ?? -1)
    }

    deinit {
        // SIGKILL, not SIGTERM: a process started from a thread of the test's cooperative pool inherits that
        // thread's signal mask, in which libdispatch blocks SIGTERM, and Python never unblocks it.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
