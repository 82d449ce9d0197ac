import Foundation
import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Synchronization
import TestSupport
import Testing
import UpstreamHTTP

@testable import TargetOffers

/// The journal as these tests use it: with made notifications.
extension NotificationJournal {
    mutating func add(_ notification: DisplayNotification) {
        add(.made(notification))
    }

    mutating func acknowledge(_ notifications: [DisplayNotification]) {
        acknowledge(notifications.map(QueuedNotification.made))
    }

    static func prepareReplacement(
        keeping live: [DisplayNotification],
        path: String,
        logger: Logger
    )
        -> FileSystem.Replacement?
    {
        prepareReplacement(keeping: live.map(QueuedNotification.made), path: path, logger: logger)
    }
}

/// The manual clock these tests start from, at wall time 1,800,000,000,000 ms.
func manualClock() -> ManualClock { ManualClock(epochOrigin: 1_800_000_000_000) }

/// An upstream that answers from a script and records what it was sent.
final class ScriptedTransport: HTTPTransport {
    private let state = Mutex((requests: [HTTPRequest](), answer: HTTPResponse(status: 200, body: Array("{}".utf8))))

    func answer(_ response: HTTPResponse) {
        state.withLock { $0.answer = response }
    }

    var requests: [HTTPRequest] { state.withLock { $0.requests } }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        state.withLock {
            $0.requests.append(request)
            return $0.answer
        }
    }
}

/// Holds every request until `open()`, so a test can act while one is in flight.
final class GatedDelivery: HTTPTransport {
    private let inner: any HTTPTransport
    private let requested = AsyncStream<Void>.makeStream()
    private let opened = AsyncStream<Void>.makeStream()

    init(_ inner: any HTTPTransport) {
        self.inner = inner
    }

    func waitForRequest() async {
        var iterator = requested.stream.makeAsyncIterator()
        _ = await iterator.next()
    }

    func open() { opened.continuation.finish() }

    func send(_ request: HTTPRequest) async throws(TransportError) -> HTTPResponse {
        requested.continuation.yield()
        for await _ in opened.stream {}
        return try await inner.send(request)
    }
}

func offer(
    _ name: String,
    content: String = "<b>hi</b>",
    token: String = "tok",
    now: MonotonicInstant = .now
)
    -> CachedOffer
{
    CachedOffer(
        name: name,
        options: [OfferOption(type: "html", content: .string(content), eventToken: token)],
        state: "state-\(name)",
        now: now,
        epochMs: 0
    )
}

let logger = Logger(label: "test")

/// A service deciding on the box (`on-device`), with the artifact's and the geo service's addresses on a
/// port nothing answers: the scripted transport stands in for both.
func onDeviceService(
    _ transport: any HTTPTransport,
    folder: String?,
    clock: ManualClock = manualClock()
) -> TargetService {
    var configuration = TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:9")
    configuration.decisioningMethod = .onDevice
    configuration.artifactURL = "http://127.0.0.1:9/acme/production/v1/rules.json"
    configuration.geoURL = "http://127.0.0.1:9/v1/geo"
    return TargetService(
        configuration: configuration,
        transport: transport,
        stateDirectory: folder,
        clock: clock,
        logger: logger,
        publish: .none
    )
}

@Suite struct RandomUUIDTests {
    @Test func versionFourLowercaseAndUnique() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = RandomUUID.make()
            let bytes = Array(id.utf8)
            #expect(bytes.count == 36)
            #expect([8, 13, 18, 23].allSatisfy { bytes[$0] == UInt8(ascii: "-") })
            #expect(bytes[14] == UInt8(ascii: "4"), "version nibble in \(id)")
            #expect("89ab".utf8.contains(bytes[19]), "variant nibble in \(id)")
            #expect(id.allSatisfy { "0123456789abcdef-".contains($0) })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }
}

@Suite struct PrefetchCacheTests {
    @Test func laterPrefetchOfTheSameNameReplacesTheEntry() {
        let cache = PrefetchCache(budgetBytes: 1 << 20)
        cache.store(offer("logo", content: "old"))
        cache.store(offer("logo", content: "new"))
        #expect(cache.summary.entries == 1)
        #expect(cache.peek("logo")?.content == "new")
    }

    @Test func evictsLeastRecentlyUsedFirstToStayWithinBudget() {
        let one = offer("a", content: String(repeating: "x", count: 1000))
        let cache = PrefetchCache(budgetBytes: one.bytes * 3)
        cache.store(offer("a", content: String(repeating: "x", count: 1000)))
        cache.store(offer("b", content: String(repeating: "x", count: 1000)))
        cache.store(offer("c", content: String(repeating: "x", count: 1000)))
        _ = cache.hit("a", now: .now)  // a is now more recent than b
        let evicted = cache.store(offer("d", content: String(repeating: "x", count: 1000)))
        #expect(evicted == 1)
        #expect(cache.peek("b") == nil)
        #expect(cache.peek("a") != nil)
        #expect(cache.summary.bytes <= cache.summary.budget)
        #expect(cache.summary.evictions == 1)
    }

    @Test func contentConcatenatesOptionsAndSerializesJSON() {
        let offer = CachedOffer(
            name: "m",
            options: [
                OfferOption(type: "html", content: "<p>", eventToken: "t1"),
                OfferOption(type: "json", content: ["color": "blue"], eventToken: "t2"),
            ],
            state: nil,
            now: .now,
            epochMs: 0
        )
        #expect(offer.content == #"<p>{"color":"blue"}"#)
        #expect(offer.eventTokens == ["t1", "t2"])
        #expect(String(decoding: offer.encodedContent, as: UTF8.self) == #""<p>{\"color\":\"blue\"}""#)
    }

    @Test func optionsAreRebuiltFromTheOneStoredCopyOfTheContent() {
        let options = [
            OfferOption(type: "html", content: "<p>é😀</p>", eventToken: "t1"),
            OfferOption(type: "json", content: ["color": "blue", "n": [1, 2]], eventToken: nil),
            OfferOption(type: "html", content: "", eventToken: "t3"),
            OfferOption(type: "html", content: "tail \"quoted\"\n", eventToken: nil),
        ]
        let offer = CachedOffer(name: "m", options: options, state: "s", now: .now, epochMs: 0)
        #expect(offer.options == options)
        #expect(offer.eventTokens == ["t1", "t3"])
    }

    @Test func aPlainLoadFindsItsEntryByTheNamesBytes() {
        let cache = PrefetchCache(budgetBytes: 1 << 20)
        let names = ["home-hero-banner-2026", "café", "a"]
        for name in names { cache.store(offer(name, content: name)) }
        for name in names {
            let found = Array(name.utf8).withUnsafeBufferPointer { cache.hit($0, now: .now) }
            #expect(found?.content == name)
        }
        #expect(Array("home-hero-banner-202".utf8).withUnsafeBufferPointer { cache.hit($0, now: .now) } == nil)
        #expect(Array("".utf8).withUnsafeBufferPointer { cache.hit($0, now: .now) } == nil)
        // Bytes, not Unicode equivalence: the decomposed spelling of "café" is another mbox, as it is to Target.
        #expect(Array("cafe\u{301}".utf8).withUnsafeBufferPointer { cache.hit($0, now: .now) } == nil)
        #expect(cache.clear(name: "home-hero-banner-2026") == 1)
        #expect(Array("home-hero-banner-2026".utf8).withUnsafeBufferPointer { cache.hit($0, now: .now) } == nil)
    }

    @Test func clearRemovesAllOrOne() {
        let cache = PrefetchCache(budgetBytes: 1 << 20)
        cache.store(offer("a"))
        cache.store(offer("b"))
        #expect(cache.clear(name: "a") == 1)
        #expect(cache.clear(name: "a") == 0)
        #expect(cache.clear() == 1)
        #expect(cache.summary.bytes == 0)
    }
}

