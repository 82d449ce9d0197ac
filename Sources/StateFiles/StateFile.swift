import Logging
import PreflightCore
import PreflightProtocol

#if canImport(Glibc)
import Glibc
#endif

/// A small JSON file in the state directory, written so that a power cut leaves either the old or the
/// new version: temporary file, fsync, rename, fsync of the folder. A file that cannot be read is
/// moved aside with a log line, never a crash.
public struct StateFile: Sendable {
    public let path: String
    private let logger: Logger
    private let mode: mode_t

    public init(path: String, mode: mode_t = 0o600, logger: Logger) {
        self.path = path
        self.mode = mode
        self.logger = logger
    }

    /// The stored object, or nil when there is none (or it was corrupt and has been moved aside).
    public func read() -> JSONObject? {
        // Unreadable counts as missing, and there is no size bound, as when this read through FileManager.
        guard let data = try? FileSystem.readFile(path, limit: .max) else { return nil }
        if case .object(let object)? = try? JSONReader.read(data) {
            return object
        }
        do throws(SystemCallError) {
            let aside = try FileSystem.moveAside(path, stamp: SystemClock.wallMilliseconds() / 1000)
            logger.error("state file unreadable; moved aside", metadata: ["file": "\(path)", "movedTo": "\(aside)"])
        } catch {
            logger.error(
                "state file unreadable, and it cannot be moved aside; it is ignored and will be replaced",
                metadata: ["file": "\(path)", "errno": "\(error.errno)"]
            )
        }
        return nil
    }

    /// Replaces the file atomically. Failures are logged, not thrown: state that cannot be saved must
    /// not stop the agent from serving.
    public func write(_ object: JSONObject) {
        do {
            try Self.atomicWrite(JSONWriter.encode(.object(object)) + [0x0A], to: path, mode: mode)
        } catch {
            logger.error("cannot write state file", metadata: ["file": "\(path)", "error": "\(error)"])
        }
    }

    /// Deletes the file (none is fine). Failures are logged, not thrown.
    public func remove() {
        do throws(SystemCallError) {
            try FileSystem.remove(path)
        } catch {
            logger.error("cannot remove state file", metadata: ["file": "\(path)", "errno": "\(error.errno)"])
        }
    }

    /// temp file (same folder) → write → fsync → rename → fsync the folder; creates the folder.
    public static func atomicWrite(_ bytes: [UInt8], to path: String, mode: mode_t) throws(SystemCallError) {
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        if !folder.isEmpty {
            try? FileSystem.makeDirectories(folder)
        }
        try FileSystem.writeAtomically(bytes, to: path, mode: mode)
    }
}
