import Foundation
import Testing
import ZeroMQ

/// How long a test waits for something that should happen promptly; generous because CI boxes are noisy.
let patience: Duration = .seconds(10)

/// Thrown when something a test waits for does not happen within `patience`.
struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// An `inproc://` endpoint no other test uses.
func uniqueInprocEndpoint() -> String {
    "inproc://zeromq-tests-\(UUID().uuidString)"
}

/// A fresh directory under /tmp, removed on deinit; short, because Unix socket paths are limited to 107 bytes.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/zmqt-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let created else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: created)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// An `ipc://` endpoint for a socket file named `name` in this directory.
    func endpoint(_ name: String = "test.sock") -> String {
        "ipc://\(path)/\(name)"
    }

    /// The filesystem path for `name` in this directory.
    func file(_ name: String = "test.sock") -> String {
        "\(path)/\(name)"
    }
}

/// Makes a socket with linger 0, so a test never waits at context termination for messages to a peer that is gone.
func makeSocket(_ context: ZeroMQContext, _ type: SocketType) throws -> ZeroMQSocket {
    let socket = try context.makeSocket(type)
    try socket.setOption(.linger(milliseconds: 0))
    return socket
}

/// Receives the next whole message on `socket`, failing the test after `timeout` instead of hanging.
func receiveMessage(on socket: ZeroMQSocket, within timeout: Duration = patience) throws -> [[UInt8]] {
    var items = [PollItem(socket: socket, events: .readable)]
    guard try poll(&items, timeout: timeout) == 1 else {
        throw TimedOut(what: "a message")
    }
    return try socket.receive(dontWait: true)
}

/// Whether `path` names an existing file (of any kind).
func fileExists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// Whether `path` names a Unix-domain socket file.
func isSocketFile(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
}

/// The UTF-8 bytes of `string`, for readable frame literals.
func bytes(_ string: String) -> [UInt8] {
    Array(string.utf8)
}
