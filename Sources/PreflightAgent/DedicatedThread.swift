import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// A detached POSIX thread that runs one closure: the I/O thread that owns every ZeroMQ socket.
///
/// Foundation's `Thread` would do, but it lives only in full Foundation, and linking that pulls ICU's
/// data into the self-contained binary; the agent builds on FoundationEssentials instead.
enum DedicatedThread {
    private final class Work {
        let body: () -> Void

        init(_ body: @escaping () -> Void) {
            self.body = body
        }
    }

    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(AgentError) {
        let work = Unmanaged.passRetained(Work(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { argument in
                let work = Unmanaged<Work>.fromOpaque(argument!).takeRetainedValue()
                work.body()
                return nil
            },
            work
        )
        guard result == 0 else {
            Unmanaged<Work>.fromOpaque(work).release()
            throw AgentError.system("pthread_create", errno: result)
        }
        // Linux limits thread names to 15 bytes; the name shows in `top -H` and in crash reports.
        _ = preflight_set_thread_name(thread, String(name.utf8.prefix(15))!)
        pthread_detach(thread)
    }
}
