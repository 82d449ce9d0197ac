import PreflightCore

/// Waits for a condition, polling every 2 ms, for up to `limit` of time in which this process ran; true
/// when it held.
///
/// The limit catches a hang in the code under test, so time in which that code could not run does not
/// spend it. In a whole `swift test` run every test shares one cooperative pool (a thread per core), and
/// on a loaded machine other tests' blocking calls (a subprocess, a socket) and CPU-bound work hold all of
/// it for tens of seconds: then neither this poller nor the tasks it waits for run, and a wall-clock
/// deadline ran out after three polls while the background loop under test had not been scheduled. A
/// gap between two polls therefore counts for at most `longestCreditedGap`; polls at their usual pace
/// count in full, so a condition that never holds still fails after `limit`. `limit * 6` of wall time
/// ends the wait in any case. `now` is for the tests of this function.
public func eventually(
    within limit: Duration = .seconds(20),
    now: () -> MonotonicInstant = { MonotonicInstant.now },
    _ condition: () async -> Bool
) async -> Bool {
    let start = now()
    let ceiling = start + limit * 6
    var credited = Duration.zero
    var last = start
    while true {
        if await condition() { return true }
        let current = now()
        credited += min(current - last, longestCreditedGap)
        last = current
        if credited >= limit || current >= ceiling { return false }
        try? await Task.sleep(for: .milliseconds(2))
    }
}

/// The most a gap between two polls of `eventually` counts for: fifty poll intervals. A longer gap means
/// the process's tasks were not being run.
public let longestCreditedGap = Duration.milliseconds(100)
