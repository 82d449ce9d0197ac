import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// An eventfd that other threads write to so that the I/O thread's `zmq_poll` wakes up.
///
/// Sendable because an eventfd is a kernel counter: concurrent `write`s and `read`s on it are atomic
/// by the kernel's contract, and the descriptor itself never changes after init.
final class WakeUpSignal: Sendable {
    let fileDescriptor: CInt

    init() throws(AgentError) {
        let descriptor = eventfd(0, CInt(EFD_NONBLOCK | EFD_CLOEXEC))
        guard descriptor >= 0 else {
            throw AgentError.system("eventfd", errno: errno)
        }
        fileDescriptor = descriptor
    }

    deinit {
        close(fileDescriptor)
    }

    /// Wakes the poller. Never blocks: a saturated counter already means "wake up".
    func signal() {
        var one: UInt64 = 1
        while write(fileDescriptor, &one, 8) < 0 && errno == EINTR {}
    }

    /// Resets the counter after a wake-up.
    func drain() {
        var value: UInt64 = 0
        while read(fileDescriptor, &value, 8) < 0 && errno == EINTR {}
    }
}
