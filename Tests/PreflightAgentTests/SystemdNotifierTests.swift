import Foundation
import PreflightCore
import Testing

@testable import PreflightAgent

#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket standing in for systemd's notification socket.
private final class NotifyListener {
    /// What to put in `NOTIFY_SOCKET`: a file path, or `@name` for the abstract namespace.
    let socketPath: String
    private let descriptor: CInt
    private let folder: String?

    /// A socket at a fresh path in a temporary folder.
    static func inFileSystem() throws -> NotifyListener {
        let folder = NSTemporaryDirectory() + "/preflight-notify-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return try NotifyListener(socketPath: folder + "/notify.sock", folder: folder)
    }

    /// A socket with a unique name in Linux's abstract namespace.
    static func inAbstractNamespace() throws -> NotifyListener {
        try NotifyListener(socketPath: "@preflight-test-\(getpid())-\(UUID().uuidString)", folder: nil)
    }

    private init(socketPath: String, folder: String?) throws {
        self.socketPath = socketPath
        self.folder = folder
        descriptor = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let length = socklen_t(
            MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count + (abstract ? 0 : 1)
        )
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    deinit {
        close(descriptor)
        if let folder {
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// The next datagram already queued, or nil when none is (the notifier sends synchronously, so a
    /// datagram sent before this call is there or was never sent).
    func nextDatagram() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

/// Splits `KEY=VALUE` lines into a dictionary.
private func assignments(_ datagram: String?) -> [String: String] {
    var result: [String: String] = [:]
    for line in (datagram ?? "").split(separator: "\n") {
        guard let equals = line.firstIndex(of: "=") else { continue }
        result[String(line[..<equals])] = String(line[line.index(after: equals)...])
    }
    return result
}

@Suite struct SystemdNotifierTests {
    @Test func readySendsReadyAndStatusInOneDatagram() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        notifier.ready(status: "serving")
        #expect(listener.nextDatagram() == "READY=1\nSTATUS=serving")
        #expect(listener.nextDatagram() == nil)
    }

    @Test func reachesASocketInTheAbstractNamespace() throws {
        let listener = try NotifyListener.inAbstractNamespace()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        notifier.ready(status: "serving")
        notifier.stopping()
        #expect(listener.nextDatagram() == "READY=1\nSTATUS=serving")
        #expect(listener.nextDatagram() == "STOPPING=1")
    }

    @Test func stoppingWatchdogAndStatusSendTheirAssignments() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        notifier.stopping()
        notifier.watchdog()
        notifier.status("draining 3 requests")
        notifier.notify("STATUS=custom\nERRNO=5")
        #expect(listener.nextDatagram() == "STOPPING=1")
        #expect(listener.nextDatagram() == "WATCHDOG=1")
        #expect(listener.nextDatagram() == "STATUS=draining 3 requests")
        #expect(listener.nextDatagram() == "STATUS=custom\nERRNO=5")
    }

    @Test func statusTextCannotInjectAnotherAssignment() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        notifier.status("line one\nREADY=1")
        #expect(listener.nextDatagram() == "STATUS=line one READY=1")
    }

    @Test func reloadingCarriesTheMonotonicClockInMicroseconds() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        var before = timespec()
        clock_gettime(CLOCK_MONOTONIC, &before)
        notifier.reloading()
        var after = timespec()
        clock_gettime(CLOCK_MONOTONIC, &after)

        let datagram = listener.nextDatagram()
        #expect(datagram?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true)
        let fields = assignments(datagram)
        #expect(fields.keys.sorted() == ["MONOTONIC_USEC", "RELOADING"])
        let microseconds = try #require(fields["MONOTONIC_USEC"].flatMap { UInt64($0) })
        let lower = UInt64(before.tv_sec) * 1_000_000 + UInt64(before.tv_nsec) / 1000
        let upper = UInt64(after.tv_sec) * 1_000_000 + UInt64(after.tv_nsec) / 1000
        #expect(lower <= microseconds && microseconds <= upper)
    }

