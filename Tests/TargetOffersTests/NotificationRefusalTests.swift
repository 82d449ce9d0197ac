import Logging
import PreflightCore
import PreflightProtocol
import Synchronization
import Testing
import UpstreamHTTP

@testable import TargetOffers

/// A Delivery API that refuses a whole request (400) when any notification in it carries a revoked
/// token or a timestamp more than a day from its own time, as the spec says Target does; otherwise it
/// acknowledges every notification and answers each prefetched mbox with content. Its `Date` header
/// tells its time.
private final class ValidatingDelivery: HTTPTransport {
    struct Sent: Sendable {
        var notificationIds: [String]
        var timestamps: [Int64]
        var prefetch: Int
        var status: Int
    }

    private let state = Mutex((sent: [Sent](), revoked: Set<String>()))
    private let realTime: ManualClock

    init(realTime: ManualClock) {
        self.realTime = realTime
    }

    func revoke(_ token: String) { state.withLock { _ = $0.revoked.insert(token) } }

    var sent: [Sent] { state.withLock { $0.sent } }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        let body = (try? JSONReader.read(request.body)) ?? .null
        let notifications = body["notifications"]?.arrayValue ?? []
        let prefetch = body["prefetch"]?["mboxes"]?.arrayValue ?? []
        let now = realTime.epochMilliseconds()
        let revoked = state.withLock { $0.revoked }
        let invalid = notifications.contains { item in
            let timestamp = Int64(item["timestamp"]?.doubleValue ?? 0)
            let tokens = (item["tokens"]?.arrayValue ?? []).compactMap(\.stringValue)
            return abs(timestamp - now) > 86_400_000 || tokens.contains(where: revoked.contains)
        }
        let status = invalid ? 400 : 200
        state.withLock {
            $0.sent.append(
                Sent(
                    notificationIds: notifications.compactMap { $0["id"]?.stringValue },
                    timestamps: notifications.map { Int64($0["timestamp"]?.doubleValue ?? 0) },
                    prefetch: prefetch.count,
                    status: status
                )
            )
        }
        let date = httpDate(epochMs: now)
        if invalid {
            return HTTPResponse(
                status: 400,
                headers: ["date": date],
                body: Array(#"{"status":400,"message":"Invalid request: notifications"}"#.utf8)
            )
        }
        let acknowledged: [JSONValue] = notifications.map { ["id": $0["id"] ?? .null] }
        let mboxes: [JSONValue] = prefetch.map { mbox in
            [
                "index": mbox["index"] ?? 0, "name": mbox["name"] ?? .null, "state": "s",
                "options": [
                    ["type": "html", "content": "C", "eventToken": .string("t-\(mbox["name"]?.stringValue ?? "")")]
                ],
            ]
        }
        let answer: JSONValue = [
            "status": 200, "notifications": .array(acknowledged), "prefetch": ["mboxes": .array(mboxes)],
        ]
        return HTTPResponse(status: 200, headers: ["date": date], body: JSONWriter.encode(answer))
    }

    private func httpDate(epochMs: Int64) -> String {
        // Only the parts UpstreamTime reads; the weekday is not checked against the date.
        let seconds = epochMs / 1000
        let days = seconds / 86_400
        var (year, month, day) = (Int64(1970), 1, days)
        func length(_ year: Int64) -> Int64 { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 366 : 365 }
        while day >= length(year) {
            day -= length(year)
            year += 1
        }
        let months: [Int64] = [31, length(year) == 366 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        while day >= months[month - 1] {
            day -= months[month - 1]
            month += 1
        }
        let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let clock = seconds % 86_400
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "Mon, \(two(day + 1)) \(names[month - 1]) \(year) \(two(clock / 3600)):\(two(clock % 3600 / 60)):"
            + "\(two(clock % 60)) GMT"
    }
}

@Suite struct NotificationRefusalTests {
    private static let realMs: Int64 = 1_795_608_000_000

    /// Wired as the agent wires it: the transport teaches the service's clock the upstream's time.
    private func service(_ transport: some HTTPTransport, clock: ManualClock) -> TargetService {
        let time = UpstreamTime(clock)
        return TargetService(
            configuration: TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:9"),
            transport: TimeLearningTransport(transport, time: time),
            stateDirectory: nil,
            clock: time,
            logger: logger,
            publish: .none
        )
    }

    private func show(_ names: [String], from target: TargetService) {
        var reply = JSONWriter()
        let command = LoadRequestsCommand(requests: names.map { LoadRequest(name: $0, defaultContent: "d") })
        #expect(target.loadFromCache(command, appendingResultTo: &reply) == nil)
    }

