import PreflightCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// Tells systemd how the agent is doing (`sd_notify(3)`), without linking libsystemd.
///
/// The protocol is the one systemd documents as stable: one datagram of newline-separated
/// `KEY=VALUE` assignments, sent over an `AF_UNIX`/`SOCK_DGRAM` socket to the path in `$NOTIFY_SOCKET`;
/// a leading `@` names a socket in Linux's abstract namespace.
///
/// Best effort by design: every send ignores failures, because a systemd that has gone away (or a
/// full notification queue) must never stop or slow the agent. The socket is non-blocking, so a
/// call never waits either; a notification that does not fit is dropped.
///
/// Sendable because the descriptor and the address never change after init, and `sendto` of one
/// datagram on an unconnected datagram socket is atomic: concurrent senders never interleave.
public final class SystemdNotifier: Sendable {
    private let descriptor: CInt
    private let address: NotifyAddress

    /// A notifier for `$NOTIFY_SOCKET`; nil when it is unset or empty (not started by systemd with
    /// `Type=notify`) or names no usable socket, so that callers write `notifier?.ready(status:)`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> SystemdNotifier? {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        return try? SystemdNotifier(socketPath: path)
    }

    /// Opens a datagram socket for notifications to `socketPath`: an absolute file system path, or
    /// `@name` for the abstract namespace.
    /// - Throws: `AgentError` when the path cannot be a socket address (`EINVAL`, `ENAMETOOLONG`)
    ///   or the socket cannot be created.
    public init(socketPath: String) throws(AgentError) {
        address = try NotifyAddress(socketPath)
        let created = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard created >= 0 else {
            throw AgentError.system("socket(AF_UNIX, SOCK_DGRAM)", errno: errno)
        }
        descriptor = created
    }

    deinit {
        close(descriptor)
    }

    /// Sends one notification of newline-separated assignments, such as `"READY=1\nSTATUS=serving"`.
    /// Failures are ignored (see the type's documentation).
    public func notify(_ state: String) {
        let bytes = Array(state.utf8)
        guard !bytes.isEmpty else { return }
        address.withSocketAddress { socketAddress, length in
            bytes.withUnsafeBytes { buffer in
                while sendto(descriptor, buffer.baseAddress, buffer.count, CInt(MSG_NOSIGNAL), socketAddress, length)
                    < 0 && errno == EINTR
                {}
            }
        }
    }

    /// Start-up is complete (or a reload has finished): `READY=1` with a one-line status.
    public func ready(status: String) {
        notify("READY=1\nSTATUS=\(Self.oneLine(status))")
    }

    /// A one-line status that `systemctl status` shows.
    public func status(_ text: String) {
        notify("STATUS=\(Self.oneLine(text))")
    }

    /// A reload has begun: `RELOADING=1` with the `CLOCK_MONOTONIC` time in microseconds, which
    /// systemd 253 and later require with it. Send `ready(status:)` when the reload is done.
    public func reloading() {
        notify("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
    }

    /// Shutdown has begun: `STOPPING=1`.
    public func stopping() {
        notify("STOPPING=1")
    }

    /// Proves liveness to the service manager's watchdog: `WATCHDOG=1`.
    public func watchdog() {
        notify("WATCHDOG=1")
    }

    /// How often to ping the watchdog: half of `WATCHDOG_USEC`, as `sd_watchdog_enabled(3)` advises.
    ///
    /// Nil when `WATCHDOG_USEC` is unset, not a positive integer, or when `WATCHDOG_PID` is set to
    /// anything but this process's id (the variables were meant for another process, such as a parent
    /// shell that started this one).
    public static func watchdogInterval(_ environment: [String: String]) -> Duration? {
        if let pidText = environment["WATCHDOG_PID"] {
            guard let pid = pid_t(pidText), pid == getpid() else { return nil }
        }
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0,
            microseconds <= UInt64(Int64.max)
        else { return nil }
        return .microseconds(Int64(microseconds / 2))
    }

    /// `CLOCK_MONOTONIC` in microseconds, the clock systemd compares `MONOTONIC_USEC` with.
    static func monotonicMicroseconds() -> UInt64 {
        SystemClock.monotonicNanoseconds() / 1000
    }

    /// A newline would end the assignment and start another one.
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }
}

