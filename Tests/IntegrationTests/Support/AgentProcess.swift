import Foundation
import PreflightCore
import PreflightProtocol
import Testing
import ZeroMQ

/// Where `swift build` put the executables under test.
enum Binaries {
    static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["PREFLIGHT_BIN_DIR"] {
            return URL(fileURLWithPath: override)
        }
        // The test bundle lives beside the products it was built with.
        var candidate = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("preflightd").path) {
                return candidate
            }
            candidate = candidate.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug")
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var preflightd: URL { directory.appendingPathComponent("preflightd") }
    static var preflightctl: URL { directory.appendingPathComponent("preflightctl") }
}

/// Polls `condition` (which may await) until it holds or `timeout` passes: a generous deadline, never a fixed sleep.
/// It sleeps between polls without holding a thread of the cooperative pool, and every wait of these tests is
/// this one: `swift test` runs tests side by side on that pool (two threads on a 2-core machine), and a test
/// that held a thread while a process started (a blocking poll) kept the others' calls from resuming, so that a
/// call to the simulator with a 10-second deadline timed out with the simulator idle.
func waitFor(
    timeout: Duration = .seconds(20),
    _ what: String,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = MonotonicInstant.now + timeout
    while MonotonicInstant.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestFailure("timed out after \(timeout) waiting for \(what)")
}

