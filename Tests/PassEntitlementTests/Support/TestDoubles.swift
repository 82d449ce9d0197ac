import Foundation
import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import TestSupport
import UpstreamHTTP

@testable import PassEntitlement

/// Holds callers until opened.
final class Gate: Sendable {
    private struct State: Sendable {
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var waiting: Int { state.withLock { $0.waiters.count } }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let pass = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if pass { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A scripted Adobe Pass: answers DCR and REST API v2 the documented way from a little state (clients,
/// tokens, profiles, decisions), lets a test queue exact answers per operation, holds chosen operations
/// at a gate, and records every request.
final class FakePass: HTTPTransport, Sendable {
    enum Scripted: Sendable {
        case respond(HTTPResponse)
        case fail(TransportError)
    }

    struct Decision: Sendable {
        var authorized: Bool
        var error: JSONObject?
    }

    private struct State: Sendable {
        var requests: [HTTPRequest] = []
        var clients: [String: String] = [:]
        var validTokens: Set<String> = []
        var everIssued: [String] = []
        var issued = 0
        var tokenLifetimeSeconds: Int64 = 3600
        var profiles: [String: JSONObject] = [:]
        var decisions: [String: Decision] = [:]
        var scripted: [String: [Scripted]] = [:]
        var gated: Set<String> = []
    }

    private let state = Mutex(State())
    let gate = Gate()

    static func operation(of request: HTTPRequest) -> String {
        let path = request.url.split(separator: "?").first.map(String.init) ?? request.url
        if path.hasSuffix("/o/client/register") { return "register" }
        if path.hasSuffix("/o/client/token") { return "token" }
        if path.hasSuffix("/configuration") { return "configuration" }
        if path.hasSuffix("/profiles") { return "profiles" }
        if path.contains("/decisions/preauthorize/") { return "preauthorize" }
        return "other"
    }

    // MARK: scripting

    func script(_ operation: String, _ answers: Scripted...) {
        state.withLock { $0.scripted[operation, default: []].append(contentsOf: answers) }
    }

    func hold(_ operation: String) {
        state.withLock { _ = $0.gated.insert(operation) }
    }

    func login(_ requestor: String, mvpd: String = "Cablevision", notBefore: Int64 = 0, notAfter: Int64) {
        let profile: JSONValue = [
            "notBefore": .integer(notBefore), "notAfter": .integer(notAfter), "issuer": .string(mvpd),
            "type": "regular", "attributes": ["userID": ["value": "u1", "state": "plain"]],
        ]
        state.withLock { $0.profiles[requestor] = [mvpd: profile] }
    }

    func logout(_ requestor: String) {
        state.withLock { $0.profiles[requestor] = nil }
    }

    func decide(_ resource: String, authorized: Bool, error: JSONObject? = nil) {
        state.withLock { $0.decisions[resource] = Decision(authorized: authorized, error: error) }
    }

    func setTokenLifetime(seconds: Int64) {
        state.withLock { $0.tokenLifetimeSeconds = seconds }
    }

    func revokeTokens() {
        state.withLock { $0.validTokens.removeAll() }
    }

    func forgetClients() {
        state.withLock { $0.clients.removeAll() }
    }

    // MARK: inspection

    var requests: [HTTPRequest] { state.withLock { $0.requests } }

    func requests(_ operation: String) -> [HTTPRequest] {
        requests.filter { Self.operation(of: $0) == operation }
    }

    func count(_ operation: String) -> Int { requests(operation).count }

    var issuedTokens: [String] { state.withLock { $0.everIssued } }
    var clientSecrets: [String] { state.withLock { Array($0.clients.values) } }

    // MARK: HTTPTransport

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let operation = Self.operation(of: request)
        let (scripted, gated) = state.withLock { state -> (Scripted?, Bool) in
            state.requests.append(request)
            var scripted: Scripted?
            if var queue = state.scripted[operation], !queue.isEmpty {
                scripted = queue.removeFirst()
                state.scripted[operation] = queue
            }
            return (scripted, state.gated.contains(operation))
        }
        if gated { await gate.wait() }
        switch scripted {
        case .respond(let response)?: return response
        case .fail(let error)?: throw error
        case nil: return state.withLock { Self.answer(operation, request, &$0) }
        }
    }

    private static func answer(_ operation: String, _ request: HTTPRequest, _ state: inout State) -> HTTPResponse {
        switch operation {
        case "register":
            guard let body = try? JSONReader.read(request.body), body["software_statement"]?.stringValue != nil,
                body["redirect_uri"]?.stringValue != nil
            else { return json(400, ["error": "invalid_request"]) }
            state.issued += 1
            let id = "client-\(state.issued)"
            let secret = "s3cr3t-\(state.issued)-\(UInt32.random(in: 1000...9999))"
            state.clients[id] = secret
            return json(
                201,
                [
                    "client_id": .string(id), "client_secret": .string(secret), "client_id_issued_at": 1,
                    "redirect_uris": ["https://x.invalid"], "grant_types": ["client_credentials"],
                    "scopes": ["api:client:v2"],
                ]
            )
        case "token":
            let form = formFields(request.body)
            guard form["grant_type"] == "client_credentials", let id = form["client_id"],
                let secret = form["client_secret"]
            else { return json(400, ["error": "invalid_request"]) }
            guard state.clients[id] == secret else { return json(400, ["error": "invalid_client"]) }
            state.issued += 1
            let token = "tok-\(state.issued)-\(UInt32.random(in: 1000...9999))"
            state.validTokens.insert(token)
            state.everIssued.append(token)
            return json(
                201,
                [
                    "access_token": .string(token), "expires_in": .integer(state.tokenLifetimeSeconds),
                    "token_type": "bearer", "created_at": 1, "id": "t",
                ]
            )
        default:
            break
        }
        let bearer = request.headers.first { $0.name == "Authorization" }?.value ?? ""
        guard bearer.hasPrefix("Bearer "), state.validTokens.contains(String(bearer.dropFirst(7))) else {
            return json(
                401,
                adobeError(401, "invalid_access_token_client_application", action: "application-registration")
            )
        }
        let parts = request.url.split(separator: "/").map(String.init)
        let requestor = parts.firstIndex(of: "v2").map { parts[$0 + 1] } ?? ""
        switch operation {
        case "configuration":
            return json(
                200,
                ["requestor": ["id": .string(requestor), "mvpds": [["id": "Cablevision"], ["id": "Comcast_SSO"]]]]
            )
        case "profiles":
            return json(200, ["profiles": .object(state.profiles[requestor] ?? [:])])
        case "preauthorize":
            let mvpd = parts.last ?? ""
            let resources = (try? JSONReader.read(request.body))?["resources"]?.arrayValue ?? []
            let decisions: [JSONValue] = resources.compactMap(\.stringValue).map { resource in
                let decision = state.decisions[resource] ?? Decision(authorized: true)
                var object: JSONObject = [
                    "resource": .string(resource), "serviceProvider": .string(requestor), "mvpd": .string(mvpd),
                    "source": "mvpd", "authorized": .bool(decision.authorized),
                ]
                if let error = decision.error { object["error"] = .object(error) }
                return .object(object)
            }
            return json(200, ["decisions": .array(decisions)])
        default:
            return json(404, adobeError(404, "not_found"))
        }
    }

    static func adobeError(_ status: Int64, _ code: String, action: String = "none") -> JSONValue {
        [
            "status": .integer(status), "code": .string(code), "message": .string("Something about \(code)."),
            "helpUrl": "https://example.com/help", "trace": "trace-1", "action": .string(action),
        ]
    }

    static func json(_ status: Int, _ body: JSONValue, headers: [String: String] = [:]) -> HTTPResponse {
        var headers = headers
        headers["content-type"] = "application/json"
        return HTTPResponse(status: status, headers: headers, body: JSONWriter.encode(body))
    }

    static func formFields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            fields[parts[0].removingPercentEncoding ?? parts[0]] = parts[1].removingPercentEncoding ?? parts[1]
        }
        return fields
    }
}

/// Events published by the Entitlement.
final class EventRecorder: Sendable {
    private let recorded = Mutex<[(topic: String, body: JSONObject)]>([])

