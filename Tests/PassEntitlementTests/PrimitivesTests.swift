import Foundation
import PreflightCore
import PreflightProtocol
import StateFiles
import TestSupport
import Testing

@testable import PassEntitlement

@Test func sha256MatchesTheFIPSTestVectors() {
    #expect(
        Encoding.hex(SHA256.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    #expect(
        Encoding.hex(SHA256.hash([UInt8]()))
            == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    #expect(
        Encoding.hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    )
    #expect(
        Encoding.hex(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    )
}

@Test func base64MatchesTheRFC4648TestVectors() {
    let vectors = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]
    for (plain, encoded) in vectors {
        #expect(Encoding.base64(Array(plain.utf8)) == encoded)
    }
}

@Test func percentEncodingKeepsOnlyUnreservedCharacters() {
    #expect(Encoding.percentEncoded("a-Z_0.9~") == "a-Z_0.9~")
    #expect(Encoding.percentEncoded("a b/c&d=é") == "a%20b%2Fc%26d%3D%C3%A9")
    #expect(
        String(
            decoding: Encoding.formBody([(name: "grant_type", value: "client_credentials"), (name: "x", value: "1+1")]),
            as: UTF8.self
        )
            == "grant_type=client_credentials&x=1%2B1"
    )
}

@Test func pacerSpendsTheBurstOnceThenSpacesRequests() {
    var pacer = RequestPacer(pacing: PassPacing(interval: .seconds(1), burst: 2))
    let start = MonotonicInstant.now
    let far = start + .seconds(100)
    // One steady slot plus two burst slots go at once.
    #expect(pacer.reserve(now: start, deadline: far) == start)
    #expect(pacer.reserve(now: start, deadline: far) == start)
    #expect(pacer.reserve(now: start, deadline: far) == start)
    // Then one per interval.
    #expect(pacer.reserve(now: start, deadline: far) == start + .seconds(1))
    #expect(pacer.reserve(now: start, deadline: far) == start + .seconds(2))
    // A slot past the deadline is refused and reserves nothing.
    #expect(pacer.reserve(now: start, deadline: start + .milliseconds(2500)) == nil)
    #expect(pacer.reserve(now: start, deadline: far) == start + .seconds(3))
    // Idle time does not refill the burst: after a long pause one request goes, the next waits.
    let later = start + .seconds(60)
    #expect(pacer.reserve(now: later, deadline: far) == later)
    #expect(pacer.reserve(now: later, deadline: far) == later + .seconds(1))
}

@Test func pacerHoldsEveryoneBackAfterA429() {
    var pacer = RequestPacer(pacing: PassPacing(interval: .seconds(1), burst: 10))
    let start = MonotonicInstant.now
    pacer.block(until: start + .seconds(5))
    #expect(pacer.burstRemaining == 0)
    #expect(pacer.isBlocked(at: start + .seconds(4)))
    #expect(!pacer.isBlocked(at: start + .seconds(5)))
    #expect(pacer.reserve(now: start, deadline: start + .seconds(100)) == start + .seconds(5))
    #expect(pacer.reserve(now: start, deadline: start + .seconds(100)) == start + .seconds(6))
}

@Test func decisionCacheServesPermitsForTheirTTLOnlyWithTheirSource() {
    var cache = DecisionCache()
    let start = MonotonicInstant.now
    let key = DecisionCache.Key(requestor: "espn", mvpd: "Cablevision", resource: "r1")
    cache.storePermit(key, source: "degradation", now: start)
    #expect(
        cache.freshPermit(key, now: start + .seconds(599), ttl: .seconds(600))
            == ResourceDecision(resource: "r1", authorized: true, source: "degradation")
    )
    #expect(cache.freshPermit(key, now: start + .seconds(600), ttl: .seconds(600)) == nil)
    #expect(
        cache.freshPermit(
            DecisionCache.Key(requestor: "espn", mvpd: "Comcast_SSO", resource: "r1"),
            now: start,
            ttl: .seconds(600)
        ) == nil
    )
    cache.storePermit(DecisionCache.Key(requestor: "nbc", mvpd: "Cablevision", resource: "r1"), source: nil, now: start)
    #expect(cache.drop(requestor: "espn") == 1)
    #expect(cache.count == 1)
}

@Test func deviceHeadersFingerprintTheBoxIDAndDescribeTheDevice() throws {
    let logs = LogRecorder()
    let identity = DeviceIdentity.resolve(
        Harness.configuration(),
        stateDirectory: makeTemporaryDirectory(),
        logger: logs.logger
    )
    #expect(identity.identifierHeader == "fingerprint \(Encoding.base64(SHA256.hash(Array("box-1".utf8))))")
    let decoded = try #require(Data(base64Encoded: identity.infoHeader))
    let info = try JSONReader.read(Array(decoded))
    for key in ["model", "version", "osName", "osVersion", "connectionType", "primaryHardwareType"] {
        #expect(info[key]?.stringValue != nil, "X-Device-Info lacks \(key)")
    }
    #expect(info["osName"] == "Linux")
    #expect(info["primaryHardwareType"] == "SetTopBox")
}

@Test func deviceIdentifierComesFromTheMachineIDFileTrimmed() throws {
    let directory = makeTemporaryDirectory()
    let path = "\(directory)/machine-id"
    try "0123456789abcdef0123456789abcdef\n".write(toFile: path, atomically: true, encoding: .utf8)
    var configuration = Harness.configuration()
    configuration.deviceIdentifier = .machineIDFile(path)
    let identity = DeviceIdentity.resolve(configuration, stateDirectory: directory, logger: LogRecorder().logger)
    let expected = Encoding.base64(SHA256.hash(Array("0123456789abcdef0123456789abcdef".utf8)))
    #expect(identity.identifierHeader == "fingerprint \(expected)")
}

@Test func missingMachineIDFallsBackToAKeptRandomID() {
    let directory = makeTemporaryDirectory()
    var configuration = Harness.configuration()
    configuration.deviceIdentifier = .machineIDFile("\(directory)/absent")
    let first = DeviceIdentity.resolve(configuration, stateDirectory: directory, logger: LogRecorder().logger)
    let second = DeviceIdentity.resolve(configuration, stateDirectory: directory, logger: LogRecorder().logger)
    #expect(first.identifierHeader == second.identifierHeader)
    #expect(FileSystem.permissions(of: "\(directory)/\(DeviceIdentity.fallbackFileName)") == 0o600)
}
