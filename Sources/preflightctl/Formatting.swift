import Foundation
import PreflightProtocol

// How preflightctl shows numbers, sizes, durations and tables to a person: short, with units, aligned.

/// Prints one value as compact JSON on one line (the `--json` output).
func printJSON(_ value: JSONValue) {
    print(JSONWriter.string(value))
}

/// A value as indented JSON for a person (two spaces a level, members in the order received).
func prettyJSON(_ value: JSONValue, indent: String = "") -> String {
    let inner = indent + "  "
    switch value {
    case .object(let object) where !object.isEmpty:
        let members = object.map {
            "\(inner)\(JSONWriter.string(.string($0.key))): \(prettyJSON($0.value, indent: inner))"
        }
        return "{\n" + members.joined(separator: ",\n") + "\n\(indent)}"
    case .array(let elements) where !elements.isEmpty:
        return "[\n" + elements.map { inner + prettyJSON($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
    default:
        return JSONWriter.string(value)
    }
}

/// A JSON scalar as a person reads it: strings bare, numbers without a trailing ".0", null as "-".
func displayValue(_ value: JSONValue) -> String {
    switch value {
    case .null: "-"
    case .string(let text): text
    case .integer(let number): String(number)
    case .number(let number):
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    case .bool(let flag): flag ? "true" : "false"
    default: JSONWriter.string(value)
    }
}

/// A count from the agent, "0" when absent.
func number(_ value: JSONValue?) -> String {
    value.map(displayValue) ?? "0"
}

/// "1 hit", "3 hits", "0 entries" (with an explicit plural for irregular words).
func counted(_ value: JSONValue?, _ singular: String, plural: String? = nil) -> String {
    let count = value?.doubleValue ?? 0
    return "\(number(value)) \(count == 1 ? singular : plural ?? singular + "s")"
}

/// "512 B", "12.5 KiB", "32.0 MiB".
func bytes(_ value: JSONValue?) -> String {
    let count = value?.doubleValue ?? 0
    if count < 1024 { return "\(Int(count)) B" }
    if count < 1_048_576 { return String(format: "%.1f KiB", count / 1024) }
    if count < 1_073_741_824 { return String(format: "%.1f MiB", count / 1_048_576) }
    return String(format: "%.1f GiB", count / 1_073_741_824)
}

/// A ratio from 0 to 1 as "75.0%", or "-" when there is none (no lookups yet).
func percent(_ value: JSONValue?) -> String {
    guard let ratio = value?.doubleValue else { return "-" }
    return String(format: "%.1f%%", ratio * 100)
}

/// "3d 4h", "2h 5m", "4m 10s", "12s", "850ms": the two largest units, for uptimes and ages.
func formatDuration(milliseconds: Double) -> String {
    let seconds = Int(milliseconds / 1000)
    if seconds < 1 { return "\(Int(max(0, milliseconds)))ms" }
    let (days, hours, minutes) = (seconds / 86_400, seconds % 86_400 / 3600, seconds % 3600 / 60)
    if days > 0 { return "\(days)d \(hours)h" }
    if hours > 0 { return "\(hours)h \(minutes)m" }
    if minutes > 0 { return "\(minutes)m \(seconds % 60)s" }
    return "\(seconds)s"
}

/// How far the box's clock is from the upstreams' ("26 years slow", "3m 20s fast"), or nil when within
/// a few seconds (a `Date` header is whole seconds, so smaller offsets are noise).
func clockOffsetSummary(offsetMs: Double) -> String? {
    let magnitude = abs(offsetMs)
    guard magnitude > 5000 else { return nil }
    let direction = offsetMs > 0 ? "slow" : "fast"
    let years = magnitude / (365.2425 * 86_400_000)
    let amount =
        years >= 1
        ? "\(Int(years.rounded())) year\(Int(years.rounded()) == 1 ? "" : "s")"
        : formatDuration(milliseconds: magnitude)
    return "\(amount) \(direction)"
}

/// A latency with three significant digits, at most six characters: "0.08ms", "4.12ms", "12.3ms", "850ms",
/// "1.25s", "12.5s", "125s". Percentile columns stay the same width whatever the values.
func formatLatency(milliseconds: Double) -> String {
    switch milliseconds {
    case ..<9.995: String(format: "%.2fms", milliseconds)
    case ..<99.95: String(format: "%.1fms", milliseconds)
    case ..<999.5: String(format: "%.0fms", milliseconds)
    case ..<9_995: String(format: "%.2fs", milliseconds / 1000)
    case ..<99_950: String(format: "%.1fs", milliseconds / 1000)
    default: String(format: "%.0fs", milliseconds / 1000)
    }
}

/// A latency field of the agent (`p50Ms`), "-" when absent.
func latency(_ value: JSONValue?) -> String {
    value?.doubleValue.map { formatLatency(milliseconds: $0) } ?? "-"
}

/// "3m ago" for a time in milliseconds since the Unix epoch; "in 5m" for one in the future.
func age(sinceEpochMs epochMs: Double, now: Date = Date()) -> String {
    let elapsed = now.timeIntervalSince1970 * 1000 - epochMs
    if elapsed < -1000 { return "in " + formatDuration(milliseconds: -elapsed) }
    return formatDuration(milliseconds: max(0, elapsed)) + " ago"
}

/// "3m ago" for an age in milliseconds (`ageMs`), "-" when absent.
func age(milliseconds value: JSONValue?) -> String {
    value?.doubleValue.map { formatDuration(milliseconds: $0) + " ago" } ?? "-"
}

/// "0.31ms", "6.37ms", "12.3ms": a round trip measured here.
func formatRoundTrip(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    return formatLatency(milliseconds: Double(seconds) * 1000 + Double(attoseconds) / 1e15)
}

/// Prints label/value rows with the values aligned in one column.
func printRows(_ rows: [(String, String)], indent: String = "") {
    let width = rows.map(\.0.count).max() ?? 0
    for (key, value) in rows {
        let label = key.padding(toLength: width, withPad: " ", startingAt: 0)
        var line = indent + label + "  " + value
        while line.hasSuffix(" ") { line.removeLast() }
        print(line)
    }
}

/// A table with a header row and aligned columns; numbers are right-aligned, text left-aligned, and the last
/// column is never padded (so lines carry no trailing blanks).
struct TextTable {
    enum Alignment {
        case left
        case right
    }

    struct Column {
        var title: String
        var alignment: Alignment

        static func left(_ title: String) -> Column { Column(title: title, alignment: .left) }
        static func right(_ title: String) -> Column { Column(title: title, alignment: .right) }
    }

    var columns: [Column]
    var rows: [[String]] = []

    init(_ columns: [Column]) {
        self.columns = columns
    }

    mutating func append(_ row: [String]) {
        rows.append(row)
    }

    /// The table's lines, header first.
    func lines() -> [String] {
        let all = [columns.map(\.title)] + rows
        let widths = columns.indices.map { index in
            all.map { $0.indices.contains(index) ? $0[index].count : 0 }.max() ?? 0
        }
        return all.map { row in
            var line = ""
            for index in columns.indices {
                let cell = row.indices.contains(index) ? row[index] : ""
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                let isLast = index == columns.count - 1
                if index > 0 { line += "  " }
                switch columns[index].alignment {
                case .right: line += padding + cell
                case .left: line += isLast ? cell : cell + padding
                }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            return line
        }
    }

    func print() {
        for line in lines() { Swift.print(line) }
    }
}

/// Flattens a JSON object into dotted key/value rows for generic display: nested objects become `a.b`,
/// arrays of objects `a[0].b`, arrays of scalars one comma-separated value. Times ending in `AtMs` also show
/// their age.
func flattenedRows(_ value: JSONValue, prefix: String = "") -> [(String, String)] {
    switch value {
    case .object(let object):
        if object.isEmpty { return prefix.isEmpty ? [] : [(prefix, "(none)")] }
        return object.flatMap { member in
            flattenedRows(member.value, prefix: prefix.isEmpty ? member.key : "\(prefix).\(member.key)")
        }
    case .array(let elements):
        if elements.isEmpty { return [(prefix, "(none)")] }
        if elements.allSatisfy({ $0.objectValue == nil && $0.arrayValue == nil }) {
            return [(prefix, elements.map(displayValue).joined(separator: ", "))]
        }
        return elements.enumerated().flatMap { index, element in
            flattenedRows(element, prefix: "\(prefix)[\(index)]")
        }
    default:
        return [(prefix, displayScalar(value, key: String(prefix.split(separator: ".").last ?? "")))]
    }
}

/// A scalar shown by what its key says it is: times since the epoch (`…At`, `…AtMs`, `notAfter`) with their
/// age, ages (`ageMs`) as "3m ago", other `…Ms` durations as "4m 10s".
func displayScalar(_ value: JSONValue, key: String) -> String {
    if value == .string("") { return "\"\"" }
    guard let number = value.doubleValue else { return displayValue(value) }
    let isEpoch = key.hasSuffix("AtMs") || key.hasSuffix("At") || key == "notAfter" || key == "notBefore"
    // Milliseconds since the epoch are above 1e11 for any date after 1973.
    if isEpoch && number > 1e11 {
        return "\(timestamp(epochMs: number)) (\(age(sinceEpochMs: number)))"
    }
    if key == "ageMs" { return formatDuration(milliseconds: number) + " ago" }
    if key.hasSuffix("Ms") && !isEpoch { return formatDuration(milliseconds: number) }
    return displayValue(value)
}

/// "2026-11-22 02:19:01" in local time, for a time in milliseconds since the Unix epoch.
func timestamp(epochMs: Double) -> String {
    var seconds = time_t(epochMs / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    return String(
        format: "%04d-%02d-%02d %02d:%02d:%02d",
        parts.tm_year + 1900,
        parts.tm_mon + 1,
        parts.tm_mday,
        parts.tm_hour,
        parts.tm_min,
        parts.tm_sec
    )
}

/// "02:19:01.123" in local time: when an event arrived, for `watch`.
func clockTime(_ date: Date) -> String {
    let epochMs = (date.timeIntervalSince1970 * 1000).rounded(.down)
    var seconds = time_t(epochMs / 1000)
    var parts = tm()
    localtime_r(&seconds, &parts)
    let milliseconds = Int(epochMs.truncatingRemainder(dividingBy: 1000))
    return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, milliseconds)
}

/// Writes to standard error without buffering.
func writeStandardError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
