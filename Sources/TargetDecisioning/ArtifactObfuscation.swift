extension DecisioningArtifact {
    /// Reads the obfuscated form of an artifact (`rules.bin`), as the SDKs read it
    /// (obfuscationProvider.ts): a 40-byte header `prefix:version` then a 32-character key, then the
    /// artifact's JSON with every byte XORed with the bytes of the organization id followed by the key,
    /// repeated. Only header version 1 exists; a wrong organization id gives bytes that are not JSON.
    public init(obfuscated bytes: [UInt8], organizationId: String) throws(ArtifactError) {
        let headerLength = 40
        guard bytes.count >= headerLength else {
            throw ArtifactError(code: .unreadable, message: "The obfuscated artifact is shorter than its header")
        }
        let header = String(decoding: bytes[0..<headerLength], as: UTF8.self)
        let versionField = header.prefix(8).split(separator: ":", omittingEmptySubsequences: false).dropFirst().first
        guard let versionField, JavaScript.parseInt(String(versionField)) == 1 else {
            throw ArtifactError(code: .unreadable, message: "The obfuscated artifact's header is not version 1")
        }
        let key = Array(organizationId.utf8) + Array(header.utf8.dropFirst(8).prefix(32))
        var plain = Array(bytes[headerLength...])
        for index in plain.indices { plain[index] ^= key[index % key.count] }
        do {
            try self.init(json: plain)
        } catch {
            throw ArtifactError(
                code: .unreadable,
                message: "The obfuscated artifact could not be read with organization \(organizationId)"
            )
        }
    }
}
