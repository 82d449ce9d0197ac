import ZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether anyone accepts connections at an `ipc://` endpoint's socket file.
///
/// libzmq connects in the background and retries for ever, silently: without this look, a request to an
/// agent that is not running would wait out every timeout before the app got its default content. The
/// look is a non-blocking Unix-domain `connect`, closed at once (the agent's libzmq drops it without a
/// word); the probe is the ZeroMQ module's, which `bind` uses too.
enum ListenerState: Equatable {
    /// Someone accepts connections: wait for libzmq to finish connecting.
    case listening
    /// No socket file, or one nobody serves (a stopped or crashed agent).
    case notListening(String)
    /// The socket file exists but this user may not connect (not in the socket file's group).
    case notPermitted
    /// Not an `ipc://` path (tcp, an abstract socket): nothing to look at; wait for libzmq.
    case unknown
}

/// Looks at `endpoint` without sending anything.
func probeListener(at endpoint: String) -> ListenerState {
    guard let path = ipcPath(of: endpoint) else { return .unknown }
    // Out of descriptors, a path too long, or similar: let libzmq find out and report.
    guard let code = connectProbe(path) else { return .unknown }
    switch code {
    // EAGAIN: the listener's backlog is full; it is alive, only busy.
    case 0, EINPROGRESS, EAGAIN, EINTR: return .listening
    case ENOENT: return .notListening("no socket file at \(path); is preflightd running?")
    case ECONNREFUSED: return .notListening("nobody serves the socket file \(path); is preflightd running?")
    case EACCES, EPERM: return .notPermitted
    default: return .notListening("cannot connect to \(path) (errno \(code))")
    }
}
