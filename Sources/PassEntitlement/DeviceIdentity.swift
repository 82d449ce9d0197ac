import Logging
import StateFiles

/// The two headers that tell Adobe Pass which device is asking: `AP-Device-Identifier` (the key Adobe
/// binds authenticated profiles and throttling to) and `X-Device-Info`.
struct DeviceIdentity: Sendable, Equatable {
    /// `fingerprint <Base64 of SHA-256(box id)>`.
    var identifierHeader: String
    /// Base64 of the DeviceInfo JSON.
    var infoHeader: String

    static let fallbackFileName = "pass-device-id"

    /// Reads the box id from the configured source. When that yields nothing (no machine-id file, an
    /// empty fixed id), a random id is made once and kept in the state directory, so the box still
    /// stays one device across restarts.
    static func resolve(_ configuration: PassConfiguration, stateDirectory: String, logger: Logger) -> DeviceIdentity {
        var boxID: String?
        switch configuration.deviceIdentifier {
        case .fixed(let value):
            boxID = trimmed(value)
        case .machineIDFile(let path):
            do {
                boxID = try FileSystem.readFile(path, limit: 4096).map { trimmed(String(decoding: $0, as: UTF8.self)) }
            } catch {
                logger.warning("cannot read the machine id", metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        if boxID?.isEmpty ?? true {
            boxID = fallbackID(stateDirectory: stateDirectory, logger: logger)
        }
        let digest = SHA256.hash(Array((boxID ?? "").utf8))
        return DeviceIdentity(
            identifierHeader: "fingerprint \(Encoding.base64(digest))",
            infoHeader: configuration.deviceInfo.headerValue
        )
    }

    private static func trimmed(_ text: String) -> String {
        String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    private static func fallbackID(stateDirectory: String, logger: Logger) -> String {
        let path = "\(stateDirectory)/\(fallbackFileName)"
        if let bytes = try? FileSystem.readFile(path, limit: 4096) {
            let stored = trimmed(String(decoding: bytes, as: UTF8.self))
            if !stored.isEmpty { return stored }
        }
        var generator = SystemRandomNumberGenerator()
        var random: [UInt8] = []
        for _ in 0..<2 {
            let word = generator.next() as UInt64
            for shift in stride(from: 0, to: 64, by: 8) {
                random.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        let made = Encoding.hex(random)
        do {
            try FileSystem.makeDirectory(stateDirectory, mode: 0o700)
            try FileSystem.writeAtomically(Array("\(made)\n".utf8), to: path, mode: 0o600)
            logger.notice("no machine id; made a device id for Adobe Pass", metadata: ["path": "\(path)"])
        } catch {
            logger.error(
                "no machine id and cannot keep a made one; the device id will change at restart",
                metadata: ["path": "\(path)", "error": "\(error)"]
            )
        }
        return made
    }
}