@Suite struct VisitorSessionTests {
    @Test func sessionIdIsRenewedAfterInactivityAndEdgeHostDropped() {
        let manual = manualClock()
        let session = VisitorSession(timeout: .seconds(1800), clock: manual, stateFile: nil)
        let first = session.begin()
        session.learn(tntId: "t.35_0", edgeHost: "mboxedge35.tt.omtrdc.net")
        manual.advance(by: .seconds(1799))
        #expect(session.begin().sessionId == first.sessionId)
        #expect(session.begin().edgeHost == "mboxedge35.tt.omtrdc.net")
        manual.advance(by: .seconds(1801))
        let renewed = session.begin()
        #expect(renewed.sessionId != first.sessionId)
        #expect(renewed.edgeHost == nil)
        #expect(renewed.tntId == "t.35_0")
    }

    @Test func tntIdSurvivesARestartThroughTheStateFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("visitor-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = StateFile(path: "\(folder)/target-visitor.json", logger: logger)
        VisitorSession(timeout: .seconds(60), clock: SystemClock(), stateFile: file).learn(
            tntId: "abc.35_0",
            edgeHost: nil
        )
        #expect(
            VisitorSession(timeout: .seconds(60), clock: SystemClock(), stateFile: file).current.tntId == "abc.35_0"
        )
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(folder)/target-visitor.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
    }

    @Test func idsAppsSetAreKeptAndResetForgetsThem() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("visitor-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = StateFile(path: "\(folder)/target-visitor.json", logger: logger)
        let manual = ManualClock()
        let session = VisitorSession(timeout: .seconds(1800), clock: manual, stateFile: file)
        session.learn(tntId: "t.35_0", edgeHost: "mboxedge35.tt.omtrdc.net")
        session.setThirdPartyId("household-42")
        #expect(file.read() == ["tntId": "t.35_0", "thirdPartyId": "household-42"])
        // A migrated tntId forgets the edge host: the next answer names the one for that visitor.
        session.setTntId("migrated")
        #expect(session.current.edgeHost == nil && session.current.tntId == "migrated")
        session.setSessionId("web-session-1")
        #expect(session.begin().sessionId == "web-session-1")
        #expect(
            VisitorSession(timeout: .seconds(1800), clock: manual, stateFile: file).current.thirdPartyId
                == "household-42"
        )
        session.reset()
        let fresh = session.current
        #expect(fresh.tntId == nil && fresh.thirdPartyId == nil && fresh.edgeHost == nil)
        #expect(fresh.sessionId != "web-session-1")
        #expect(file.read() == [:])
    }

    @Test func theSessionIdAnAppReadsIsTheOneTheNextCallCarries() {
        let manual = ManualClock()
        let session = VisitorSession(timeout: .seconds(60), clock: manual, stateFile: nil)
        let first = session.begin().sessionId
        #expect(session.sessionId == first)
        manual.advance(by: .seconds(61))
        let renewed = session.sessionId
        #expect(renewed != first)
        // Reading it is not a use: the next call carries the same id, and only then is it used.
        #expect(session.begin().sessionId == renewed)
    }

    @Test func aCorruptStateFileIsMovedAsideNotFatal() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("visitor-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: "\(folder)/target-visitor.json"))
        let session = VisitorSession(
            timeout: .seconds(60),
            clock: SystemClock(),
            stateFile: StateFile(path: "\(folder)/target-visitor.json", logger: logger)
        )
        #expect(session.current.tntId == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(names.contains { $0.hasPrefix("target-visitor.json.corrupt-") })
    }

    @Test func anEarlierCorruptCopyIsNotOverwritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("visitor-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = "\(folder)/target-visitor.json"
        // Copies a previous crash left under the names this second (and the next) would use.
        let now = Int(Date().timeIntervalSince1970)
        for second in now...(now + 2) {
            try Data("earlier".utf8).write(to: URL(fileURLWithPath: "\(path).corrupt-\(second)"))
        }
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
        #expect(StateFile(path: path, logger: logger).read() == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(names.count == 4)
        for second in now...(now + 2) {
            #expect(try String(contentsOfFile: "\(path).corrupt-\(second)", encoding: .utf8) == "earlier")
        }
    }
}

@Suite struct NotificationQueueTests {
    private func notification(_ name: String, at epochMs: Int64 = 1_800_000_000_000) -> DisplayNotification {
        .display(of: offer(name), targeting: MboxTargeting(), profileParameters: [], timestampMs: epochMs)
    }

    /// The offer the journal's tests display: an html option with an event token, a state, and `property`.
    private func shelf(property: String) -> CachedOffer {
        CachedOffer(
            name: "shelf",
            options: [OfferOption(type: "html", content: .string("<b>hi</b>"), eventToken: "tok")],
            state: "state-shelf",
            property: property,
            now: .now,
            epochMs: 0
        )
    }

    /// A made display of `offer` by a load without targeting (a record is queued for a plain cached load; a display
    /// stamped by the box's clock, `boxClock`, is made).
    private func madeDisplay(of offer: CachedOffer, at epochMs: Int64, boxClock: Bool = false) -> DisplayNotification {
        .display(of: offer, targeting: nil, profileParameters: [], timestampMs: epochMs, stampedByBoxClock: boxClock)
    }

    /// An encoded item's members by name: a replay writes `id` and `timestamp` first, the rest as they were.
    private func members(_ encoded: [UInt8]) throws -> [String: JSONValue] {
        let item = try #require(try JSONReader.read(encoded).objectValue)
        return Dictionary(uniqueKeysWithValues: item.map { ($0.key, $0.value) })
    }

    @Test func anEntryLeavesOnlyWhenTargetReturnsItsId() {
        let queue = NotificationQueue(journalPath: nil, capacity: 100, clock: manualClock(), logger: logger)
        let first = notification("a")
        let second = notification("b")
        queue.enqueue(first)
        queue.enqueue(second)
        let batch = queue.take(max: 10)
        #expect(batch.count == 2)
        queue.complete(batch, acknowledged: [first.id])
        #expect(queue.summary.pending == 1)
        #expect(queue.take(max: 10).map(\.id) == [second.id])
    }

    @Test func batchesAreDueByCountOrAge() {
        let manual = manualClock()
        let queue = NotificationQueue(journalPath: nil, capacity: 100, clock: manual, logger: logger)
        #expect(!queue.isDue(batchSize: 3, maxAge: .seconds(2)))
        queue.enqueue(notification("a", at: manual.epochMilliseconds()))
        #expect(!queue.isDue(batchSize: 3, maxAge: .seconds(2)))
        manual.advance(by: .seconds(2))
        #expect(queue.isDue(batchSize: 3, maxAge: .seconds(2)))
        let other = NotificationQueue(journalPath: nil, capacity: 100, clock: manual, logger: logger)
        for name in ["a", "b", "c"] { other.enqueue(notification(name, at: manual.epochMilliseconds())) }
        #expect(other.isDue(batchSize: 3, maxAge: .seconds(2)))
    }

    /// `target.notificationBatchAge` is a fraction of a second in tests and may be on a box: 0.2 s
    /// must not round down to "due at once" (it did, so the run loop raced the miss call that should
    /// have carried the notification).
    @Test func aFractionalAgeIsNotRoundedDown() {
        let manual = manualClock()
        let queue = NotificationQueue(journalPath: nil, capacity: 100, clock: manual, logger: logger)
        queue.enqueue(notification("a", at: manual.epochMilliseconds()))
        #expect(!queue.isDue(batchSize: 50, maxAge: .milliseconds(200)))
        manual.advance(by: .milliseconds(199))
        #expect(!queue.isDue(batchSize: 50, maxAge: .milliseconds(200)))
        manual.advance(by: .milliseconds(1))
        #expect(queue.isDue(batchSize: 50, maxAge: .milliseconds(200)))
        #expect(!queue.isDue(batchSize: 50, maxAge: .milliseconds(1500)))
    }

