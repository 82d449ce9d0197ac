import PreflightCore

/// The few text encodings the Adobe Pass requests need, without Foundation.
enum Encoding {
    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard Base64 (RFC 4648 section 4) with padding, as `AP-Device-Identifier` and `X-Device-Info` use.
    static func base64(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(base64Alphabet[Int(group >> 18 & 0x3f)])
            output.append(base64Alphabet[Int(group >> 12 & 0x3f)])
            output.append(base64Alphabet[Int(group >> 6 & 0x3f)])
            output.append(base64Alphabet[Int(group & 0x3f)])
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let second = rest == 2 ? UInt32(bytes[index + 1]) : 0
            let group = UInt32(bytes[index]) << 16 | second << 8
            output.append(base64Alphabet[Int(group >> 18 & 0x3f)])
            output.append(base64Alphabet[Int(group >> 12 & 0x3f)])
            output.append(rest == 2 ? base64Alphabet[Int(group >> 6 & 0x3f)] : UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Lower-case hexadecimal.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (`PercentEncoding`): safe for a path
    /// segment and for a value of an `application/x-www-form-urlencoded` body alike.
    static func percentEncoded(_ text: String) -> String {
        PercentEncoding.encode(text)
    }

    /// An `application/x-www-form-urlencoded` body from ordered fields.
    static func formBody(_ fields: [(name: String, value: String)]) -> [UInt8] {
        Array(fields.map { "\(percentEncoded($0.name))=\(percentEncoded($0.value))" }.joined(separator: "&").utf8)
    }
}
