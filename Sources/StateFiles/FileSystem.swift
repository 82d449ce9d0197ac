// The state directory's file operations, shared by every module that keeps state across restarts
// (TargetOffers: visitor and notification journal; PassAuthorization: registration and device id).
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: which call, on what, and `errno` read right after it.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    public var call: String
    public var path: String
    public var errno: Int32

    public init(call: String, path: String, errno: Int32) {
        self.call = call
        self.path = path
        self.errno = errno
    }

    public var description: String { "\(call) \(path): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The handful of file operations the state directory needs, each behind one small function that reads
/// `errno` at once and retries on EINTR.
public enum FileSystem {
    /// The whole file, or nil when it does not exist. Files over `limit` bytes are refused (EFBIG):
    /// a state file never grows that large, and a huge one is not ours.
    public static func readFile(_ path: String, limit: Int = 1 << 20) throws(SystemCallError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw SystemCallError(call: "open", path: path, errno: code)
        }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw SystemCallError(call: "read", path: path, errno: code)
            }
            if count == 0 { return contents }
            contents.append(contentsOf: chunk[0..<count])
            if contents.count > limit { throw SystemCallError(call: "read", path: path, errno: EFBIG) }
        }
    }

    /// Replaces `path` with `bytes` so that a crash leaves either the old or the new file, never a torn
    /// one: write a temporary file in the same directory with `mode`, fsync it, rename it over `path`,
    /// fsync the directory.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, mode: mode_t) throws(SystemCallError) {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        if fd < 0 { throw SystemCallError(call: "open", path: temporary, errno: errno) }
        var failure: SystemCallError?
        // The umask may have narrowed or (with a strange one) widened the mode given to open.
        if fchmod(fd, mode) != 0 { failure = SystemCallError(call: "fchmod", path: temporary, errno: errno) }
        var written = 0
        while failure == nil && written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                let code = errno
                if code != EINTR { failure = SystemCallError(call: "write", path: temporary, errno: code) }
            } else {
                written += count
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = SystemCallError(call: "fsync", path: temporary, errno: errno) }
        close(fd)
        if failure == nil && rename(temporary, path) != 0 {
            failure = SystemCallError(call: "rename", path: path, errno: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        syncDirectory(of: path)
    }

    /// Removes the temporary files `writeAtomically` left in `directory` when its process died mid-write
    /// (`<file>.tmp-<pid>` whose process no longer exists), and returns their paths. A live process's
    /// file is left alone: it may be writing it now.
    public static func removeStaleTemporaries(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            names.append(name)
        }
        closedir(handle)
        var removed: [String] = []
        for name in names {
            guard let dot = name.lastIndex(of: "."), name[dot...].hasPrefix(".tmp-"),
                let pid = pid_t(name[name.index(dot, offsetBy: 5)...]), pid > 0, pid != getpid(),
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            let path = "\(directory)/\(name)"
            if unlink(path) == 0 { removed.append(path) }
        }
        return removed
    }

    /// Renames a file; used to move a corrupt state file aside.
    public static func move(_ path: String, to destination: String) throws(SystemCallError) {
        if rename(path, destination) != 0 { throw SystemCallError(call: "rename", path: path, errno: errno) }
    }

    /// Removes a file; a file that is already gone is fine.
    public static func remove(_ path: String) throws(SystemCallError) {
        if unlink(path) != 0 {
            let code = errno
            if code != ENOENT { throw SystemCallError(call: "unlink", path: path, errno: code) }
        }
    }

    /// Creates a directory (not its parents) with `mode`; an existing one is fine.
    public static func makeDirectory(_ path: String, mode: mode_t) throws(SystemCallError) {
        if mkdir(path, mode) != 0 {
            let code = errno
            if code != EEXIST { throw SystemCallError(call: "mkdir", path: path, errno: code) }
        }
    }

    /// The permission bits of a file, or nil when it cannot be read.
    public static func permissions(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    private static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        // Best effort: the rename is already visible; this only makes it durable across power loss.
        _ = fsync(fd)
        close(fd)
    }
}