    @Test func aFailureBacksOffBeforeTheNextAttempt() {
        let manual = manualClock()
        let queue = NotificationQueue(journalPath: nil, capacity: 100, clock: manual, logger: logger)
        queue.enqueue(notification("a", at: manual.epochMilliseconds() - 10_000))
        queue.fail(queue.take(max: 10), error: "HTTP 503")
        #expect(queue.summary.pending == 1)
        #expect(!queue.isDue(batchSize: 50, maxAge: .seconds(2)))
        manual.advance(by: .seconds(2))
        #expect(queue.isDue(batchSize: 50, maxAge: .seconds(2)))
        #expect(queue.summary.counters.lastError == "HTTP 503")
    }

    /// Runs `body` with a fresh folder for a journal and the journal's path in it; removes the folder after.
    private func inJournalFolder(_ body: (_ folder: String, _ path: String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pf-journal-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(folder, "\(folder)/target-notifications.journal")
    }

    @Test func theJournalIsCompactedToWhatIsStillQueued() throws {
        try inJournalFolder { folder, path in
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            for index in 0..<3000 { queue.enqueue(notification("m\(index)")) }
            let inFlight = queue.take(max: 10)
            func lines() throws -> Int {
                try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
            }
            queue.commitJournal()
            let before = try lines()
            #expect(before >= 3000)  // an add per display (a drop at capacity writes nothing)
            queue.compactJournalIfLarge()
            let after = try lines()
            #expect(after == 200)  // each display of its own offer: the offer's def line and the display's
            // One confirmed makes room: "after" drops nothing, so the queue is exactly what the file holds.
            let confirmed = inFlight[0]
            queue.complete([confirmed], acknowledged: [confirmed.id])
            queue.enqueue(notification("after"))
            queue.commitJournal()  // as the I/O thread does after each batch of requests
            // A restart now restores exactly what was queued, the batch in flight included.
            let restarted = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            #expect(restarted.summary.pending == 100)
            let restored = Set(restarted.take(max: 200).map(\.mboxName))
            #expect(restored.isSuperset(of: inFlight.dropFirst().map(\.mboxName)))
            #expect(!restored.contains(confirmed.mboxName))
            #expect(restored.contains("after") && restored.contains("m2999") && !restored.contains("m0"))
        }
    }

    /// Writes the disk refused (here: the journal's descriptor pointed at /dev/full, which answers as a full disk
    /// does) lose their lines, so the journal asks to be rewritten: once it takes writes again, the sender's next
    /// turn rewrites it with what is queued, and a restart brings back what those writes recorded.
    @Test func linesLostToAFullDiskAreRewrittenOnceItTakesWritesAgain() throws {
        try inJournalFolder { _, path in
            let log = LogRecorder()
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: log.logger)
            queue.enqueue(notification("before"))
            queue.commitJournal()
            let descriptor = try #require(
                try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap(Int32.init).first {
                    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path
                }
            )
            let kept = dup(descriptor)
            let full = open("/dev/full", O_WRONLY)
            #expect(kept >= 0 && full >= 0 && dup2(full, descriptor) == descriptor)
            for index in 0..<3 {
                queue.enqueue(notification("lost\(index)"))
                queue.commitJournal()
            }
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.mboxName) == ["before"])
            let failing = queue.summary.counters
            #expect(failing.journalWriteFailures == 3 && failing.journalFailing)
            // One error for the spell, not one per batch: the I/O thread commits after each.
            #expect(log.all.filter { $0.hasPrefix("error cannot append to the notification journal") }.count == 1)
            #expect(dup2(kept, descriptor) == descriptor)
            close(kept)
            close(full)
            queue.enqueue(notification("after"))
            queue.commitJournal()
            queue.compactJournalIfLarge()
            let replayed = NotificationJournal.replay(path: path, logger: logger).map(\.mboxName)
            #expect(replayed == ["before", "lost0", "lost1", "lost2", "after"])
            let recovered = queue.summary.counters
            #expect(recovered.journalWriteFailures == 3 && !recovered.journalFailing)
            let ends = log.all.filter { $0.hasPrefix("notice the notification journal takes writes again") }
            #expect(ends.count == 1 && ends.first?.hasSuffix("failedWrites=3") == true)
        }
    }

    /// A compaction that failed (here: a directory where its temporary file goes, as a full disk would fail it) is
    /// not tried again at once: the sender asks after every batch, and the disk would be written to and the
    /// failure logged that often. The next try comes after `compactionBackoff`.
    @Test func aFailedCompactionWaitsItsBackoffBeforeTheNext() throws {
        try inJournalFolder { _, path in
            let clock = manualClock()
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: clock, logger: logger)
            for index in 0..<600 { queue.enqueue(notification("m\(index)")) }
            queue.commitJournal()
            func lines() throws -> Int {
                try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
            }
            let full = try lines()
            #expect(full == 1200)  // each display of its own offer: its def line and its own
            let blocker = "\(path).tmp-\(getpid())"
            try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
            queue.compactJournalIfLarge()
            try FileManager.default.removeItem(atPath: blocker)
            #expect(try lines() == full)
            queue.compactJournalIfLarge()  // held back, though it would succeed now
            #expect(try lines() == full)
            clock.advance(by: NotificationQueue.compactionBackoff.delay(attempt: 1))
            queue.compactJournalIfLarge()
            #expect(try lines() == 200)
        }
    }

    /// The compaction's rewrite runs without the queue's lock (its fsync would hold up loads): what is journaled
    /// meanwhile, adds and acks, reaches the new file, and a restart restores the same queue.
    @Test func whatIsJournaledWhileACompactionWritesIsCarriedIntoTheNewFile() throws {
        try inJournalFolder { folder, path in
            var journal = NotificationJournal(path: path, live: [], logger: logger)
            let old = (0..<10).map { notification("old\($0)") }
            for item in old { journal.add(item) }
            journal.acknowledge(Array(old[0..<8]))
            let began = journal.beginCompaction()
            let again = journal.beginCompaction()
            #expect(began && !again)  // one at a time
            let replacement = NotificationJournal.prepareReplacement(
                keeping: Array(old[8...]),
                path: path,
                logger: logger
            )
            // Meanwhile a load is journaled and committed, and a batch is confirmed but not yet committed.
            journal.add(notification("new"))
            journal.commit()
            journal.acknowledge([old[8]])
            let replaced = journal.finishCompaction(replacement, liveCount: 2)
            #expect(replaced)
            journal.add(notification("after"))
            journal.commit()
            journal.close()
            let contents = try String(contentsOfFile: path, encoding: .utf8)
            // The two live (each its offer's def line and its own), "new" (the same), the ack, "after" (the same).
            #expect(contents.split(separator: "\n").count == 9)
            #expect(!contents.contains("\"add\""))  // a rewrite writes short lines too
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.mboxName) == ["old9", "new", "after"])
            let left = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(left == ["target-notifications.journal"])  // no replacement left behind
        }
    }

    /// A rewrite writes each offer's `def` line once and a short line per display, as the loads did: in a flood
    /// it rewrites the queue every 30,000 loads, and in whole lines it wrote as much as the loads themselves.
    @Test func aRewriteDefinesEachOfferOnce() throws {
        try inJournalFolder { _, path in
            let shelf = offer("shelf")
            let displays = (0..<5).map { index in
                DisplayNotification.display(
                    of: shelf,
                    targeting: MboxTargeting(),
                    profileParameters: [],
                    timestampMs: 1_800_000_000_000 + Int64(index)
                )
            }
            var journal = NotificationJournal(path: path, live: [], logger: logger)
            let began = journal.beginCompaction()
            let replacement = NotificationJournal.prepareReplacement(keeping: displays, path: path, logger: logger)
            let replaced = journal.finishCompaction(replacement, liveCount: displays.count)
            journal.close()
            #expect(began && replaced)
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 6 && lines[0].hasPrefix("{\"def\":"))
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.id) == displays.map(\.id))
        }
    }

    /// The replacement holds none of the drops at capacity made before the compaction began; one made while it
    /// wrote is carried into it (an add without an ack), so the file still holds a drop.
    @Test func aCompactionForgetsTheDropsItRewroteAwayButNotThoseMadeMeanwhile() throws {
        try inJournalFolder { _, path in
            var journal = NotificationJournal(path: path, live: [], logger: logger)
            for item in (0..<3).map({ notification("old\($0)") }) { journal.add(item) }
            journal.noteDroppedAtCapacity()
            for meanwhile in [false, true] {
                let began = journal.beginCompaction()
                let replacement = NotificationJournal.prepareReplacement(
                    keeping: [QueuedNotification](),
                    path: path,
                    logger: logger
                )
                if meanwhile {
                    journal.add(notification("new"))
                    journal.noteDroppedAtCapacity()
                }
                let replaced = journal.finishCompaction(replacement, liveCount: 0)
                #expect(began && replaced && journal.holdsDrops == meanwhile)
            }
            journal.close()
        }
    }

    /// A box that opts out while a compaction writes: the truncation wins, and the replacement (holding what
    /// was live before) is thrown away.
    @Test func aTruncationDuringACompactionAbandonsIt() throws {
        try inJournalFolder { folder, path in
            var journal = NotificationJournal(path: path, live: [], logger: logger)
            let old = (0..<3).map { notification("old\($0)") }
            for item in old { journal.add(item) }
            let began = journal.beginCompaction()
            #expect(began)
            let replacement = NotificationJournal.prepareReplacement(keeping: old, path: path, logger: logger)
            journal.truncate()
            journal.add(notification("later"))
            let replaced = journal.finishCompaction(replacement, liveCount: old.count)
            #expect(!replaced)
            journal.close()
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.mboxName) == ["later"])
            let left = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(left == ["target-notifications.journal"])  // no replacement left behind
            // A new compaction may begin once that one is over.
            var reopened = NotificationJournal(path: path, live: [], logger: logger)
            let beganAgain = reopened.beginCompaction()
            let replacedWithNothing = reopened.finishCompaction(nil, liveCount: 0)
            #expect(beganAgain && !replacedWithNothing)
        }
    }

    @Test func overflowDropsTheOldestAndCountsIt() {
        let queue = NotificationQueue(journalPath: nil, capacity: 2, clock: manualClock(), logger: logger)
        let first = notification("a")
        queue.enqueue(first)
        queue.enqueue(notification("b"))
        queue.enqueue(notification("c"))
        #expect(queue.summary.pending == 2)
        #expect(queue.summary.counters.droppedOverflow == 1)
        #expect(!queue.take(max: 10).contains { $0.id == first.id })
    }

    /// A drop at capacity writes nothing to the journal: a replay keeps the newest `capacity`, what the queue
    /// held. Once the queue has room again the file is rewritten (at half its capacity) or truncated (idle), so
    /// that a restart cannot bring a dropped notification back.
    @Test func dropsAtCapacityAreNotJournaledAndNoRestartBringsThemBack() throws {
        try inJournalFolder { _, path in
            let queue = NotificationQueue(journalPath: path, capacity: 4, clock: manualClock(), logger: logger)
            let flood = (0..<6).map { notification("n\($0)") }
            for notification in flood { queue.enqueue(notification) }
            queue.commitJournal()
            #expect(queue.summary.counters.droppedOverflow == 2)
            let journaled = try String(contentsOfFile: path, encoding: .utf8)
            #expect(!journaled.contains("\"ack\""))
            // A crash now: the replay keeps the newest four, what the queue holds.
            let atCapacity = NotificationBook(
                capacity: 4,
                replayed: NotificationJournal.replay(path: path, logger: logger)
            )
            #expect(atCapacity.live.map(\.id) == flood[2...].map(\.id))

            // Three confirmed: the queue holds one, at most half its capacity, and the file still holds the two
            // drops, which a replay would queue again. The sender's turn rewrites it.
            let batch = queue.take(max: 3)
            queue.complete(batch, acknowledged: AcknowledgedIDs(batch.map(\.id)))
            queue.compactJournalIfLarge()
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.id) == [flood[5].id])

            // A second flood, then everything confirmed: the idle queue truncates the file, short as it is.
            let again = (0..<5).map { notification("m\($0)") }
            for notification in again { queue.enqueue(notification) }
            let rest = queue.take(max: 10)
            queue.complete(rest, acknowledged: AcknowledgedIDs(rest.map(\.id)))
            #expect(queue.summary.pending == 0 && queue.summary.inFlight == 0)
            #expect(NotificationJournal.replay(path: path, logger: logger).isEmpty)
        }
    }

    @Test func theJournalBringsBackWhatWasNotConfirmed() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = "\(folder)/target-notifications.journal"
        let confirmed = notification("a")
        let unconfirmed = notification("b")
        do {
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            queue.enqueue(confirmed)
            queue.enqueue(unconfirmed)
            queue.complete(queue.take(max: 10), acknowledged: [confirmed.id])
            // No sync, no clean shutdown: what a SIGKILL leaves behind.
        }
        // A torn last line, as a power cut mid-write leaves.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"add":{"id":"tor"#.utf8))
        try handle.close()
        let restarted = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
        #expect(restarted.summary.counters.replayed == 1)
        #expect(restarted.take(max: 10).map(\.id) == [unconfirmed.id])
    }

    /// A display of a cached offer is journaled as a short line referring to its offer's `def` line (written once
    /// in the file), a click as its whole line; replay makes each whole again: its item, its property and its
    /// box-clock mark come back as they went in.
    @Test func journalLinesCarryThePropertyAndTheBoxClockMarkAndOffersAreDefinedOnce() throws {
        try inJournalFolder { folder, path in
            let withProperty = shelf(property: "p-\"token\"")
            let marked = madeDisplay(of: withProperty, at: 946_684_800_000, boxClock: true)
            let targeted = DisplayNotification.display(
                of: withProperty,
                targeting: MboxTargeting(),
                profileParameters: [Parameter("tier", "gold")],
                timestampMs: 1_800_000_000_000
            )
            let click = DisplayNotification.click(
                mbox: "shelf",
                property: "p-\"token\"",
                state: "state-shelf",
                token: "click-tok",
                targeting: MboxTargeting(),
                profileParameters: [],
                timestampMs: 946_684_800_001,
                stampedByBoxClock: true
            )
            do {
                let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
                for notification in [marked, targeted, click] { queue.enqueue(notification) }
                queue.commitJournal()
            }
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            let definition = withProperty.displayTemplate.definition
            #expect(
                lines == [
                    #"{"def":\#(definition),"fragment":{"mbox":{"name":"shelf","state":"state-shelf"},"tokens":["tok"]},"#
                        + #""property":"p-\"token\""}"#,
                    #"{"a":\#(definition),"i":{"id":"\#(marked.id)","type":"display","timestamp":946684800000},"#
                        + #""boxClock":true}"#,
                    #"{"a":\#(definition),"i":{"id":"\#(targeted.id)","type":"display","timestamp":1800000000000,"#
                        + #""profileParameters":{"tier":"gold"}}}"#,
                    #"{"add":"# + String(decoding: click.encoded, as: UTF8.self)
                        + #","property":"p-\"token\"","boxClock":true}"#,
                ]
            )
            let replayed = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            let batch = replayed.take(max: 10)
            #expect(batch.map(\.id) == [marked.id, targeted.id, click.id])
            #expect(batch.map(\.property) == Array(repeating: #"p-"token""#, count: 3))
            #expect(batch.map(\.stampedByBoxClock) == [true, false, true])
            // Replay reads the item as JSON and writes it again: the same members.
            for (read, written) in zip(batch, [marked, targeted, click]) {
                #expect(try members(read.encoded) == (try members(written.encoded)))
            }
        }
    }

    /// A plain cached load's display is queued as a record (`QueuedNotification.display`), never an object: its
    /// item, its journal line and its id in Target's answer are byte for byte a made display's, a restart brings it
    /// back as it went in, a compaction keeps it while live, and opting out acknowledges it.
    @Test func aPlainDisplayQueuedAsARecordIsWrittenAsAMadeOneIs() throws {
        try inJournalFolder { folder, path in
            let shelf = shelf(property: "p-1")
            let made = madeDisplay(of: shelf, at: 1_800_000_000_000)
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            queue.enqueueDisplay(of: shelf, timestampMs: 1_800_000_000_000)
            queue.enqueue(made)
            queue.enqueueDisplay(of: shelf, timestampMs: 1_800_000_000_001)
            queue.commitJournal()
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            let definition = shelf.displayTemplate.definition
            #expect(lines.count == 4 && lines[0].hasPrefix(#"{"def":\#(definition),"fragment":"#))
            // What a restart would queue again (read without rewriting the file this queue appends to).
            let replayed = NotificationJournal.replay(path: path, logger: logger)
            let taken = queue.take(max: 10)
            #expect(taken.map { $0.recordTemplate != nil } == [true, false, true])  // the plain displays are records
            #expect(taken.map(\.timestampMs) == [1_800_000_000_000, 1_800_000_000_000, 1_800_000_000_001])
            #expect(taken[1].id == made.id && Set(taken.map(\.id)).count == 3)
            #expect(
                taken.map(\.property) == ["p-1", "p-1", "p-1"] && taken.map(\.mboxName) == ["shelf", "shelf", "shelf"]
            )
            let madeItem = String(decoding: made.encoded, as: UTF8.self)
            let madeLine = made.withShortJournalLine { String(decoding: $0, as: UTF8.self) }
            #expect(lines[2] + "\n" == madeLine)
            for index in [0, 2] {
                let record = taken[index]
                let item = String(decoding: record.encoded, as: UTF8.self)
                #expect(item.count == record.encoded.count)  // ASCII
                // Byte for byte a made display's item and journal line, but for its id (and its timestamp).
                let asMade = item.replacingOccurrences(of: record.id, with: made.id)
                    .replacingOccurrences(of: "\(record.timestampMs)", with: "\(made.timestampMs)")
                #expect(asMade == madeItem)
                let line = lines[index + 1].replacingOccurrences(of: record.id, with: made.id)
                    .replacingOccurrences(of: "\(record.timestampMs)", with: "\(made.timestampMs)")
                #expect(line + "\n" == madeLine)
                #expect(replayed[index].id == record.id && replayed[index].timestampMs == record.timestampMs)
                #expect(try members(replayed[index].encoded) == (try members(record.encoded)))
            }
            // Target's answer names them: matched in place, and the queue settles them.
            let answer = Array(
                #"{"notifications":[{"id":"\#(taken[0].id)"},{"id":"\#(taken[1].id)"},{"id":"\#(taken[2].id)"}]}"#.utf8
            )
            let response = try DeliveryResponse.decode(HTTPResponse(status: 200, body: answer), sent: taken)
            #expect(Array(response.acknowledgedNotificationIds) == taken.map(\.id))
            queue.complete(taken, acknowledged: response.acknowledgedNotificationIds)
            #expect(queue.summary.counters.sent == 3 && queue.summary.pending + queue.summary.inFlight == 0)

            // In flight and queued records survive a compaction; opting out acknowledges them all.
            for index in 0..<3000 { queue.enqueueDisplay(of: shelf, timestampMs: 1_800_000_001_000 + Int64(index)) }
            let inFlight = queue.take(max: 10)
            queue.compactJournalIfLarge()
            let live = inFlight.map(\.id) + queue.take(max: 200).map(\.id)
            #expect(live.count == 100)
            queue.commitJournal()
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.id) == live)
            #expect(queue.dropAll() == 100)
            #expect(NotificationJournal.replay(path: path, logger: logger).isEmpty)
        }
    }

    /// A queued record holds its offer's `DisplayTemplate`, not the offer: an offer the cache lets go of (its budget)
    /// while Target is away does not stay in memory for its displays, and they are still sent whole.
    @Test func aQueuedRecordDoesNotKeepItsOfferAlive() throws {
        let queue = NotificationQueue(journalPath: nil, capacity: 100, clock: manualClock(), logger: logger)
        weak var released: CachedOffer?
        do {
            let evicted = shelf(property: "p-2")
            released = evicted
            queue.enqueueDisplay(of: evicted, timestampMs: 1_800_000_000_000)
        }
        #expect(released == nil)
        let taken = queue.take(max: 10)
        #expect(taken.count == 1 && taken[0].mboxName == "shelf" && taken[0].property == "p-2")
        let item = try members(taken[0].encoded)
        #expect(item["mbox"] == ["name": "shelf", "state": "state-shelf"] && item["tokens"] == ["tok"])
    }

    /// A compaction's replacement starts with whole lines, and a truncation with nothing: an offer defined in the
    /// file before is defined again for the short lines after, or a replay could not make them whole.
    @Test func offersAreDefinedAgainAfterACompactionAndATruncation() throws {
        try inJournalFolder { folder, path in
            let shelf = offer("shelf")
            func display() -> DisplayNotification {
                madeDisplay(of: shelf, at: 1_800_000_000_000)
            }
            var journal = NotificationJournal(path: path, live: [], logger: logger)
            let first = display()
            journal.add(first)
            journal.acknowledge([first])
            let began = journal.beginCompaction()
            #expect(began)
            let replacement = NotificationJournal.prepareReplacement(
                keeping: [QueuedNotification](),
                path: path,
                logger: logger
            )
            let during = display()
            journal.add(during)
            let replaced = journal.finishCompaction(replacement, liveCount: 0)
            #expect(replaced)
            let after = display()
            journal.add(after)
            journal.commit()
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.id) == [during.id, after.id])
            let definitions = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
                .filter { $0.hasPrefix(#"{"def":"#) }
            #expect(definitions.count == 1)

            journal.truncate()
            let afterTruncation = display()
            journal.add(afterTruncation)
            journal.commit()
            journal.close()
            #expect(NotificationJournal.replay(path: path, logger: logger).map(\.id) == [afterTruncation.id])
        }
    }

    /// A short line whose offer has no `def` line before it (a journal damaged in the middle) is skipped, as an
    /// unreadable line is; the lines around it are read.
    @Test func aShortLineWithoutItsDefinitionIsSkipped() throws {
        try inJournalFolder { folder, path in
            let lines = [
                #"{"a":7,"i":{"id":"orphan","type":"display","timestamp":1}}"#,
                #"{"def":8,"fragment":{"mbox":{"name":"m"},"tokens":["t"]}}"#,
                #"{"a":8,"i":{"id":"kept","type":"display","timestamp":2}}"#,
            ]
            try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            let replayed = NotificationJournal.replay(path: path, logger: logger)
            #expect(replayed.map(\.id) == ["kept"])
            #expect(replayed.first?.mboxName == "m")
            #expect(String(decoding: try #require(replayed.first).encoded, as: UTF8.self).contains(#""tokens":["t"]"#))
        }
    }

    /// An acknowledgement is one line of the confirmed ids, in order: copied from the items when made here, and
    /// written as JSON strings when read back from a journal.
    @Test func confirmedIdsAreJournaledAsOneAckLine() throws {
        try inJournalFolder { folder, path in
            let first = notification("a")
            let second = notification("b")
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            queue.enqueue(first)
            queue.enqueue(second)
            queue.complete(queue.take(max: 10), acknowledged: [first.id, second.id])
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
            #expect(lines.last == #"{"ack":[""# + first.id + #"",""# + second.id + #""]}"#)
            // Read back from a journal, an id is kept as given and escaped when written.
            let replayedPath = "\(folder)/replayed.journal"
            let item = #"{"id":"a\"b","timestamp":1,"type":"display","mbox":{"name":"m"}}"#
            try (#"{"add":"# + item + "}\n").write(toFile: replayedPath, atomically: true, encoding: .utf8)
            let replayed = NotificationQueue(
                journalPath: replayedPath,
                capacity: 100,
                clock: manualClock(),
                logger: logger
            )
            let batch = replayed.take(max: 10)
            #expect(batch.map(\.id) == [#"a"b"#])
            replayed.complete(batch, acknowledged: AcknowledgedIDs(batch.map(\.id)))
            let replayedLines = try String(contentsOfFile: replayedPath, encoding: .utf8).split(separator: "\n")
            #expect(replayedLines.last.map(String.init) == #"{"ack":["a\"b"]}"#)
        }
    }

    /// The encoded item is the Delivery API's notification, written in one pass: every member of a load's
    /// targeting, the id where `idBytes` says, the timestamp where `restamp` rewrites it.
    @Test func aDisplayItemCarriesTheLoadsTargetingAndItsStamp() throws {
        let targeting = MboxTargeting(
            mboxParameters: [Parameter("status", "platinum")],
            product: ProductParameters(id: "24D3412", categoryId: "Books"),
            order: OrderParameters(id: "ADCKKIM", total: 344.30, purchasedProductIds: ["34"])
        )
        var notification = DisplayNotification.display(
            of: offer("logo", token: "tok-1"),
            targeting: targeting,
            profileParameters: [Parameter("age", "20-32")],
            timestampMs: -1
        )
        var item = try JSONReader.read(notification.encoded)
        #expect(item["id"]?.stringValue == notification.id && notification.id.utf8.count == 36)
        #expect(item["type"] == "display" && item["timestamp"] == -1)
        #expect(item["mbox"] == ["name": "logo", "state": "state-logo"] && item["tokens"] == ["tok-1"])
        #expect(item["parameters"] == ["status": "platinum"] && item["profileParameters"] == ["age": "20-32"])
        #expect(item["product"] == ["id": "24D3412", "categoryId": "Books"])
        #expect(item["order"]?["total"] == .number(344.30) && item["order"]?["purchasedProductIds"] == ["34"])
        #expect(item.objectValue?.count == 9)
        notification.restamp(Int64.max)
        item = try JSONReader.read(notification.encoded)
        #expect(item["timestamp"] == .integer(.max) && item["id"]?.stringValue == notification.id)
        let plain = DisplayNotification.display(
            of: offer("logo"),
            targeting: MboxTargeting(),
            profileParameters: [],
            timestampMs: 1_800_000_000_000
        )
        #expect(
            try JSONReader.read(plain.encoded).objectValue?.keys.sorted() == [
                "id", "mbox", "timestamp", "tokens", "type",
            ]
        )
    }

    /// A display notification's id lives only in its encoded item; the whole batch confirmed in order (the
    /// sender's usual answer) is matched there and acknowledged in the journal by those bytes.
    @Test func aBatchConfirmedInOrderLeavesTheJournalByItsEncodedIds() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = "\(folder)/target-notifications.journal"
        var notifications = ["a", "b", "c"].map { notification($0) }
        notifications[1].restamp(1_800_000_000_123)
        for notification in notifications {
            #expect(notification.id.utf8.count == 36)
            #expect(notification.encoded.starts(with: Array("{\"id\":\"\(notification.id)\",".utf8)))
            #expect(notification.withIDBytes { Array($0) } == Array(notification.id.utf8))
        }
        #expect(Set(notifications.map(\.id)).count == 3)
        do {
            let queue = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
            for notification in notifications { queue.enqueue(notification) }
            let batch = queue.take(max: 10)
            queue.complete(batch, acknowledged: AcknowledgedIDs(batch.map(\.id)))
            #expect(queue.summary.counters.sent == 3 && queue.summary.pending == 0)
            queue.commitJournal()
        }
        let journal = try String(contentsOfFile: path, encoding: .utf8)
        #expect(journal.contains("{\"ack\":[\(notifications.map { "\"\($0.id)\"" }.joined(separator: ","))]}\n"))
        let restarted = NotificationQueue(journalPath: path, capacity: 100, clock: manualClock(), logger: logger)
        #expect(restarted.summary.pending == 0)
    }
}

