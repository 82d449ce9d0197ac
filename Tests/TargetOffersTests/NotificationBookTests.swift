import PreflightProtocol
import Testing

@testable import TargetOffers

/// The queue's rules as a pure value: no file, no lock, the time passed in.
@Suite struct NotificationBookTests {
    private let origin = ContinuousClock.now
    private let epoch: Int64 = 1_800_000_000_000

    private func notification(_ id: String, at epochMs: Int64 = 1_800_000_000_000) -> DisplayNotification {
        DisplayNotification(
            deliveryJSON: ["id": .string(id), "timestamp": .integer(epochMs), "mbox": ["name": .string("m-\(id)")]]
        )!
    }

    @Test func overCapacityTheOldestPendingIsDroppedAndItsIdReturnedForTheJournal() {
        var book = NotificationBook(capacity: 2)
        #expect(book.enqueue(notification("a")).isEmpty)
        #expect(book.enqueue(notification("b")).isEmpty)
        _ = book.take(max: 1)  // "a" in flight still counts against the capacity
        #expect(book.enqueue(notification("c")) == ["b"])
        #expect(book.summary.pending == 1 && book.summary.inFlight == 1)
        #expect(book.summary.counters.droppedOverflow == 1 && book.summary.counters.queued == 3)
    }

    @Test func unconfirmedAndFailedBatchesGoBackInFrontOfNewerOnes() {
        var book = NotificationBook(capacity: 10)
        for id in ["a", "b", "c"] { _ = book.enqueue(notification(id)) }
        let batch = book.take(max: 2)
        _ = book.enqueue(notification("d"))
        #expect(book.complete(batch, acknowledged: ["b"]) == ["b"])
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
}