/// At most a few processes of the tests start at once. Swift Testing runs every test side by side, and some 50
/// of them start a simulator (Python, about a second of CPU to load the specs) and an agent: started all at
/// once on a busy 2-core machine they took longer than the 20 s a start may take (2026-11-27, load average 14),
/// and every integration test failed. Starting waits for a turn here, and the start's deadline runs from its turn;
/// a turn is given back once the process is ready (or failed), never held while waiting for another, so a test
/// that starts several processes cannot deadlock with one that starts others.
actor StartupTurns {
    static let shared = StartupTurns(turns: 4)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(turns: Int) {
        free = turns
    }

    func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func giveBack() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// Runs `start` (a process's launch until it is ready) in a turn of `StartupTurns`.
func inStartupTurn<Result>(_ start: () async throws -> Result) async throws -> Result {
    await StartupTurns.shared.take()
    do {
        let result = try await start()
        await StartupTurns.shared.giveBack()
        return result
    } catch {
        await StartupTurns.shared.giveBack()
        throw error
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A private folder for one test: sockets, state and logs never collide with another test's.
final class TestFolder {
    let url: URL

    init() throws {
        // Short paths: a Unix socket path must fit in 108 bytes.
        let name = "pf-" + String(UUID().uuidString.prefix(8)).lowercased()
        url = URL(fileURLWithPath: "/tmp").appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ component: String) -> String {
        url.appendingPathComponent(component).path
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A `preflightd` process started for one test, with its own endpoints and state folder.
final class AgentProcess {
    let folder: TestFolder
    /// The running (or last) agent process; `restart()` replaces it.
    private(set) var process = Process()
    let configPath: String
    let logPath: String

    var appEndpoint: String { "ipc://\(folder.path("run/app.sock"))" }
    var adminEndpoint: String { "ipc://\(folder.path("run/admin.sock"))" }
    var eventsEndpoint: String { "ipc://\(folder.path("run/events.sock"))" }
    var socketFiles: [String] { ["app", "admin", "events"].map { folder.path("run/\($0).sock") } }

    /// Writes a configuration (merged with `extra` sections) and starts the agent; returns once it answers.
    init(extra: JSONObject = [:], waitUntilReady: Bool = true) async throws {
        folder = try TestFolder()
        configPath = folder.path("preflight.json")
        logPath = folder.path("preflightd.log")
        var configuration: JSONObject = [
            "agent": [
                "appEndpoint": .string("ipc://\(folder.path("run/app.sock"))"),
                "adminEndpoint": .string("ipc://\(folder.path("run/admin.sock"))"),
                "eventsEndpoint": .string("ipc://\(folder.path("run/events.sock"))"),
                "stateDirectory": .string(folder.path("state")),
                "maxBodyBytes": 65536,
            ],
            "target": ["clientCode": "acme", "serverURL": "http://127.0.0.1:9"],
            "pass": ["serverURL": "http://127.0.0.1:9", "softwareStatement": "test-statement", "requestors": []],
        ]
        for member in extra {
            if case .object(let section) = member.value, case .object(var merged)? = configuration[member.key] {
                for entry in section { merged[entry.key] = entry.value }
                configuration[member.key] = .object(merged)
            } else {
                configuration[member.key] = member.value
            }
        }
        try Data(JSONWriter.encode(.object(configuration))).write(to: URL(fileURLWithPath: configPath))
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        if waitUntilReady {
            try await inStartupTurn {
                try launch()
                try await waitForReady()
            }
        } else {
            try launch()
        }
    }

    /// Starts the agent again after `stop`, with the same configuration, endpoints, state folder and log (the
    /// log keeps growing), and returns once it answers: an agent restart as systemd would do it.
    func restart() async throws {
        guard !process.isRunning else { throw TestFailure("restart() needs the agent stopped first") }
        process = Process()
        try await inStartupTurn {
            try launch()
            try await waitForReady()
        }
    }

    private func launch() throws {
        process.executableURL = Binaries.preflightd
        process.arguments = ["--config", configPath]
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardOutput = log
        try process.run()
    }

    /// Pings the admin endpoint until the agent answers. The reply is looked for without waiting, between the
    /// condition's own sleeps: a ping that waited up to 500 ms for it held a thread of the tests' cooperative pool
    /// (two on this machine) for as long, and starts run side by side.
    func waitForReady() async throws {
        var client: RawClient?
        var pingedAt = MonotonicInstant.now
        try await waitFor("preflightd to answer ping on \(adminEndpoint)") {
            guard process.isRunning else {
                throw TestFailure("preflightd exited with \(process.terminationStatus): \(log)")
            }
            guard FileManager.default.fileExists(atPath: folder.path("run/admin.sock")) else { return false }
            if let pinged = client {
                if (try? pinged.receiveFrames(timeout: .zero)) != nil { return true }
                // Unanswered for 500 ms (its connection may have met the socket file of a start that failed):
                // a new connection and ping.
                if MonotonicInstant.now - pingedAt < .milliseconds(500) { return false }
            }
            let fresh = try RawClient(endpoint: adminEndpoint, type: .dealer)
            try fresh.sendFrames([[], Request(id: "ready", command: "ping").encoded()])
            client = fresh
            pingedAt = MonotonicInstant.now
            return false
        }
    }

    var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Sends a signal and waits for the process to exit; returns how long that took.
    @discardableResult
    func stop(signal: Int32 = SIGTERM, timeout: Duration = .seconds(20)) async throws -> Duration {
        let started = MonotonicInstant.now
        kill(process.processIdentifier, signal)
        try await waitFor(timeout: timeout, "preflightd to exit") { !process.isRunning }
        return MonotonicInstant.now - started
    }

    /// Sends SIGSTOP and returns once every thread of the agent is stopped. `kill` returns before that: the
    /// kernel wakes one thread to begin the group stop, and until it runs the others go on (on a loaded
    /// machine, long enough to answer a request sent right after `kill`).
    func suspend() async throws {
        let pid = process.processIdentifier
        kill(pid, SIGSTOP)
        try await waitFor("every thread of preflightd \(pid) to be stopped") {
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
            return !tasks.isEmpty
                && tasks.allSatisfy { task in
                    // /proc/PID/task/TID/stat: "TID (comm) STATE ...", comm may hold spaces and parentheses.
                    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                        let close = stat.lastIndex(of: ")")
                    else { return false }
                    return stat[close...].dropFirst(2).first == "T"
                }
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A raw ZeroMQ client, to talk to the agent exactly as an app would, frame by frame.
final class RawClient {
    let context: ZeroMQContext
    let socket: ZeroMQSocket
    let type: SocketType

    init(endpoint: String, type: SocketType) throws {
        context = try ZeroMQContext()
        socket = try context.makeSocket(type)
        self.type = type
        try socket.setOption(.linger(milliseconds: 0))
        try socket.connect(endpoint)
    }

    deinit {
        socket.close()
    }

    /// Sends one body (with the delimiter a DEALER must add) and returns the reply body.
    func request(_ body: [UInt8], timeout: Duration = .seconds(10)) throws -> [UInt8] {
        try sendFrames(type == .dealer ? [[], body] : [body])
        let frames = try receiveFrames(timeout: timeout)
        guard let last = frames.last else { throw TestFailure("empty reply") }
        return last
    }

    func sendFrames(_ frames: [[UInt8]]) throws {
        try socket.send(frames)
    }

    func receiveFrames(timeout: Duration = .seconds(10)) throws -> [[UInt8]] {
        var items = [PollItem(socket: socket, events: .readable)]
        guard try poll(&items, timeout: timeout) > 0 else {
            throw TestFailure("no reply within \(timeout)")
        }
        return try socket.receive()
    }

    /// Sends a request and decodes the reply.
    func call(_ command: String, id: String = "1", args: JSONObject? = nil) throws -> Reply.Decoded {
        try Reply.decode(request(Request(id: id, command: command, args: args).encoded()))
    }
}

/// Runs `preflightctl` and returns its exit code and output.
func runCtl(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    // Output to files and an awaited exit, not pipes read to their end: a blocking read held a thread of the
    // cooperative pool (two here) for as long as preflightctl ran, and two at once starved every other test.
    let folder = try TestFolder()
    let out = folder.path("stdout")
    let err = folder.path("stderr")
    _ = FileManager.default.createFile(atPath: out, contents: nil)
    _ = FileManager.default.createFile(atPath: err, contents: nil)
    let process = Process()
    process.executableURL = Binaries.preflightctl
    process.arguments = arguments
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
    try process.run()
    try await waitFor(timeout: .seconds(60), "preflightctl \(arguments.joined(separator: " ")) to exit") {
        !process.isRunning
    }
    func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
    return (process.terminationStatus, read(out), read(err))
}

extension Reply.Decoded {
    var result: JSONValue? { try? outcome.get() }
    var error: ProtocolError? {
        if case .failure(let error) = outcome { return error }
        return nil
    }
}