@Suite struct DeliveryCodecTests {
    private let visitor = VisitorSession.Snapshot(sessionId: "s-1", tntId: "t.35_0", edgeHost: nil, sessionAge: .zero)

    @Test func prefetchRequestCarriesWhatTheSDKSends() throws {
        var configuration = TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:8088")
        configuration.environmentId = 7
        configuration.propertyToken = "prop"
        let targeting = MboxTargeting(
            mboxParameters: [Parameter("status", "platinum")],
            product: ProductParameters(id: "24D3412", categoryId: "Books"),
            order: OrderParameters(id: "ADCKKIM", total: 344.30, purchasedProductIds: ["34", "125", "99"])
        )
        let request = DeliveryCodec(configuration: configuration).request(
            prefetch: [DeliveryMbox(name: "logo", targeting: targeting)],
            profileParameters: [Parameter("age", "20-32")],
            visitor: visitor,
            timeOffsetInMinutes: 60
        )
        #expect(request.url == "http://127.0.0.1:8088/rest/v1/delivery?client=acme&sessionId=s-1")
        #expect(request.headers.contains { $0.name == "X-EXC-SDK" && $0.value == "Preflight" })
        let body = try JSONReader.read(request.body)
        #expect(body["context"]?["channel"] == "mobile")
        #expect(body["context"]?["mobilePlatform"]?["platformType"] == "android")
        #expect(body["id"]?["tntId"] == "t.35_0")
        #expect(body["environmentId"] == 7)
        #expect(body["property"]?["token"] == "prop")
        let mbox = try #require(body["prefetch"]?["mboxes"]?.arrayValue?.first)
        #expect(mbox["index"] == 0)
        #expect(mbox["parameters"] == ["status": "platinum"])
        #expect(mbox["profileParameters"] == ["age": "20-32"])
        #expect(mbox["order"]?["total"] == .number(344.30))
        #expect(mbox["order"]?["purchasedProductIds"] == ["34", "125", "99"])
    }

