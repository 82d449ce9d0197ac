import PreflightCore
import Testing

/// The wall time a box with a wrong clock stamps things with, from the upstream's `Date` headers.
@Suite struct UpstreamTimeTests {
    /// 2026-11-25T12:00:00Z, and the same moment as a box whose clock says 2000-01-01T00:00:00Z sees it.
    private let realMs: Int64 = 1_795_608_000_000
    private let header = "Wed, 25 Nov 2026 12:00:00 GMT"
    private let year2000Ms: Int64 = 946_684_800_000

    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", Int64(784_111_777)),
        ("Thu, 01 Jan 1970 00:00:00 GMT", Int64(0)),
        ("Sat, 01 Jan 2000 00:00:00 GMT", Int64(946_684_800)),
        ("Thu, 29 Feb 2024 23:59:59 GMT", Int64(1_709_251_199)),
        ("Wed, 25 Nov 2026 12:00:00 GMT", Int64(1_795_608_000)),
    ])
    func imfFixdatesAreRead(text: String, seconds: Int64) {
        #expect(UpstreamTime.parseHTTPDate(text) == seconds)
    }

    @Test(arguments: [
        "", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT", "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:60:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMX",
        "Sun; 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 19x4 08:49:37 GMT", "Sun, 06 Nov 1994 08-49-37 GMT",
    ])
    func anythingElseIsNotADate(text: String) {
        #expect(UpstreamTime.parseHTTPDate(text) == nil)
    }

    @Test func aBoxClockInTheYear2000IsCorrectedFromTheFirstResponse() throws {
        let box = ManualClock(epochOrigin: year2000Ms)
        let time = UpstreamTime(box)
        #expect(time.epochMilliseconds() == year2000Ms)  // nothing known yet: the box's own clock
        let displayed = box.now()
        box.advance(by: .seconds(10))
        time.learn(dateHeader: header, receivedAt: box.now())
        let correction = try #require(time.correction)
        #expect(time.isCorrecting)
        #expect(correction.offsetMs == realMs + 500 - (year2000Ms + 10_000))
        #expect(time.epochMilliseconds() == realMs + 500)
        box.advance(by: .seconds(60))
        #expect(time.epochMilliseconds() == realMs + 60_500)
        // Something that happened before the correction was known is stamped by its monotonic age.
        #expect(time.epochMilliseconds(at: displayed) == realMs + 500 - 10_000)
    }

    @Test func aBoxClockThatAgreesIsTrustedToTheMillisecond() {
        let box = ManualClock(epochOrigin: realMs + 1_234)
        let time = UpstreamTime(box)
        time.learn(dateHeader: header, receivedAt: box.now())
        #expect(!time.isCorrecting)
        #expect(time.correction?.offsetMs == -734)
        #expect(time.epochMilliseconds() == realMs + 1_234)
    }

    /// NTP setting the box's clock later does not move the corrected time: it is carried on the
    /// monotonic clock, and the next response that agrees hands back to the box's own clock.
    @Test func aClockSetByNTPLaterChangesNothingForTheCorrectedTime() {
        let box = ManualClock(epochOrigin: year2000Ms)
        let time = UpstreamTime(box)
        time.learn(dateHeader: header, receivedAt: box.now())
        box.advance(by: .seconds(30))
        box.stepWallClock(byMilliseconds: realMs - year2000Ms)
        #expect(time.epochMilliseconds() == realMs + 30_500)
        time.learn(dateHeader: "Wed, 25 Nov 2026 12:00:30 GMT", receivedAt: box.now())
        #expect(!time.isCorrecting && time.epochMilliseconds() == realMs + 30_000)
    }

    @Test func anUnreadableHeaderTeachesNothing() {
        let box = ManualClock(epochOrigin: year2000Ms)
        let time = UpstreamTime(box)
        time.learn(dateHeader: "yesterday", receivedAt: box.now())
        #expect(time.correction == nil && time.epochMilliseconds() == year2000Ms)
    }
}

@Suite struct UpstreamTimeStampTests {
    @Test func stampNowIsStampAtNow() {
        let box = ManualClock(epochOrigin: 946_684_800_000)
        let time = UpstreamTime(box)
        let before = time.stampNow()
        #expect(before.epochMs == 946_684_800_000 && before.byBoxClock && before.now == box.now())
        time.learn(dateHeader: "Wed, 25 Nov 2026 12:00:00 GMT", receivedAt: box.now())
        box.advance(by: .seconds(2))
        let after = time.stampNow()
        #expect(!after.byBoxClock && after.epochMs == 1_795_608_002_500)
        #expect(time.stamp(at: after.now) == (epochMs: after.epochMs, byBoxClock: false))
    }

    /// The requests of one batch (one `receivedAt`) share one reading of the system's wall clock; another batch
    /// reads it again. Calls without `receivedAt` always read it.
    @Test func aBatchsLoadsShareOneReadingOfTheWallClock() async throws {
        let time = UpstreamTime(SystemClock())
        let batch = MonotonicInstant.now
        let first = time.stampNow(receivedAt: batch)
        #expect(first.byBoxClock && first.now == batch)
        try await Task.sleep(for: .milliseconds(5))
        #expect(time.stampNow(receivedAt: batch).epochMs == first.epochMs, "the same batch, the same reading")
        #expect(time.stampNow().epochMs >= first.epochMs + 5, "no batch: read now")
        let next = time.stampNow(receivedAt: .now)
        #expect(next.epochMs >= first.epochMs + 5, "a new batch: read again")
    }
}