/// The socket address of `$NOTIFY_SOCKET`, kept as the bytes of `sun_path` and their length.
private struct NotifyAddress: Sendable {
    /// The bytes of `sun_path`; for the abstract namespace the first one is NUL.
    private let path: [UInt8]

    init(_ socketPath: String) throws(AgentError) {
        var bytes = Array(socketPath.utf8)
        switch bytes.first {
        case UInt8(ascii: "/"):
            break
        case UInt8(ascii: "@") where bytes.count > 1:
            bytes[0] = 0
        default:
            // Relative paths and other address families (`vsock:`) are not for this agent.
            throw AgentError.system("NOTIFY_SOCKET \(socketPath)", errno: EINVAL)
        }
        guard !bytes.dropFirst().contains(0) else {
            throw AgentError.system("NOTIFY_SOCKET \(socketPath)", errno: EINVAL)
        }
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        // A file system path needs room for its terminating NUL; an abstract name does not have one.
        guard bytes.count + (bytes[0] == 0 ? 0 : 1) <= capacity else {
            throw AgentError.system("NOTIFY_SOCKET \(socketPath)", errno: ENAMETOOLONG)
        }
        path = bytes
    }

    /// Calls `body` with a `sockaddr_un` for this address and its length: `offsetof(sun_path)` plus the
    /// path, plus the terminating NUL for a file system path only (an abstract name is exactly its bytes).
    func withSocketAddress<Result>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: path)
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)!
        let length = socklen_t(pathOffset + path.count + (path[0] == 0 ? 0 : 1))
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

/// Paces watchdog pings from the I/O loop's tick, so the ping proves the loop itself is turning.
///
/// Pure state, driven with explicit instants: call `shouldPing(now:)` every loop turn, and ping when it
/// returns true. The first call pings at once; after that, once per `interval`.
public struct WatchdogPacer: Sendable {
    /// Time between pings: `SystemdNotifier.watchdogInterval(_:)`, already half of `WATCHDOG_USEC`.
    public let interval: Duration
    private var lastPing: MonotonicInstant?

    public init(interval: Duration) {
        self.interval = interval
    }

    /// True when a ping is due at `now`; records it as sent.
    public mutating func shouldPing(now: MonotonicInstant) -> Bool {
        if let lastPing, now - lastPing < interval { return false }
        lastPing = now
        return true
    }
}

/// Sends `WATCHDOG=1` from the I/O loop's tick at the pace systemd asked for: give `tick(now:)` to
/// `IPCServer` as its `onTick`. A loop that stops turning stops the pings, and systemd restarts the agent.
///
/// Sendable: the pacer's state is behind a `Mutex`; the notifier is Sendable.
public final class SystemdWatchdog: Sendable {
    private let notifier: SystemdNotifier
    private let pacer: Mutex<WatchdogPacer>

    public init(notifier: SystemdNotifier, interval: Duration) {
        self.notifier = notifier
        self.pacer = Mutex(WatchdogPacer(interval: interval))
    }

    /// A watchdog when systemd asked for one (`WatchdogSec=` sets `WATCHDOG_USEC`), else nil.
    public static func fromEnvironment(
        notifier: SystemdNotifier?,
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> SystemdWatchdog? {
        guard let notifier, let interval = SystemdNotifier.watchdogInterval(environment) else { return nil }
        return SystemdWatchdog(notifier: notifier, interval: interval)
    }

    /// Call every loop turn; pings when the interval has passed since the last ping.
    public func tick(now: MonotonicInstant = .now) {
        if pacer.withLock({ $0.shouldPing(now: now) }) {
            notifier.watchdog()
        }
    }
}
