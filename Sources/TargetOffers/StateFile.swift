import Foundation
import Logging
import PreflightProtocol

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
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        if case .object(let object)? = try? JSONReader.read(Array(data)) {
            return object
        }
        let aside = "\(path).corrupt-\(Int(Date().timeIntervalSince1970))"
        try? FileManager.default.moveItem(atPath: path, toPath: aside)
        logger.error("state file unreadable; moved aside", metadata: ["file": "\(path)", "movedTo": "\(aside)"])
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

    /// temp file (same folder) → write → fsync → rename → fsync the folder.
    public static func atomicWrite(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temporary = "\(path).tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var ok = bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
        ok = ok && fsync(descriptor) == 0
        close(descriptor)
        guard ok, rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
