#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// libzmq 4.3's ipc listener unlinks the path before binding, unconditionally: binding over a path another
// process serves silently steals it, and binding over a regular file deletes the file. `ZeroMQSocket.bind`
// uses these functions to refuse both cases while still replacing the stale socket a crashed process left.

/// What is at a filesystem path an `ipc://` endpoint names.
enum IPCPathState: Equatable {
    /// Nothing, or a socket file no one accepts connections on: binding may replace it.
    case absentOrStale
    /// A socket file some process accepts connections on.
    case liveListener
    /// A file that is not a socket, which libzmq would delete.
    case notASocket
}

/// The filesystem path of an `ipc://` endpoint, or nil for other transports, `ipc://*` (libzmq picks a fresh
/// path) and Linux abstract names (`ipc://@name`, which have no file and which the kernel already refuses to bind
/// twice).
public func ipcPath(of endpoint: String) -> String? {
    let scheme = "ipc://"
    guard endpoint.hasPrefix(scheme) else {
        return nil
    }
    let path = String(endpoint.dropFirst(scheme.count))
    if path.isEmpty || path == "*" || path.hasPrefix("@") {
        return nil
    }
    return path
}

/// Looks at `path` without changing it: `lstat`, then a non-blocking Unix-domain `connect` if it is a socket.
///
/// Anything unexpected (a path too long for `sockaddr_un`, no file descriptor to spare, ...) answers
/// `.absentOrStale`, leaving libzmq to report the real problem when it binds.
func probeIPCPath(_ path: String) -> IPCPathState {
    var status = stat()
    guard lstat(path, &status) == 0 else {
        return .absentOrStale
    }
    guard status.st_mode & S_IFMT == S_IFSOCK else {
        return .notASocket
    }

    switch connectProbe(path) {
    case 0?:
        return .liveListener
    case let code?:
        // A listener whose backlog is full makes a non-blocking connect fail with EAGAIN: still live.
        // ECONNREFUSED is the stale file a dead process left behind.
        return code == EAGAIN || code == EINPROGRESS ? .liveListener : .absentOrStale
    case nil:
        return .absentOrStale
    }
}

/// A non-blocking Unix-domain `connect` to `path`, closed at once (a libzmq listener drops it without a
/// word): 0 when it connected, else the `errno` it failed with (EINPROGRESS and EAGAIN mean a live but busy
/// listener, ENOENT no file, ECONNREFUSED a file nobody serves, EACCES not permitted). nil when no probe
/// could be made (a path too long for `sockaddr_un`, no descriptor to spare).
public func connectProbe(_ path: String) -> CInt? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let pathBytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard pathBytes.count < capacity else {
        return nil
    }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }

    #if canImport(Glibc)
    let socketType = CInt(SOCK_STREAM.rawValue) | CInt(SOCK_NONBLOCK.rawValue) | CInt(SOCK_CLOEXEC.rawValue)
    #else
    let socketType = SOCK_STREAM
    #endif
    let descriptor = socket(AF_UNIX, socketType, 0)
    guard descriptor >= 0 else {
        return nil
    }
    defer { _ = close(descriptor) }
    #if !canImport(Glibc)
    _ = fcntl(descriptor, F_SETFL, O_NONBLOCK)
    #endif

    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    return result == 0 ? 0 : errno
}