    @Test func environmentIdZeroAndEmptyTokenAreLeftOut() throws {
        let request = DeliveryCodec(configuration: TargetConfiguration(clientCode: "acme")).request(
            execute: [DeliveryMbox(name: "m", targeting: MboxTargeting())],
            visitor: VisitorSession.Snapshot(sessionId: "s", tntId: nil, edgeHost: nil, sessionAge: .zero),
            timeOffsetInMinutes: 0
        )
        let body = try JSONReader.read(request.body)
        #expect(body["environmentId"] == nil)
        #expect(body["property"] == nil)
        #expect(body["id"] == nil)
        #expect(request.url.hasPrefix("https://acme.tt.omtrdc.net/rest/v1/delivery?"))
    }

    @Test func edgeHostReplacesOnlyTheHost() {
        let codec = DeliveryCodec(
            configuration: TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:8088")
        )
        let url = codec.url(visitor: .init(sessionId: "s", tntId: nil, edgeHost: "localhost", sessionAge: .zero))
        #expect(url.hasPrefix("http://localhost:8088/rest/v1/delivery?"))
    }

    /// A batch of notifications alone is made from a template: byte for byte the general request but for its
    /// `requestId`, new for each request, in every shape of identity, property and configuration.
    @Test func aRequestFromTheTemplateIsTheGeneralRequestWithItsOwnRequestID() throws {
        var configured = TargetConfiguration(clientCode: "ac me", serverURL: "http://127.0.0.1:8088")
        configured.environmentId = 7
        configured.propertyToken = "prop"
        configured.analyticsLogging = "client_side"
        let visitors = [
            visitor,
            VisitorSession.Snapshot(sessionId: "s 2", tntId: nil, edgeHost: "localhost", sessionAge: .seconds(3)),
            VisitorSession.Snapshot(
                sessionId: "s-3",
                tntId: "t",
                edgeHost: nil,
                thirdPartyId: "third",
                marketingCloudVisitorId: "mcid",
                customerIds: [CustomerId(id: "c", integrationCode: "code", authenticatedState: "authenticated")],
                sessionAge: .zero
            ),
        ]
        // Made notifications and a queued record (a plain cached load's display).
        let batch: [QueuedNotification] =
            ["a", "b"].map { name in
                .made(
                    DisplayNotification.display(
                        of: offer(name),
                        targeting: MboxTargeting(),
                        profileParameters: [],
                        timestampMs: 1_800_000_000_000
                    )
                )
            } + [.display(of: offer("c"), timestampMs: 1_800_000_000_001)]
        for configuration in [configured, TargetConfiguration(clientCode: "acme")] {
            for identity in visitors {
                for property in [nil, "other-property"] {
                    let key = DeliveryCodec.NotificationsTemplate.Key(
                        configuration: configuration,
                        visitor: identity,
                        property: property,
                        timeOffsetInMinutes: -90
                    )
                    let template = DeliveryCodec.NotificationsTemplate(key)
                    let general = DeliveryCodec(configuration: configuration).request(
                        notifications: batch,
                        property: property,
                        visitor: identity,
                        timeOffsetInMinutes: -90
                    )
                    let first = template.request(notifications: batch)
                    let second = template.request(notifications: Array(batch.prefix(1)))
                    #expect(first.url == general.url && first.timeout == general.timeout)
                    #expect(first.headers.map { $0.name } == general.headers.map { $0.name })
                    #expect(first.headers.map { $0.value } == general.headers.map { $0.value })
                    let offset = DeliveryCodec.NotificationsTemplate.requestIDOffset
                    func id(_ body: [UInt8]) -> String { String(decoding: body[offset..<(offset + 36)], as: UTF8.self) }
                    func withoutID(_ body: [UInt8]) -> [UInt8] { Array(body[..<offset] + body[(offset + 36)...]) }
                    #expect(try JSONReader.read(first.body)["requestId"]?.stringValue == id(first.body))
                    #expect(withoutID(first.body) == withoutID(general.body))
                    #expect(id(first.body) != id(second.body) && id(first.body) != id(general.body))
                    #expect(try JSONReader.read(second.body)["notifications"]?.arrayValue?.count == 1)
                }
            }
        }
    }

