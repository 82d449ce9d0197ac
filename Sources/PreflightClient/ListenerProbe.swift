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
/// word). The ZeroMQ module has the same probe for `bind`, but keeps it internal.
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

/// The socket file path of an `ipc://` endpoint, or nil (other transports, `ipc://*`, abstract `ipc://@name`).
func socketFilePath(of endpoint: String) -> String? {
    let scheme = "ipc://"
    guard endpoint.hasPrefix(scheme) else { return nil }
    let path = String(endpoint.dropFirst(scheme.count))
    guard !path.isEmpty, path != "*", !path.hasPrefix("@") else { return nil }
    return path
}

/// Looks at `endpoint` without sending anything.
func probeListener(at endpoint: String) -> ListenerState {
    guard let path = socketFilePath(of: endpoint) else { return .unknown }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let pathBytes = Array(path.utf8)
    guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return .unknown }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }

    #if canImport(Glibc)
    let socketType = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue)
    #else
    let socketType = SOCK_STREAM
    #endif
    let descriptor = socket(AF_UNIX, socketType, 0)
    // Out of descriptors or similar: let libzmq find out and report.
    guard descriptor >= 0 else { return .unknown }
    defer { close(descriptor) }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    if result == 0 { return .listening }
    switch errno {
    // EAGAIN: the listener's backlog is full; it is alive, only busy.
    case EINPROGRESS, EAGAIN, EINTR: return .listening
    case ENOENT: return .notListening("no socket file at \(path); is preflightd running?")
    case ECONNREFUSED: return .notListening("nobody serves the socket file \(path); is preflightd running?")
    case EACCES, EPERM: return .notPermitted
    default: return .notListening("cannot connect to \(path) (errno \(errno))")
    }
}
