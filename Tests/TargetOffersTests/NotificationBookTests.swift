import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import Testing

@testable import TargetOffers

/// The book as these tests use it: with made notifications.
extension NotificationBook {
    @discardableResult
    mutating func enqueue(_ notification: DisplayNotification) -> QueuedNotification? {
        enqueue(.made(notification))
    }
}

extension InFlightNotifications {
    mutating func insert(_ batch: [DisplayNotification]) {
        insert(batch.map(QueuedNotification.made))
    }

    mutating func remove(_ batch: [DisplayNotification]) {
        remove(batch.map(QueuedNotification.made))
    }

    @discardableResult
    mutating func remove(_ notification: DisplayNotification) -> Bool {
        remove(.made(notification))
    }
}

/// The queue's rules as a pure value: no file, no lock, the time passed in.
@Suite struct NotificationBookTests {
    private let origin = MonotonicInstant.now
    private let epoch: Int64 = 1_800_000_000_000

    private func notification(
        _ id: String,
        at epochMs: Int64 = 1_800_000_000_000,
        property: String? = nil
    ) -> DisplayNotification {
        DisplayNotification(
            deliveryJSON: ["id": .string(id), "timestamp": .integer(epochMs), "mbox": ["name": .string("m-\(id)")]],
            property: property
        )!
    }

    @Test func aBatchHoldsOnePropertysNotificationsOldestFirstTheOthersKeepingTheirOrder() {
        var book = NotificationBook(capacity: 10)
        for (id, property) in [("a", nil), ("b", "ws-b"), ("c", nil), ("d", "ws-b"), ("e", nil)] as [(String, String?)]
        {
            _ = book.enqueue(notification(id, property: property))
        }
        #expect(book.take(max: 2).map(\.id) == ["a", "c"])
        #expect(book.pending.map(\.id) == ["b", "d", "e"])
        // Riding along with ws-b's work: only ws-b's; with the configured property's: none of ws-b's.
        #expect(book.take(max: 10, ride: true, property: "ws-b").map(\.id) == ["b", "d"])
        #expect(book.take(max: 10, ride: true, property: "ws-c").isEmpty)
        #expect(book.take(max: 10).map(\.id) == ["e"] && book.pending.isEmpty)
    }

    /// Batches in flight side by side, taken out of order (a failed older batch taken again after a newer one),
    /// settled in any order or in part: each notification is found where it is, and only there.
    @Test func notificationsInFlightAreFoundWhateverOrderTheirBatchesTakeAndSettle() {
        let made = (0..<12).map { notification("n\($0)") }
        var inFlight = InFlightNotifications()
        inFlight.insert(Array(made[4..<8]))
        inFlight.insert(Array(made[8..<12]))
        inFlight.insert(Array(made[0..<4]).reversed())
        #expect(inFlight.items.map(\.serial) == made.map(\.serial))
        inFlight.remove(Array(made[0..<4]))  // at the front: the run removed whole
        #expect(inFlight.items.map(\.id) == made[4...].map(\.id))
        inFlight.remove([made[9], made[2], made[11]])  // one settled already, two from the middle and the end
        #expect(inFlight.items.map(\.id) == ["n4", "n5", "n6", "n7", "n8", "n10"])
        #expect(!inFlight.remove(made[9]) && inFlight.remove(made[6]) && inFlight.count == 5)
        inFlight.remove(Array(made[4..<9]))
        #expect(inFlight.items.map(\.id) == ["n10"])
        inFlight.removeAll()
        #expect(inFlight.isEmpty)
    }

    @Test func overCapacityTheOldestPendingIsDropped() {
        var book = NotificationBook(capacity: 2)
        let droppedForA = book.enqueue(notification("a"))
        let droppedForB = book.enqueue(notification("b"))
        _ = book.take(max: 1)  // "a" in flight still counts against the capacity
        let droppedForC = book.enqueue(notification("c"))
        #expect(droppedForA == nil && droppedForB == nil && droppedForC?.id == "b")
        #expect(book.live.map(\.id) == ["a", "c"])
        #expect(book.summary.pending == 1 && book.summary.inFlight == 1)
        #expect(book.summary.counters.droppedOverflow == 1 && book.summary.counters.queued == 3)
    }

    @Test func aSuspectDroppedForOverflowNoLongerHoldsBackRideAlongBatches() {
        var book = NotificationBook(capacity: 2)
        _ = book.enqueue(notification("a"))
        book.suspect(book.take(max: 1, ride: true, property: nil))
        #expect(book.take(max: 1, ride: true, property: nil).isEmpty)  // held back while "a" is a suspect
        _ = book.enqueue(notification("b"))
        let dropped = book.enqueue(notification("c"))
        #expect(dropped?.id == "a" && book.live.map(\.id) == ["b", "c"])
        #expect(book.take(max: 1, ride: true, property: nil).map(\.id) == ["b"])
    }

    @Test func aWholeBatchIsConfirmedInTargetsOrderOrAnyOther() {
        var book = NotificationBook(capacity: 10)
        for id in ["a", "b", "c", "d"] { _ = book.enqueue(notification(id)) }
        #expect(book.complete(book.take(max: 2), acknowledged: ["a", "b"]).map(\.id) == ["a", "b"])
        #expect(book.complete(book.take(max: 2), acknowledged: ["d", "c"]).map(\.id) == ["c", "d"])
        #expect(book.isIdle && book.summary.counters.sent == 4)
    }