    @Test func oneRefusedNotificationIsDroppedAndEveryGoodOneDelivered() async {
        let clock = ManualClock(epochOrigin: Self.realMs)
        let delivery = ValidatingDelivery(realTime: clock)
        let target = service(delivery, clock: clock)
        for name in ["a", "b", "bad", "c", "d"] { target.cache.store(offer(name, token: "tok-\(name)")) }
        delivery.revoke("tok-bad")
        show(["a", "b", "bad", "c", "d"], from: target)

        #expect(await target.flushNotifications() == 4)
        let counters = target.notifications.summary
        #expect(counters.pending == 0 && counters.inFlight == 0)
        #expect(counters.counters.refused == 1 && counters.counters.failedAttempts == 0)
        #expect(counters.counters.lastRefusal?.hasPrefix("HTTP 400") == true)
        // Every good notification reached Target once; the bad one was never confirmed nor retried.
        let confirmed = delivery.sent.filter { $0.status == 200 }.flatMap(\.notificationIds)
        #expect(confirmed.count == 4 && Set(confirmed).count == 4)
        let attempts = delivery.sent.count
        #expect(await target.flushNotifications() == 0)
        #expect(delivery.sent.count == attempts)
    }

    @Test func aRefusedRideAlongDoesNotFailThePrefetchItRodeWith() async {
        let clock = ManualClock(epochOrigin: Self.realMs)
        let delivery = ValidatingDelivery(realTime: clock)
        let target = service(delivery, clock: clock)
        target.cache.store(offer("bad", token: "tok-bad"))
        delivery.revoke("tok-bad")
        show(["bad"], from: target)

        let result = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(result == PrefetchResult(success: true, mboxes: [.init(name: "logo", cached: true)]))
        #expect(delivery.sent.map(\.status) == [400, 200])
        #expect(delivery.sent[1].notificationIds.isEmpty && delivery.sent[1].prefetch == 1)
        // The suspect waits to be sent on its own, is due at once, and no longer rides along.
        #expect(target.notifications.isDue(batchSize: 50, maxAge: .seconds(3600)))
        _ = await target.prefetch(PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")]))
        #expect(delivery.sent.last?.notificationIds.isEmpty == true)
        await target.flushNotifications()
        #expect(target.notifications.summary.counters.refused == 1)
        #expect(target.notifications.summary.pending == 0)
    }

    /// A box that boots in 2000 stamps its first displays with its own clock; Target refuses them, its
    /// answer's Date says the real time, and the same notifications go again with their real times.
    @Test func displaysStampedByAWrongBoxClockAreStampedAgainNotDropped() async {
        let year2000Ms: Int64 = 946_684_800_000
        let realTime = ManualClock(epochOrigin: Self.realMs)
        let box = ManualClock(epochOrigin: year2000Ms)
        let delivery = ValidatingDelivery(realTime: realTime)
        let target = service(delivery, clock: box)
        target.cache.store(offer("a"))
        target.cache.store(offer("b"))
        show(["a"], from: target)
        box.advance(by: .seconds(30))
        realTime.advance(by: .seconds(30))
        show(["b"], from: target)

        #expect(await target.flushNotifications() == 2)
        #expect(target.notifications.summary.counters.refused == 0)
        #expect(delivery.sent.map(\.status) == [400, 200])
        let stamps = delivery.sent[1].timestamps
        // Real time (to the Date header's second), 30 s apart as displayed.
        #expect(stamps.count == 2 && stamps[1] - stamps[0] == 30_000)
        #expect(abs(stamps[1] - (Self.realMs + 30_000)) <= 1000)
        // Displays after the correction carry the real time from the start.
        show(["a"], from: target)
        #expect(await target.flushNotifications() == 1)
        #expect(delivery.sent.map(\.status) == [400, 200, 200])
    }
}

@Suite struct EdgeHostTests {
    @Test(arguments: ["mboxedge35.tt.omtrdc.net", "127.0.0.1", "edge-1.example", "localhost", "EDGE.Example.COM"])
    func plainHostNamesAreUsed(host: String) {
        #expect(VisitorSession.isPlainHostName(host))
    }

    @Test(arguments: [
        "", "http://evil:1/x", "host:8080", "user@host", "host/path", "-edge.example", "edge-.example", "a..b",
        "edge.example.", "[::1]", "host name", "é.example", String(repeating: "a", count: 64) + ".example",
    ])
    func anythingElseIsNot(host: String) {
        #expect(!VisitorSession.isPlainHostName(host))
    }

    @Test func aRefusedEdgeHostLeavesTheOneInUse() {
        let visitor = VisitorSession(timeout: .seconds(1800), clock: manualClock(), stateFile: nil)
        #expect(visitor.learn(tntId: nil, edgeHost: "mboxedge35.tt.omtrdc.net") == nil)
        #expect(visitor.learn(tntId: nil, edgeHost: "http://evil:1/x") == "http://evil:1/x")
        #expect(visitor.current.edgeHost == "mboxedge35.tt.omtrdc.net")
    }
}
