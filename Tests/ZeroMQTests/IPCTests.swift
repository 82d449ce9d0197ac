import Foundation
import Testing
import ZeroMQ

#if canImport(Glibc)
import Glibc

private let streamSocketType = CInt(SOCK_STREAM.rawValue)
#elseif canImport(Darwin)
import Darwin

private let streamSocketType = SOCK_STREAM
#endif

/// How `ipc://` endpoints treat the socket file: libzmq 4.3 facts the daemon relies on, and the guard that
/// `bind` adds on top of them.
@Suite struct IPCTests {
    @Test func bindingTheSameIPCPathTwiceInOneContextThrowsAddressInUse() throws {
        let directory = try TemporaryDirectory()
        let context = try ZeroMQContext()
        let first = try makeSocket(context, .rep)
        try first.bind(directory.endpoint())
        let second = try makeSocket(context, .rep)

        #expect(throws: ZeroMQError.addressInUse) { try second.bind(directory.endpoint()) }
        // The live socket file was left alone: the first socket still serves it.
        let client = try makeSocket(context, .req)
        try client.connect(directory.endpoint())
        try client.send([bytes("still first")])
        #expect(try receiveMessage(on: first) == [bytes("still first")])
    }

    @Test func bindingAnIPCPathServedByAnotherContextThrowsAddressInUse() throws {
        // A separate context stands in for another process: same kernel-level situation.
        let directory = try TemporaryDirectory()
        let owner = try ZeroMQContext()
        let first = try makeSocket(owner, .rep)
        try first.bind(directory.endpoint())
        let intruder = try ZeroMQContext()
        let second = try makeSocket(intruder, .rep)

        #expect(throws: ZeroMQError.addressInUse) { try second.bind(directory.endpoint()) }
    }

    @Test func bindingReplacesAStaleSocketFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file()
        // A Unix socket bound but never listening, as a crashed process leaves behind: connect is refused.
        let descriptor = socket(AF_UNIX, streamSocketType, 0)
        try #require(descriptor >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(descriptor)
        try #require(bound == 0)
        try #require(isSocketFile(path))

        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)
        try server.bind(directory.endpoint())
        let client = try makeSocket(context, .req)
        try client.connect(directory.endpoint())
        try client.send([bytes("new owner")])
        #expect(try receiveMessage(on: server) == [bytes("new owner")])
    }

    @Test func bindingRefusesToDeleteAFileThatIsNotASocket() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file()
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)

        #expect(throws: ZeroMQError.fileExists) { try server.bind(directory.endpoint()) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    @Test func closingAnIPCSocketLeavesItsFileBehind() throws {
        let directory = try TemporaryDirectory()
        do {
            let context = try ZeroMQContext()
            let server = try makeSocket(context, .rep)
            try server.bind(directory.endpoint())
            #expect(isSocketFile(directory.file()))
            server.close()
            // Leaving the scope terminates the context, which waits until the listener is really closed.
        }
        #expect(isSocketFile(directory.file()), "libzmq 4.3 does not unlink a named ipc path on close")

        // The file left behind is stale, so binding it again works.
        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)
        try server.bind(directory.endpoint())
    }

    @Test func unbindingAnIPCSocketLeavesItsFileBehind() throws {
        let directory = try TemporaryDirectory()
        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)
        try server.bind(directory.endpoint())
        try server.unbind(directory.endpoint())

        // The listener closes asynchronously; wait until connecting to the path is refused.
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        let probe = try makeSocket(context, .rep)
        var rebound = false
        while !rebound && clock.now < deadline {
            do {
                try probe.bind(directory.endpoint())
                rebound = true
            } catch {
                #expect(error == .addressInUse)
                usleep(1_000)
            }
        }
        #expect(rebound)
        #expect(isSocketFile(directory.file()))
    }

    @Test func wildcardIPCBindPicksAFreshPath() throws {
        let context = try ZeroMQContext()
        let server = try makeSocket(context, .rep)
        try server.bind("ipc://*")
        let endpoint = try server.lastEndpoint()
        #expect(endpoint.hasPrefix("ipc://") && endpoint != "ipc://*")

        let client = try makeSocket(context, .req)
        try client.connect(endpoint)
        try client.send([bytes("wildcard")])
        #expect(try receiveMessage(on: server) == [bytes("wildcard")])
    }

    #if os(Linux)
    @Test func bindingTheSameAbstractNameTwiceThrowsAddressInUse() throws {
        let context = try ZeroMQContext()
        let endpoint = "ipc://@zeromq-tests-\(UUID().uuidString)"
        let first = try makeSocket(context, .rep)
        try first.bind(endpoint)
        let second = try makeSocket(context, .rep)

        #expect(throws: ZeroMQError.addressInUse) { try second.bind(endpoint) }
    }
    #endif
}
