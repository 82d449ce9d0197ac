import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Every libzmq call that can fail goes through one of these two functions, so errno is read in exactly one
// place: straight after the call, before anything (an allocation, a deinit) can overwrite it.

/// Runs `call`, which follows the libzmq convention of returning -1 and setting errno on failure.
///
/// With `retryOnInterrupt`, `EINTR` re-runs `call`. Pass it only for calls that a signal interrupts before they
/// have any effect, so that making them again is exactly what the caller wanted: send, receive, poll, getsockopt
/// and zmq_ctx_term (whose documentation says to call it again).
@inline(__always)
func valueOrError(retryOnInterrupt: Bool, _ call: () -> CInt) throws(ZeroMQError) -> CInt {
    while true {
        let result = call()
        if result != -1 {
            return result
        }
        let code = zmq_errno()
        if code == EINTR && retryOnInterrupt {
            continue
        }
        throw ZeroMQError(code: code)
    }
}

/// Runs `call`, which returns NULL and sets errno on failure (`zmq_ctx_new`, `zmq_socket`).
@inline(__always)
func pointerOrError(_ call: () -> UnsafeMutableRawPointer?) throws(ZeroMQError) -> UnsafeMutableRawPointer {
    guard let pointer = call() else {
        throw ZeroMQError(code: zmq_errno())
    }
    return pointer
}