    @Test(arguments: [
        (HTTPResponse(status: 503, body: []), "status"),
        (HTTPResponse(status: 200, body: Array("garbage".utf8)), "unparseable"),
        (HTTPResponse(status: 200, body: Array(#"{"status":400,"message":"bad"}"#.utf8)), "message"),
    ])
    func failuresNameTheirReason(_ response: HTTPResponse, _ reason: String) {
        #expect(throws: DeliveryFailure.self) { try DeliveryResponse.decode(response) }
        do {
            _ = try DeliveryResponse.decode(response)
        } catch {
            #expect(error.reason == reason)
        }
    }
}

/// A service for `http://127.0.0.1:9` without a state directory, on `clock`, publishing to `publish`.
func targetService(
    _ transport: any HTTPTransport,
    clock: any AgentClock = manualClock(),
    publish: EventPublisher = .none
) -> TargetService {
    TargetService(
        configuration: TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:9"),
        transport: transport,
        stateDirectory: nil,
        clock: clock,
        logger: logger,
        publish: publish
    )
}

@Suite struct TargetServiceTests {
    private func service(_ transport: ScriptedTransport) -> TargetService {
        targetService(transport)
    }

    /// A load that needs the network, finished: its `result` as JSON.
    private func loadWithMisses(_ command: LoadRequestsCommand, _ target: TargetService) async throws -> JSONValue {
        var reply = JSONWriter()
        let pending = try #require(target.loadFromCache(command, appendingResultTo: &reply))
        return try JSONReader.read(await target.completeLoad(pending))
    }

    @Test func deferredDisplaysPastTheirCapacityLoseTheOldestFirst() {
        let target = service(ScriptedTransport())
        let capacity = TargetService.deferredDisplayCapacity
        for index in 0...capacity {  // one more than it keeps
            target.deferDisplay(
                of: offer("mbox-\(index)", content: "x"),
                targeting: MboxTargeting(),
                profileParameters: []
            )
        }
        // Deferred again: it keeps its place, and is not counted twice.
        target.deferDisplay(of: offer("mbox-1", content: "x"), targeting: MboxTargeting(), profileParameters: [])
        let kept = target.deferredDisplays.withLock { Array($0.keys) }
        #expect(kept.count == capacity)
        #expect(kept.first == OfferKey("mbox-1"))
        #expect(kept.last == OfferKey("mbox-\(capacity)"))
        #expect(!kept.contains(OfferKey("mbox-0")))
    }

    @Test func clickMetricsPastTheirCapacityLoseTheOldestFirst() {
        let target = service(ScriptedTransport())
        let capacity = TargetService.loadedClickCapacity
        let mboxes = (0...capacity).map {
            DeliveryResponse.Mbox(name: "mbox-\($0)", state: nil, options: [], clickToken: "token-\($0)")
        }
        target.rememberClicks(of: mboxes, property: nil)
        let kept = target.loadedClicks.withLock { $0 }
        #expect(kept.count == capacity)
        #expect(kept[OfferKey("mbox-0")] == nil)
        #expect(kept.keys.first == OfferKey("mbox-1"))
        #expect(kept[OfferKey("mbox-\(capacity)")]?.token == "token-\(capacity)")
    }

    @Test func loadServesCachedContentWithoutUpstreamCall() throws {
        let transport = ScriptedTransport()
        let target = service(transport)
        target.cache.store(offer("logo", content: "<img>"))
        target.cache.store(offer("color", content: "red"))
        var reply = JSONWriter()
        let pending = target.loadFromCache(
            LoadRequestsCommand(requests: [
                LoadRequest(name: "logo", defaultContent: "BlueWhale"), LoadRequest(name: "color", defaultContent: "x"),
            ]),
            appendingResultTo: &reply
        )
        #expect(pending == nil)
        #expect(
            try JSONReader.read(reply.bytes) == [
                "contents": [
                    ["name": "logo", "content": "<img>", "source": "cache"],
                    ["name": "color", "content": "red", "source": "cache"],
                ]
            ]
        )
        #expect(transport.requests.isEmpty)
        #expect(target.notifications.summary.pending == 2)
    }

    /// Hits on either side of a miss keep their places in the result.
    @Test func aMissBetweenHitsIsFetchedAndEveryAnswerKeepsItsPlace() async throws {
        let transport = ScriptedTransport()
        transport.answer(
            HTTPResponse(
                status: 200,
                body: Array(
                    #"{"status":200,"execute":{"mboxes":[{"index":0,"name":"b","options":[{"type":"html","content":"B"}]}]}}"#
                        .utf8
                )
            )
        )
        let target = service(transport)
        target.cache.store(offer("a", content: "A"))
        target.cache.store(offer("c", content: "C"))
        let command = LoadRequestsCommand(requests: ["a", "b", "c"].map { LoadRequest(name: $0, defaultContent: "d") })
        let result = try await loadWithMisses(command, target)
        #expect(
            result == [
                "contents": [
                    ["name": "a", "content": "A", "source": "cache"],
                    ["name": "b", "content": "B", "source": "network"],
                    ["name": "c", "content": "C", "source": "cache"],
                ]
            ]
        )
        #expect(target.counters.hits == 2)
        #expect(target.counters.misses == 1)
        #expect(target.counters.networkLoads == 1)
    }

    @Test func missesGoUpstreamInOneExecuteAndFailuresGiveDefaults() async throws {
        let transport = ScriptedTransport()
        transport.answer(
            HTTPResponse(
                status: 200,
                body: Array(
                    #"{"status":200,"execute":{"mboxes":[{"index":0,"name":"a","options":[{"type":"html","content":"A"}]},{"index":1,"name":"b"}]}}"#
                        .utf8
                )
            )
        )
        let target = service(transport)
        let command = LoadRequestsCommand(requests: [
            LoadRequest(name: "a", defaultContent: "da"), LoadRequest(name: "b", defaultContent: "db"),
        ])
        let result = try await loadWithMisses(command, target)
        #expect(
            result == [
                "contents": [
                    ["name": "a", "content": "A", "source": "network"],
                    ["name": "b", "content": "db", "source": "default"],
                ]
            ]
        )
        #expect(transport.requests.count == 1)
        #expect(target.counters.defaultsByReason == ["noContent": 1])
    }

