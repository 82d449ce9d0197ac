import PreflightCore
import TestSupport
import Testing

// `eventually`, which every wait of these tests goes through, on a time source the test moves.

/// Time that moves on by `step` each time it is read.
private final class SteppingTime {
    private var instant = MonotonicInstant(nanoseconds: 0)
    let step: Duration

    init(step: Duration) { self.step = step }

    func read() -> MonotonicInstant {
        defer { instant = instant + step }
        return instant
    }
}

@Test func eventuallyDoesNotSpendItsLimitWhileTheProcessDoesNotRun() async {
    // Thirty seconds between polls: every thread of the pool held elsewhere, as in a whole run on a loaded
    // machine. A wall-clock limit of 20 s gave up after the first poll.
    let time = SteppingTime(step: .seconds(30))
    var polls = 0
    let held = await eventually(now: time.read) {
        polls += 1
        return polls == 4
    }
    #expect(held)
    #expect(polls == 4)
}

@Test func eventuallyStillGivesUpAfterItsLimitWhenPollsComeAtTheirPace() async {
    let time = SteppingTime(step: .milliseconds(10))
    var polls = 0
    let held = await eventually(within: .seconds(1), now: time.read) {
        polls += 1
        return false
    }
    #expect(!held)
    #expect(polls == 100, "1 s of 10 ms gaps")
}

@Test func eventuallyGivesUpAtSixTimesItsLimitOfWallTimeWhateverTheGaps() async {
    let time = SteppingTime(step: .seconds(30))
    var polls = 0
    let held = await eventually(within: .seconds(20), now: time.read) {
        polls += 1
        return false
    }
    #expect(!held)
    #expect(polls == 4, "120 s of wall time in 30 s gaps")
}