    var publish: EventPublisher {
        EventPublisher { topic, body in self.recorded.withLock { $0.append((topic: topic.topic, body: body)) } }
    }

    var all: [(topic: String, body: JSONObject)] { recorded.withLock { $0 } }

    func bodies(_ topic: String) -> [JSONObject] {
        all.filter { $0.topic == topic }.map(\.body)
    }
}

/// A fresh temporary directory, removed when the test process exits (tests pass it around as a path, with no
/// owner to remove it; every `swift test` left about 120 of them in /tmp).
func makeTemporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pass-tests-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    let first = temporaryDirectories.withLock { directories in
        directories.append(path)
        return directories.count == 1
    }
    if first {
        atexit {
            for directory in temporaryDirectories.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }
    return path
}

private let temporaryDirectories = Mutex<[String]>([])

/// Everything a unit test needs: a fake Adobe Pass, a manual clock, recorded events and logs, and a
/// Entitlement wired to them.
struct Harness {
    /// A JWT-shaped software statement; tests search output for it.
    static let softwareStatement = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwcmVmbGlnaHQtdGVzdCJ9.c2lnbmF0dXJlLXNlY3JldA"

    static func configuration(
        requestors: [String] = ["espn", "nbc"],
        maxResources: Int = 5,
        burst: Int = 10_000
    ) -> PassConfiguration {
        PassConfiguration(
            serverURL: "https://pass.test/",
            softwareStatement: softwareStatement,
            requestors: requestors,
            deviceIdentifier: .fixed("box-1"),
            deviceInfo: DeviceInfo(model: "TestBox", version: "2", osVersion: "6.1.0"),
            maxResourcesPerRequest: maxResources,
            pacing: PassPacing(interval: .milliseconds(1100), burst: burst)
        )
    }

