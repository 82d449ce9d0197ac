// The state directory's file operations, shared by every module that keeps state across restarts
// (TargetOffers: visitor and notification journal; PassEntitlement: registration and device id;
// PreflightAgent: the ipc socket folders). Every file the agent writes is written here.
import SystemPackage

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

/// The handful of file operations the state directory needs, each behind one small function that reports
/// `errno` as a `SystemCallError`. Reads and writes go through swift-system's `FileDescriptor` (which
/// retries on EINTR); what swift-system does not offer (fsync, rename, fchmod, mkdir, unlink, readdir,
/// stat) is a direct call.
public enum FileSystem {
    /// The whole file, or nil when it does not exist. Files over `limit` bytes are refused (EFBIG):
    /// a state file never grows that large, and a huge one is not ours.
    public static func readFile(_ path: String, limit: Int = 1 << 20) throws(SystemCallError) -> [UInt8]? {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(FilePath(path), .readOnly, options: [.closeOnExec])
        } catch Errno.noSuchFileOrDirectory {
            return nil
        } catch {
            throw SystemCallError(call: "open", path: path, error)
        }
        defer { try? descriptor.close() }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count: Int
            do {
                count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }
            } catch {
                throw SystemCallError(call: "read", path: path, error)
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
        let replacement = try Replacement(bytes, for: path, mode: mode)
        replacement.file.close()
        try replacement.replace()
        syncDirectory(of: path)
    }

    /// `writeAtomically` in two steps, for a caller that must not hold a lock across the fsync: the
    /// replacement is written and fsynced first (`init`, the slow part), may be appended to, and is renamed
    /// over the file later (`replace`), or thrown away (`discard`). The file stays open, for appending,
    /// under its new name.
    public struct Replacement: Sendable {
        public let path: String
        let temporary: String
        /// Open for appending (`O_APPEND`, so that truncating it later leaves no hole).
        public let file: OpenFile

        /// Writes `bytes` to a temporary file beside `path` with `mode`, and fsyncs it.
        public init(_ bytes: [UInt8], for path: String, mode: mode_t) throws(SystemCallError) {
            let temporary = "\(path).tmp-\(getpid())"
            let file = try OpenFile(
                temporary,
                options: [.create, .truncate, .append],
                permissions: FilePermissions(rawValue: CModeT(mode))
            )
            var failure: SystemCallError?
            // The umask may have narrowed or (with a strange one) widened the mode given to open.
            if fchmod(file.descriptor.rawValue, mode) != 0 {
                failure = SystemCallError(call: "fchmod", path: temporary, errno: errno)
            }
            if failure == nil {
                do throws(SystemCallError) { try file.writeAll(bytes) } catch { failure = error }
            }
            if failure == nil {
                do throws(SystemCallError) { try file.sync() } catch { failure = error }
            }
            if let failure {
                file.close()
                unlink(temporary)
                throw failure
            }
            self.path = path
            self.temporary = temporary
            self.file = file
        }

        /// Renames the replacement over the file (atomically); on failure it is removed. The caller makes
        /// the rename durable with `syncDirectory(of:)` when it can wait for the disk.
        public func replace() throws(SystemCallError) {
            if rename(temporary, path) != 0 {
                let failure = SystemCallError(call: "rename", path: path, errno: errno)
                discard()
                throw failure
            }
        }

        /// Closes and removes the replacement, leaving the file as it was.
        public func discard() {
            file.close()
            unlink(temporary)
        }
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

    /// Moves a file that cannot be read aside, to `<path>.corrupt-<stamp>`, or `<path>.corrupt-<stamp>-2`,
    /// `-3` … when that name is taken (rename(2) replaces whatever has the name, and no earlier copy may be
    /// lost). Returns the new path.
    @discardableResult
    public static func moveAside(_ path: String, stamp: Int64) throws(SystemCallError) -> String {
        let base = "\(path).corrupt-\(stamp)"
        var aside = base
        var attempt = 1
        while access(aside, F_OK) == 0 {
            attempt += 1
            aside = "\(base)-\(attempt)"
        }
        if rename(path, aside) != 0 { throw SystemCallError(call: "rename", path: path, errno: errno) }
        return aside
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

    /// Creates a directory and any missing parents, each with `mode` (narrowed by the umask); existing
    /// ones are fine.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o777) throws(SystemCallError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/\(component)"
            if component == "." || component == ".." { continue }
            try makeDirectory(prefix, mode: mode)
        }
    }

    /// The permission bits of a file, or nil when it cannot be read.
    public static func permissions(of path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Makes a rename in `path`'s directory durable across power loss (fsync of the directory; best effort).
    public static func syncDirectory(of path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        let fd = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        // Best effort: the rename is already visible; this only makes it durable across power loss.
        _ = fsync(fd)
        close(fd)
    }
}

/// A file open for writing, such as the notification journal (opened for appending): write-all, fsync,
/// truncate, close.
public struct OpenFile: Sendable {
    public let path: String
    let descriptor: FileDescriptor

    /// Opens `path` for writing with `options` (close-on-exec is added); `permissions` when it may be
    /// created.
    public init(
        _ path: String,
        options: FileDescriptor.OpenOptions,
        permissions: FilePermissions? = nil
    ) throws(SystemCallError) {
        self.path = path
        do {
            descriptor = try FileDescriptor.open(
                FilePath(path),
                .writeOnly,
                options: options.union(.closeOnExec),
                permissions: permissions
            )
        } catch {
            throw SystemCallError(call: "open", path: path, error)
        }
    }

    /// Opens `path` for appending, creating it with `mode` when missing.
    public static func appending(to path: String, creatingWith mode: mode_t? = nil) throws(SystemCallError) -> OpenFile
    {
        guard let mode else { return try OpenFile(path, options: [.append]) }
        return try OpenFile(path, options: [.append, .create], permissions: FilePermissions(rawValue: CModeT(mode)))
    }

    /// Writes every byte (a short write continues where it stopped).
    ///
    /// A loop over the raw-buffer `write` rather than swift-system's `writeAll`, which is generic over
    /// the sequence: unspecialised across the module boundary, it looked up generic metadata on every
    /// call, about 300 instructions per cached load's journal line (`tools/bench --profile`).
    public func writeAll(_ bytes: [UInt8]) throws(SystemCallError) {
        do {
            try bytes.withUnsafeBytes { buffer in
                var written = 0
                while written < buffer.count {
                    written += try descriptor.write(UnsafeRawBufferPointer(rebasing: buffer[written...]))
                }
            }
        } catch {
            throw SystemCallError(call: "write", path: path, error)
        }
    }

    /// Flushes what was written to the disk.
    public func sync() throws(SystemCallError) {
        if fsync(descriptor.rawValue) != 0 { throw SystemCallError(call: "fsync", path: path, errno: errno) }
    }

    /// Empties the file.
    public func truncate() throws(SystemCallError) {
        do {
            try descriptor.resize(to: 0)
        } catch {
            throw SystemCallError(call: "ftruncate", path: path, error)
        }
    }

    public func close() {
        try? descriptor.close()
    }
}

extension SystemCallError {
    /// From what a swift-system call threw (always an `Errno`).
    init(call: String, path: String, _ error: any Error) {
        self.init(call: call, path: path, errno: (error as? Errno)?.rawValue ?? EIO)
    }
}
