import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// Starts POSIX threads that run one closure: the agent's I/O thread and each client's. Foundation's
/// `Thread` would do, but it lives only in full Foundation, and linking that pulls ICU's data into the
/// self-contained binary.
public enum NativeThread {
    /// `pthread_create` failed with `code`.
    public struct StartError: Error, Sendable, Hashable {
        public var code: Int32
    }

    private final class Work: Sendable {
        /// The name as a C string of at most 15 bytes (Linux's limit), cut by bytes: never a crash on a
        /// name whose 15th byte falls inside a character.
        let name: [CChar]?
        let body: @Sendable () -> Void

        init(name: String?, _ body: @escaping @Sendable () -> Void) {
            self.name = name.map { $0.utf8.prefix(15).map { CChar(bitPattern: $0) } + [0] }
            self.body = body
        }
    }

    /// Starts a joinable thread running `body`, named `name` when given (Linux keeps 15 bytes of it; the
    /// name shows in `top -H` and in crash reports). The caller joins or detaches it.
    public static func start(
        name: String? = nil,
        _ body: @escaping @Sendable () -> Void
    ) throws(StartError) -> pthread_t {
        let work = Unmanaged.passRetained(Work(name: name, body))
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { argument in
                guard let argument else { return nil }
                let work = Unmanaged<Work>.fromOpaque(argument).takeRetainedValue()
                // Named from inside, before the body runs: named by the creator after pthread_create, the
                // body could start (and read or report its name) under the creator's name.
                work.name?.withUnsafeBufferPointer { _ = preflight_set_thread_name(pthread_self(), $0.baseAddress!) }
                work.body()
                return nil
            },
            work.toOpaque()
        )
        guard result == 0 else {
            work.release()
            throw StartError(code: result)
        }
        return thread
    }

    /// Starts a detached thread running `body`; see `start(name:_:)`.
    public static func startDetached(name: String? = nil, _ body: @escaping @Sendable () -> Void) throws(StartError) {
        pthread_detach(try start(name: name, body))
    }
}
