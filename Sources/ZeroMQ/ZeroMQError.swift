import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Error from a libzmq call, made from `zmq_errno()` read immediately after the failing call.
///
/// libzmq reports failures through `errno`, mixing POSIX values (`EAGAIN`, `EINVAL`, ...) with a few of its own
/// (`ETERM`, `EFSM`, ...). Compare against the static members, e.g. `catch let error where error == .wouldBlock`.
public struct ZeroMQError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    public let code: CInt

    /// Wraps a raw `errno` value.
    public init(code: CInt) {
        self.code = code
    }

    /// `EAGAIN`: a non-blocking call could not complete now, or a send/receive timeout expired.
    public static var wouldBlock: ZeroMQError { ZeroMQError(code: EAGAIN) }

    /// `EHOSTUNREACH`: a ROUTER socket with `routerMandatory` was asked to send to a routing id it does not know.
    public static var hostUnreachable: ZeroMQError { ZeroMQError(code: EHOSTUNREACH) }

    /// `ETERM`: the socket's context was shut down or is terminating.
    public static var contextTerminated: ZeroMQError { ZeroMQError(code: ETERM) }

    /// `EINTR`: a signal interrupted the call. The wrapper retries restartable calls, so this is rarely seen.
    public static var interrupted: ZeroMQError { ZeroMQError(code: EINTR) }

    /// `EADDRINUSE`: the endpoint is already bound.
    public static var addressInUse: ZeroMQError { ZeroMQError(code: EADDRINUSE) }

    /// `EADDRNOTAVAIL`: the endpoint names an address that is not local.
    public static var addressNotAvailable: ZeroMQError { ZeroMQError(code: EADDRNOTAVAIL) }

    /// `EINVAL`: an argument (endpoint syntax, option value, ...) was rejected.
    public static var invalidArgument: ZeroMQError { ZeroMQError(code: EINVAL) }

    /// `EMSGSIZE`: a message was too large for the operation.
    public static var messageTooLarge: ZeroMQError { ZeroMQError(code: EMSGSIZE) }

    /// `ENOTSOCK`: the socket is closed (or was never valid).
    public static var notSocket: ZeroMQError { ZeroMQError(code: ENOTSOCK) }

    /// `ENOTSUP`: the operation is not supported by this socket type.
    public static var notSupported: ZeroMQError { ZeroMQError(code: ENOTSUP) }

    /// `EPROTONOSUPPORT`: the endpoint's transport is not supported.
    public static var protocolNotSupported: ZeroMQError { ZeroMQError(code: EPROTONOSUPPORT) }

    /// `ENOENT`: e.g. `unbind` or `disconnect` of an endpoint the socket is not bound or connected to.
    public static var noSuchEndpoint: ZeroMQError { ZeroMQError(code: ENOENT) }

    /// `EFSM`: the socket's state machine forbids the call now (e.g. a REQ socket sending twice in a row).
    public static var invalidState: ZeroMQError { ZeroMQError(code: EFSM) }

    /// `EMTHREAD`: no I/O thread is available for the operation.
    public static var noIOThread: ZeroMQError { ZeroMQError(code: EMTHREAD) }

    /// `EEXIST`: `bind` refused to replace a file at an `ipc://` path that is not a Unix-domain socket.
    public static var fileExists: ZeroMQError { ZeroMQError(code: EEXIST) }

    /// `EMFILE`: the process ran out of file descriptors, or the context reached its socket limit.
    public static var tooManyOpenFiles: ZeroMQError { ZeroMQError(code: EMFILE) }

    /// The symbolic name of `code` and libzmq's message for it, e.g. `EAGAIN: Resource temporarily unavailable`.
    public var description: String {
        let message = String(cString: zmq_strerror(code))
        return "\(symbolicName): \(message)"
    }

    private var symbolicName: String {
        switch code {
        case EAGAIN: "EAGAIN"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case ETERM: "ETERM"
        case EINTR: "EINTR"
        case EADDRINUSE: "EADDRINUSE"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case EINVAL: "EINVAL"
        case EMSGSIZE: "EMSGSIZE"
        case ENOTSOCK: "ENOTSOCK"
        case ENOTSUP: "ENOTSUP"
        case EPROTONOSUPPORT: "EPROTONOSUPPORT"
        case ENOENT: "ENOENT"
        case EFSM: "EFSM"
        case EMTHREAD: "EMTHREAD"
        case ENOCOMPATPROTO: "ENOCOMPATPROTO"
        case EMFILE: "EMFILE"
        case EFAULT: "EFAULT"
        case ENOMEM: "ENOMEM"
        case ENODEV: "ENODEV"
        case ENOBUFS: "ENOBUFS"
        case ENETDOWN: "ENETDOWN"
        case ENETUNREACH: "ENETUNREACH"
        case ECONNREFUSED: "ECONNREFUSED"
        case ECONNRESET: "ECONNRESET"
        case ECONNABORTED: "ECONNABORTED"
        case EINPROGRESS: "EINPROGRESS"
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case ENAMETOOLONG: "ENAMETOOLONG"
        case ENOTDIR: "ENOTDIR"
        case EEXIST: "EEXIST"
        default: "errno \(code)"
        }
    }
}
