/// Percent-encoding of RFC 3986: the unreserved characters (`A-Z a-z 0-9 - . _ ~`) as they are, every
/// other UTF-8 byte as `%XX` with upper-case hex digits. Safe for a path segment, a query value and a
/// value of an `application/x-www-form-urlencoded` body alike (Foundation's `CharacterSet` lives only in
/// full Foundation).
public enum PercentEncoding {
    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    public static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