    @Test func aReloadedServerURLAppliesAtOnceDespiteALearnedEdgeHost() async throws {
        let transport = ScriptedTransport()
        transport.answer(HTTPResponse(status: 200, body: Array(#"{"status":200,"edgeHost":"127.0.0.1"}"#.utf8)))
        let target = service(transport)
        let prefetch = PrefetchCommand(mboxes: [PrefetchMbox(name: "logo")])
        _ = await target.prefetch(prefetch)
        _ = await target.prefetch(prefetch)
        #expect(transport.requests.last?.url.hasPrefix("http://127.0.0.1:9/") == true)
        // Same server: the edge host stays.
        target.update(configuration: TargetConfiguration(clientCode: "acme", serverURL: "http://127.0.0.1:9"))
        #expect(target.visitor.current.edgeHost == "127.0.0.1")
        target.update(configuration: TargetConfiguration(clientCode: "acme", serverURL: "https://target.example:8443"))
        #expect(target.visitor.current.edgeHost == nil)
        _ = await target.prefetch(prefetch)
        #expect(transport.requests.last?.url.hasPrefix("https://target.example:8443/") == true)
    }
}

@Suite struct PrefetchCacheOrderTests {
    @Test func entriesListMostRecentFirstAndEvictionFollowsRecency() {
        let cache = PrefetchCache(budgetBytes: 1 << 30)
        for name in ["a", "b", "c", "d"] { cache.store(offer(name)) }
        _ = cache.hit("b", now: .now)
        cache.store(offer("a"))  // replacing makes it newest
        #expect(cache.entries.map(\.name) == ["a", "b", "d", "c"])
        cache.setBudget(cache.summary.bytes - 1)
        #expect(cache.entries.map(\.name) == ["a", "b", "d"])
        #expect(cache.clear(name: "b") == 1)
        #expect(cache.entries.map(\.name) == ["a", "d"])
        cache.setBudget(0)
        #expect(cache.entries.isEmpty)
        #expect(cache.summary.bytes == 0)
        #expect(cache.summary.evictions == 3)
    }

    @Test func hitsAreCounted() {
        let cache = PrefetchCache(budgetBytes: 1 << 20)
        cache.store(offer("a"))
        _ = cache.hit("a", now: .now)
        _ = cache.hit("a", now: .now)
        #expect(cache.peek("a")?.hits == 2)
        #expect(cache.hit("missing", now: .now) == nil)
    }
}

/// Click metrics: read from Target's answer, kept with the offer, and sent as a `click` notification.
struct ClickMetricTests {
    @Test func theClickTokenIsReadFromTheMboxMetrics() throws {
        let body: JSONValue = [
            "prefetch": [
                "mboxes": [
                    [
                        "name": "promo", "state": "s1",
                        "options": [["type": "html", "content": "<p>x</p>", "eventToken": "display-token"]],
                        "metrics": [
                            ["type": "display", "eventToken": "not-this"],
                            ["type": "click", "eventToken": "click-token"],
                        ],
                    ],
                    ["name": "logo", "options": [["type": "html", "content": "<p>y</p>"]]],
                ]
            ]
        ]
        let response = try DeliveryResponse.decode(
            HTTPResponse(status: 200, headers: [:], body: JSONWriter.encode(body))
        )
        #expect(response.prefetched.map(\.clickToken) == ["click-token", nil])
    }

    @Test func aClickNotificationCarriesTheClickTokenAndTheParameters() throws {
        let click = DisplayNotification.click(
            mbox: "promo",
            property: "ws-a",
            state: "s1",
            token: "click-token",
            targeting: MboxTargeting(mboxParameters: [Parameter("placement", "home")]),
            profileParameters: [],
            timestampMs: 1_700_000_000_000
        )
        let item = try JSONReader.read(click.encoded)
        #expect(item["type"] == "click" && item["timestamp"] == .integer(1_700_000_000_000))
        #expect(item["mbox"] == ["name": "promo", "state": "s1"] && item["tokens"] == ["click-token"])
        #expect(item["parameters"] == ["placement": "home"])
        #expect(click.mboxName == "promo" && click.property == "ws-a")
    }

    @Test func aRequestCarriesItsPropertyOrTheConfiguredOne() throws {
        var configuration = TargetConfiguration(clientCode: "acme", propertyToken: "configured")
        let visitor = VisitorSession(timeout: .seconds(60), clock: SystemClock(), stateFile: nil).current
        func property(_ codec: DeliveryCodec, _ token: String?) throws -> JSONValue? {
            try JSONReader.read(codec.request(property: token, visitor: visitor, timeOffsetInMinutes: 0).body)[
                "property"
            ]
        }
        #expect(try property(DeliveryCodec(configuration: configuration), nil) == ["token": "configured"])
        #expect(try property(DeliveryCodec(configuration: configuration), "ws-b") == ["token": "ws-b"])
        configuration.propertyToken = ""
        #expect(try property(DeliveryCodec(configuration: configuration), nil) == nil)
    }

    @Test func theCacheKeepsOneOfferPerMboxAndProperty() {
        let cache = PrefetchCache(budgetBytes: 1 << 20)
        for property in [nil, "ws-a", "ws-b"] {
            cache.store(
                CachedOffer(
                    name: "logo",
                    options: [OfferOption(type: "html", content: .string(property ?? "default"), eventToken: "t")],
                    state: nil,
                    property: property,
                    now: .now,
                    epochMs: 0
                )
            )
        }
        #expect(cache.hit(OfferKey("logo", property: "ws-a"), now: .now)?.content == "ws-a")
        #expect(cache.hit("logo", now: .now)?.content == "default")
        #expect(cache.peek(OfferKey("logo", property: "ws-c")) == nil)
        #expect(cache.clear(name: "logo") == 3 && cache.summary.entries == 0)
    }
}
