import PreflightCore
import PreflightProtocol
import Synchronization
import ZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for one reply; resumed exactly once, on the client's I/O thread (or on the submitting thread, when
/// the request fails at once because the client is closed).
///
/// Either an async caller's continuation, or a handler for the calls that return before the reply (the SDKs'
/// fire-and-forget and callback forms). A handler runs where the waiter is resumed, often the I/O thread, so
/// it must only hand the result on (``PreflightClient/post(_:args:timeout:then:)`` starts a task for it).
struct ReplyWaiter: Sendable {
    typealias Outcome = Result<JSONValue, PreflightError>

    private enum Kind: Sendable {
        case continuation(CheckedContinuation<Outcome, Never>)
        case handler(@Sendable (Outcome) -> Void)
    }

    private let kind: Kind

    init(_ continuation: CheckedContinuation<Outcome, Never>) {
        kind = .continuation(continuation)
    }

    init(handler: @escaping @Sendable (Outcome) -> Void) {
        kind = .handler(handler)
    }

    func resume(returning outcome: Outcome) {
        switch kind {
        case .continuation(let continuation): continuation.resume(returning: outcome)
        case .handler(let handler): handler(outcome)
        }
    }
}

/// The part of a client every thread may touch: the hand-over queue to the I/O thread and its wake-up.
///
/// Callers append a `Submission` under the mutex and write the eventfd; the I/O thread, which owns the
/// socket, drains the eventfd, takes the whole queue in one lock, and resumes each caller's continuation
/// when its reply arrives (or its attempts run out).
final class ClientCore: Sendable {
    struct Submission: Sendable {
        var id: String
        var body: [UInt8]
        var timeout: Duration
        var waiter: ReplyWaiter
    }

    struct Intake {
        var submissions: [Submission] = []
        var cancellations: [String] = []
        var closing = false
    }

    private struct Shared {
        var submissions: [Submission] = []
        var cancellations: [String] = []
        var closing = false
        var thread: pthread_t?
        var nextID: UInt64 = 1
    }

    let endpoint: String
    let configuration: PreflightClient.Configuration
    let wakeUp: EventSignal
    private let shared = Mutex(Shared())

    init(endpoint: String, configuration: PreflightClient.Configuration) throws(PreflightError) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.wakeUp = try EventSignal()
    }

    /// Starts the I/O thread, which owns `context` and the sockets it makes; the context is terminated when the
    /// thread ends.
    func start(context: ZeroMQContext) throws(PreflightError) {
        let thread: pthread_t
        do throws(NativeThread.StartError) {
            thread = try NativeThread.start { [self] in
                RequestLoop(core: self, context: context).run()
            }
        } catch {
            throw PreflightError(
                code: .systemError,
                message: "cannot start the client's I/O thread (error \(error.code))"
            )
        }
        shared.withLock { $0.thread = thread }
    }

    /// A fresh request id, unique for this client's lifetime.
    func makeID() -> String {
        let number = shared.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return String(number)
    }

    /// Hands a request to the I/O thread. Fails it at once when the client is closed or the calling task is
    /// already cancelled (checked under the lock `cancel` takes, so a cancellation is never lost).
    func submit(_ submission: Submission) {
        enum Decision {
            case queued(signal: Bool)
            case fail(PreflightError)
        }
        let decision = shared.withLock { state -> Decision in
            if state.closing {
                return .fail(PreflightError(code: .closed, message: "the PreflightClient was closed"))
            }
            if Task.isCancelled {
                return .fail(PreflightError(code: .cancelled, message: "the calling task was cancelled"))
            }
            // Only the first of a burst writes the eventfd: the I/O thread takes the whole queue at once.
            let signal = state.submissions.isEmpty && state.cancellations.isEmpty
            state.submissions.append(submission)
            return .queued(signal: signal)
        }
        switch decision {
        case .queued(let signal):
            if signal { wakeUp.signal() }
        case .fail(let error):
            submission.waiter.resume(returning: .failure(error))
        }
    }

    /// The calling task was cancelled: its request is failed with `.cancelled`, now if the I/O thread has not
    /// taken it yet, else by the I/O thread.
    func cancel(id: String) {
        let taken = shared.withLock { state -> Submission? in
            if let index = state.submissions.firstIndex(where: { $0.id == id }) {
                return state.submissions.remove(at: index)
            }
            state.cancellations.append(id)
            return nil
        }
        if let taken {
            taken.waiter.resume(
                returning: .failure(PreflightError(code: .cancelled, message: "the calling task was cancelled"))
            )
        } else {
            wakeUp.signal()
        }
    }

    /// For the I/O thread: everything handed over since the last call.
    func takeIntake() -> Intake {
        shared.withLock { state in
            defer {
                state.submissions = []
                state.cancellations = []
            }
            return Intake(submissions: state.submissions, cancellations: state.cancellations, closing: state.closing)
        }
    }

    /// Stops the I/O thread: pending requests fail with `.closed`. Waits for the thread to finish unless
    /// called on it. Idempotent.
    func close() {
        let thread = shared.withLock { state -> pthread_t? in
            state.closing = true
            defer { state.thread = nil }
            return state.thread
        }
        wakeUp.signal()
        guard let thread else { return }
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }
}

/// A non-blocking pipe that callers write to so that the I/O thread's `zmq_poll` wakes up (the agent uses an
/// eventfd; a pipe needs no Linux-only header and works the same under `poll`).
///
/// Sendable because the descriptors never change after init, and the kernel makes each one-byte `write` and
/// each `read` atomic whatever thread calls it.
final class EventSignal: Sendable {
    /// The end the I/O thread polls and drains.
    let fileDescriptor: CInt
    private let writeEnd: CInt

    init() throws(PreflightError) {
        var ends: [CInt] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw PreflightError(code: .systemError, message: "cannot make the wake-up pipe (errno \(errno))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        fileDescriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(fileDescriptor)
        close(writeEnd)
    }

    /// Wakes the poller. Never blocks: a full pipe already means "wake up".
    func signal() {
        var one: UInt8 = 1
        while write(writeEnd, &one, 1) < 0 && errno == EINTR {}
    }

    /// Empties the pipe after a wake-up.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fileDescriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < buffer.count { return }
        }
    }
}
