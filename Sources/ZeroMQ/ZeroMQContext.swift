import CZeroMQ

/// A libzmq context: the I/O threads and the `inproc://` namespace its sockets share.
///
/// Thread-safe, as libzmq contexts are, so `Sendable`. Each socket keeps a strong reference to its context, so the
/// context is terminated (`zmq_ctx_term`, in `deinit`) only after its last socket has been closed and released.
/// Termination waits for each closed socket's unsent messages for that socket's `linger` period, which libzmq
/// defaults to forever: set `.linger` on sockets that may hold messages for a peer that is gone.
public final class ZeroMQContext: Sendable {
    // Why `nonisolated(unsafe)` is sound: the pointer is set once in `init` and never changed, and libzmq documents
    // every context function (`zmq_socket`, `zmq_ctx_shutdown`, `zmq_ctx_term`, ...) as safe to call from any thread.
    nonisolated(unsafe) let handle: UnsafeMutableRawPointer

    /// Creates a context with `ioThreads` background I/O threads (libzmq's default is 1; 0 is valid for
    /// `inproc://`-only use).
    ///
    /// - Throws: `.invalidArgument` when `ioThreads` is negative or too large; `.tooManyOpenFiles` when the
    ///   process is out of file descriptors.
    public init(ioThreads: Int = 1) throws(ZeroMQError) {
        guard let threads = CInt(exactly: ioThreads), threads >= 0 else {
            throw .invalidArgument
        }
        let handle = try pointerOrError { zmq_ctx_new() }
        if threads != ZMQ_IO_THREADS_DFLT {
            do throws(ZeroMQError) {
                _ = try valueOrError(retryOnInterrupt: false) { zmq_ctx_set(handle, ZMQ_IO_THREADS, threads) }
            } catch {
                // No socket exists yet, so this cannot block.
                _ = zmq_ctx_term(handle)
                throw error
            }
        }
        self.handle = handle
    }

    deinit {
        // Every socket holds a reference to us, so all are closed by now and this waits only for linger.
        // EINTR means a signal arrived while waiting; libzmq asks the caller to call zmq_ctx_term again.
        _ = try? valueOrError(retryOnInterrupt: true) { zmq_ctx_term(handle) }
    }

    /// Creates a socket of `type` in this context.
    ///
    /// - Throws: `.contextTerminated` after `shutdown()`; `.tooManyOpenFiles` at the socket limit (1023 by
    ///   default).
    public func makeSocket(_ type: SocketType) throws(ZeroMQError) -> ZeroMQSocket {
        try ZeroMQSocket(context: self, type: type)
    }

    /// Shuts the context down (`zmq_ctx_shutdown`): blocking calls on its sockets, in progress or later, fail
    /// with `.contextTerminated`, and `makeSocket` fails too.
    ///
    /// Safe to call from any thread and more than once. Sockets must still be closed (or released) by their
    /// owners before the context can finish terminating.
    public func shutdown() {
        // Fails only with EFAULT for an invalid context, which `handle` never is.
        _ = zmq_ctx_shutdown(handle)
    }
}