    let fake: FakePass
    let clock: ManualClock
    let events: EventRecorder
    let logs: LogRecorder
    let directory: String
    let entitlement: Entitlement

    init(
        configuration: PassConfiguration = Harness.configuration(),
        directory: String = makeTemporaryDirectory(),
        fake: FakePass = FakePass(),
        clock: ManualClock = ManualClock()
    ) {
        self.fake = fake
        self.clock = clock
        self.events = EventRecorder()
        self.logs = LogRecorder()
        self.directory = directory
        self.entitlement = Entitlement(
            configuration: configuration,
            transport: fake,
            stateDirectory: directory,
            clock: clock,
            logger: logs.logger,
            publish: events.publish
        )
    }

    /// Logs the box in for a requestor for an hour of the manual clock.
    func login(_ requestor: String = "espn", mvpd: String = "Cablevision", for lifetime: Duration = .seconds(3600)) {
        fake.login(requestor, mvpd: mvpd, notAfter: clock.epochMilliseconds() + lifetime.wholeMilliseconds)
    }

    func preauthorize(
        _ resources: [String],
        requestor: String = "espn",
        disabled: Set<PreauthorizeFeature> = []
    ) async -> PreauthorizeAnswer {
        await entitlement.preauthorize(
            PreauthorizeCommand(requestor: requestor, resources: resources, disabledFeatures: disabled)
        )
    }

    func cached(_ resources: [String], requestor: String = "espn") -> PreauthorizeAnswer? {
        entitlement.cachedResponse(for: PreauthorizeCommand(requestor: requestor, resources: resources))
    }
}

extension JSONValue {
    var text: String { JSONWriter.string(self) }
}

extension PassSnapshot {
    /// The requestor of that name, if the snapshot shows it.
    func requestor(_ name: String) -> Requestor? { requestors.first { $0.name == name } }
}

extension PreauthorizeAnswer {
    /// The decisions, in request order; none for an Adobe error or a failure.
    var decisions: [ResourceDecision] {
        if case .decisions(let decisions) = self { return decisions }
        return []
    }

    var resourceIDs: [String] { decisions.map(\.resource) }

    /// The top-level Adobe Pass error, if the answer is one.
    var adobeStatus: AdobeStatus? {
        if case .adobeError(let status) = self { return status }
        return nil
    }

    /// Why the agent could not service the request, if it could not.
    var failure: PassFailure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}

extension HTTPRequest {
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var jsonBody: JSONValue? { try? JSONReader.read(body) }
}

/// An answer of all permits.
func permits(_ resources: [String]) -> PreauthorizeAnswer {
    .decisions(resources.map { ResourceDecision(resource: $0, authorized: true, source: "mvpd") })
}

/// A thread-safe count.
final class Counter: Sendable {
    private let value = Mutex(0)

    var count: Int { value.withLock { $0 } }

    func increment() {
        value.withLock { $0 += 1 }
    }
}

/// Work started in the background whose result a test waits for with a deadline, so that a test whose
/// assumption breaks fails instead of hanging.
final class Pending<Value: Sendable>: Sendable {
    private let result = Mutex<Value?>(nil)
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(_ operation: @escaping @Sendable () async -> Value) {
        let started = Task {
            let value = await operation()
            self.result.withLock { $0 = value }
        }
        task.withLock { $0 = started }
    }

    var value: Value? { result.withLock { $0 } }

    /// The result, or nil when it did not come within `limit`.
    func wait(within limit: Duration = .seconds(20)) async -> Value? {
        _ = await eventually(within: limit) { self.value != nil }
        return value
    }

    func cancel() {
        task.withLock { $0?.cancel() }
    }
}