    @Test func aVanishedSystemdIsIgnored() throws {
        var listener: NotifyListener? = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener!.socketPath)
        listener = nil  // the socket file is gone: sendto fails with ENOENT/ECONNREFUSED
        notifier.ready(status: "serving")
        notifier.watchdog()
        notifier.stopping()
    }

    @Test func fromEnvironmentIsNilWithoutNotifySocket() {
        #expect(SystemdNotifier.fromEnvironment([:]) == nil)
        #expect(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": ""]) == nil)
        #expect(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": "relative/path"]) == nil)
    }

    @Test func fromEnvironmentUsesNotifySocket() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try #require(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": listener.socketPath]))
        notifier.watchdog()
        #expect(listener.nextDatagram() == "WATCHDOG=1")
    }

    @Test func refusesPathsThatAreNoSocketAddress() {
        #expect(throws: AgentError.self) { try SystemdNotifier(socketPath: "") }
        #expect(throws: AgentError.self) { try SystemdNotifier(socketPath: "@") }
        #expect(throws: AgentError.self) { try SystemdNotifier(socketPath: "vsock:2:1234") }
        #expect(throws: AgentError.self) { try SystemdNotifier(socketPath: "/" + String(repeating: "a", count: 200)) }
    }

    @Test func watchdogIntervalIsHalfOfWatchdogUsec() {
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000"]) == .seconds(15))
        #expect(
            SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"])
                == .seconds(15)
        )
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "3"]) == .microseconds(1))
    }

    @Test func watchdogIntervalIgnoresAnotherProcessOrABadValue() {
        #expect(SystemdNotifier.watchdogInterval([:]) == nil)
        let anotherProcess = ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid() + 1)"]
        #expect(SystemdNotifier.watchdogInterval(anotherProcess) == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "init"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "0"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "-5"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30s"]) == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_PID": "\(getpid())"]) == nil)
    }
}

/// Drives a pacer through loop ticks at `offsets` after one start instant; returns the ticks that pinged.
private func pings(interval: Duration, ticks offsets: [Duration]) -> [Duration] {
    let start = MonotonicInstant.now
    var pacer = WatchdogPacer(interval: interval)
    return offsets.filter { pacer.shouldPing(now: start + $0) }
}

@Suite struct WatchdogPacerTests {
    @Test func pingsAtOnceThenOncePerInterval() {
        let ticks: [Duration] = [
            .zero, .seconds(1), .milliseconds(14_999), .seconds(15), .seconds(16), .milliseconds(29_999),
            .seconds(30),
        ]
        #expect(pings(interval: .seconds(15), ticks: ticks) == [.zero, .seconds(15), .seconds(30)])
    }

    @Test func paceRestartsFromALateTick() {
        // The loop was busy for 20 s: ping then, and the next one is due 15 s after that one.
        let ticks: [Duration] = [.zero, .seconds(20), .seconds(34), .seconds(35)]
        #expect(pings(interval: .seconds(15), ticks: ticks) == [.zero, .seconds(20), .seconds(35)])
    }

    @Test func oneSecondTicksPingEveryFifteenSeconds() {
        let ticks = (0...60).map { Duration.seconds($0) }
        let expected: [Duration] = [.zero, .seconds(15), .seconds(30), .seconds(45), .seconds(60)]
        #expect(pings(interval: .seconds(15), ticks: ticks) == expected)
    }

    @Test func frequentTicksDoNotPingMoreOften() {
        let ticks = (0..<1000).map { Duration.milliseconds($0 * 10) }  // a busy loop: every 10 ms for 10 s
        #expect(pings(interval: .seconds(5), ticks: ticks) == [.zero, .seconds(5)])
    }

    @Test func systemdWatchdogSendsAtThePacersPace() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        let watchdog = try #require(
            SystemdWatchdog.fromEnvironment(notifier: notifier, ["WATCHDOG_USEC": "30000000"])
        )
        let start = MonotonicInstant.now
        watchdog.tick(now: start)
        watchdog.tick(now: start + .seconds(5))
        #expect(listener.nextDatagram() == "WATCHDOG=1")
        #expect(listener.nextDatagram() == nil)
        watchdog.tick(now: start + .seconds(15))
        #expect(listener.nextDatagram() == "WATCHDOG=1")
    }

    @Test func noSystemdWatchdogWithoutWatchdogUsec() throws {
        let listener = try NotifyListener.inFileSystem()
        let notifier = try SystemdNotifier(socketPath: listener.socketPath)
        #expect(SystemdWatchdog.fromEnvironment(notifier: notifier, [:]) == nil)
        #expect(SystemdWatchdog.fromEnvironment(notifier: nil, ["WATCHDOG_USEC": "30000000"]) == nil)
    }
}