    @Test func unconfirmedAndFailedBatchesGoBackInFrontOfNewerOnes() {
        var book = NotificationBook(capacity: 10)
        for id in ["a", "b", "c"] { _ = book.enqueue(notification(id)) }
        let batch = book.take(max: 2)
        _ = book.enqueue(notification("d"))
        #expect(book.complete(batch, acknowledged: ["b"]).map(\.id) == ["b"])
        let retried = book.take(max: 10)
        #expect(retried.map(\.id) == ["a", "c", "d"])
        _ = book.enqueue(notification("e"))
        book.fail(retried, error: "HTTP 503", now: origin, epochMs: epoch)
        #expect(book.pending.map(\.id) == ["a", "c", "d", "e"] && book.inFlight.isEmpty)
        #expect(book.summary.counters.sent == 1 && book.summary.counters.failedAttempts == 1)
    }

    @Test func aFailureHoldsTheNextBatchForTheBackoffAndAConfirmationLiftsIt() throws {
        var book = NotificationBook(capacity: 10)
        _ = book.enqueue(notification("a", at: epoch - 60_000))
        #expect(book.isDue(batchSize: 50, maxAge: .seconds(2), now: origin, epochMs: epoch))
        book.fail(book.take(max: 10), error: "timeout", now: origin, epochMs: epoch)
        let retryAt = try #require(book.retryAt)
        // Equal jitter on a 1 s first step: between half a second and one second.
        #expect(retryAt - origin >= .milliseconds(500) && retryAt - origin <= .seconds(1))
        #expect(!book.isDue(batchSize: 50, maxAge: .seconds(2), now: origin, epochMs: epoch))
        #expect(book.isDue(batchSize: 50, maxAge: .seconds(2), now: retryAt, epochMs: epoch))
        _ = book.complete(book.take(max: 10), acknowledged: [])
        #expect(book.retryAt == nil && book.consecutiveFailures == 0)
    }

    @Test func aReplayedBookStartsWithWhatTheJournalHeld() {
        let book = NotificationBook(capacity: 10, replayed: [notification("a"), notification("b")])
        #expect(book.summary.pending == 2 && book.summary.counters.replayed == 2)
        #expect(book.summary.oldestTimestampMs == epoch)
    }

    /// A journal written with a larger capacity: the newest are kept, the rest counted as dropped, and the queue
    /// is at capacity, so the next enqueue drops one, the oldest.
    @Test func aReplayOverCapacityKeepsTheNewest() {
        var book = NotificationBook(capacity: 2, replayed: ["a", "b", "c"].map { notification($0) })
        #expect(book.live.map(\.id) == ["b", "c"])
        #expect(book.summary.counters.replayed == 2 && book.summary.counters.droppedOverflow == 1)
        let dropped = book.enqueue(notification("d"))
        #expect(dropped?.id == "b" && book.live.map(\.id) == ["c", "d"])
    }

    @Test func optingOutDropsPendingAndInFlightAndASettledSendPutsNothingBack() {
        var book = NotificationBook(capacity: 10)
        for id in ["a", "b", "c", "d"] { _ = book.enqueue(notification(id)) }
        let first = book.take(max: 1)
        let second = book.take(max: 1)
        let third = book.take(max: 1)
        #expect(Set(book.dropAll().map(\.id)) == ["a", "b", "c", "d"])
        #expect(book.isIdle && book.summary.counters.droppedOptedOut == 4)
        // The sends in flight settle afterwards: unconfirmed, failed or refused, none comes back.
        #expect(book.complete(first, acknowledged: ["a"]).map(\.id) == ["a"])
        book.fail(second, error: "HTTP 503", now: origin, epochMs: epoch)
        book.suspect(third)
        #expect(book.isIdle && book.suspects.isEmpty)
    }
}

/// `target.privacy`: configuration and the admin command, the later of the two winning.
@Suite struct PrivacySettingTests {
    private func file() -> StateFile {
        StateFile(path: "/tmp/pf-privacy-\(RandomUUID.make()).json", logger: Logger(label: "test"))
    }

    @Test func theAdminChoiceOutlivesARestartUntilTheConfiguredValueChanges() {
        let file = file()
        defer { try? FileSystem.remove(file.path) }
        let setting = PrivacySetting(configured: .optedIn, file: file)
        #expect(setting.status == .optedIn && !setting.setByAdmin)
        #expect(setting.set(.optedOut) == .optedIn)
        // A restart with the same configuration keeps the admin's choice...
        let restarted = PrivacySetting(configured: .optedIn, file: file)
        #expect(restarted.status == .optedOut && restarted.setByAdmin)
        // ...a reload with the same configured value changes nothing...
        #expect(restarted.configure(.optedIn) == nil && restarted.status == .optedOut)
        // ...and a new configured value applies, and forgets the admin's choice.
        #expect(restarted.configure(.unknown) == .optedOut)
        #expect(restarted.status == .unknown && !restarted.setByAdmin)
        #expect(PrivacySetting(configured: .unknown, file: file).status == .unknown)
    }

    @Test func aConfigurationChangedWhileTheAgentWasDownWins() {
        let file = file()
        defer { try? FileSystem.remove(file.path) }
        _ = PrivacySetting(configured: .optedIn, file: file).set(.optedOut)
        let started = PrivacySetting(configured: .unknown, file: file)
        #expect(started.status == .unknown && !started.setByAdmin)
    }

    @Test func aReloadToTheStatusInForceReportsNoChange() {
        let setting = PrivacySetting(configured: .optedIn, file: nil)
        _ = setting.set(.unknown)
        #expect(setting.configure(.unknown) == nil)
        #expect(setting.status == .unknown && !setting.setByAdmin)
    }
}
