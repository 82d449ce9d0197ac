#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 timestamps in UTC (`2026-11-22T05:31:09.123Z`), for log lines and `status`.
///
/// Written out with `gmtime_r` rather than `ISO8601DateFormatter`: that formatter goes through ICU,
/// and referencing it links ICU's data (about 34 MB) into the self-contained binary a box runs.
enum UTCTimestamp {
    static func string(from date: Date, fractionalSeconds: Bool) -> String {
        let interval = date.timeIntervalSince1970
        var seconds = time_t(interval.rounded(.down))
        var milliseconds = Int(((interval - interval.rounded(.down)) * 1000).rounded(.down))
        if milliseconds >= 1000 {
            seconds += 1
            milliseconds -= 1000
        }
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var text = digits(Int(parts.tm_year) + 1900, 4) + "-" + digits(Int(parts.tm_mon) + 1, 2) + "-"
        text += digits(Int(parts.tm_mday), 2) + "T" + digits(Int(parts.tm_hour), 2) + ":"
        text += digits(Int(parts.tm_min), 2) + ":" + digits(Int(parts.tm_sec), 2)
        if fractionalSeconds { text += "." + digits(milliseconds, 3) }
        return text + "Z"
    }

    private static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
