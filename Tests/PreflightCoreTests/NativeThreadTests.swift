import CLinuxShims
import PreflightCore
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct NativeThreadTests {
    @Test func runsTheBodyOnANewNamedThread() throws {
        let seen = Mutex<(name: String, sameThread: Bool)?>(nil)
        let caller = pthread_self()
        let thread = try NativeThread.start(name: "preflight-test-thread-long") {
            var buffer = [CChar](repeating: 0, count: 32)
            pthread_getname_np(pthread_self(), &buffer, buffer.count)
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            seen.withLock { $0 = (name, pthread_equal(pthread_self(), caller) != 0) }
        }
        pthread_join(thread, nil)
        let result = try #require(seen.withLock { $0 })
        #expect(result.name == "preflight-test-")
        #expect(!result.sameThread)
    }

    /// Linux keeps 15 bytes of a name; one whose 15th byte falls inside a character is cut there, not refused.
    @Test func aNameIsCutByBytes() throws {
        let seen = Mutex<[UInt8]?>(nil)
        let thread = try NativeThread.start(name: "preflight-testé-thread") {
            var buffer = [CChar](repeating: 0, count: 32)
            pthread_getname_np(pthread_self(), &buffer, buffer.count)
            seen.withLock { $0 = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) } }
        }
        pthread_join(thread, nil)
        let name = try #require(seen.withLock { $0 })
        #expect(name == Array("preflight-testé".utf8.prefix(15)))
    }

    @Test func aDetachedThreadRuns() async throws {
        let done = Mutex(false)
        try NativeThread.startDetached { done.withLock { $0 = true } }
        let deadline = MonotonicInstant.now + .seconds(5)
        while !done.withLock({ $0 }) && MonotonicInstant.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(done.withLock { $0 })
    }
}
