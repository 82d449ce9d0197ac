#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock time in milliseconds since the Unix epoch.
func systemEpochMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
}

/// The kernel release (`uname -r`), the default `osVersion` of `X-Device-Info`.
func kernelRelease() -> String {
    var names = utsname()
    guard uname(&names) == 0 else { return "unknown" }
    return withUnsafeBytes(of: &names.release) { raw in
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}
