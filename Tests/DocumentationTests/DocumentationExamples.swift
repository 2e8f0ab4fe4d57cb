// swift-format-ignore-file
// Every Swift example of README.md and of the DocC articles
// (Sources/PreciseTimer/PreciseTimer.docc, Sources/PreciseTimerCalendar/PreciseTimerCalendar.docc), each in a function that is compiled and never called:
// the build type-checks them. `DocumentationDriftTests` fails when an example in the documents has
// no identical copy here (indentation and import lines aside), so edit both together. The names
// the examples take for granted (`store`, `database`, `log`, …) are stubbed in
// `DocumentationStubs.swift`. This file keeps the documents' formatting, hence no swift-format.

import CLibevent
import Dispatch
import Logging
import Metrics
import PreciseTimer
import PreciseTimerCalendar
import PreciseTimerCompat
import PreciseTimerMetrics
import PreciseTimerServiceLifecycle
import PreciseTimerTesting
import ServiceLifecycle
import Testing
import UnixSignals

// README.md #1
func readmeQuickStart() async throws {
    let timers = try PreciseTimer()                      // one libevent base, one thread "PreciseTimer"

    // Repeating at a fixed rate: deadlines are start + k·interval, never drifting.
    try timers.scheduleRepeating(id: "heartbeat", every: .milliseconds(10)) { tick in
        if tick.missed > 0 { log("missed \(tick.missed) beats, \(tick.lateness) late") }
    }

    // One-shot: fires once, then its generated ID ("timer-N") is removed (one-shot auto-cancel).
    let id = try timers.schedule(after: .seconds(30)) { tick in expireSession() }
    // Off the timer thread, with a missed-tick policy; and at an instant on CLOCK_MONOTONIC:
    try timers.scheduleRepeating(id: "flush", every: .seconds(1),
                                 options: .init(executor: .queue(flushQueue), missedTicks: .burst)) { _ in flush() }
    try timers.schedule(id: "report", at: timers.now.advanced(by: .seconds(5))) { _ in report() }

    try timers.reschedule("report", after: .seconds(10))  // move the deadline; false if gone or already firing
    timers.pause("flush")         // stays scheduled, never fires; resume keeps the time it had left
    timers.resume("flush")
    timers.cancel(id)             // true if it was scheduled; idempotent, from any thread or handler
    let flushing = timers.isScheduled("flush")   // true
    let pending = timers.scheduledCount          // 2, in O(1) (scheduledIDs copies every ID)
    timers.shutdown()             // cancels everything, releases every handler, stops the thread
    _ = (flushing, pending)
}

// README.md #2
func readmeTour(timers: PreciseTimer) async throws {
    // Every call is written on scheduleTimer(_:id:options:_:), which returns a TimerHandle: an ID and a generation.
    let expiry = try timers.scheduleTimer(.after(.seconds(30)), id: "session-7") { _ in expire() }
    timers.cancel(expiry)                    // ends this timer, never a later "session-7"
    let token = expiry.token(on: timers)     // the same, when its owner goes

    // Async/await: a Clock, and a repeating timer as an AsyncSequence (first tick after one interval).
    try await Task.sleep(for: .seconds(1), clock: timers.clock)
    for await tick in try timers.ticks(every: .milliseconds(10)) {
        if tick.missed > 0 { log("behind by \(tick.missed) periods") }
        if done { break }                                            // leaving the loop cancels the timer
    }

    // A time limit: cancels the operation's task at the deadline, throws .timedOut once it returned.
    let row = try await timers.withTimeout(.milliseconds(250)) {
        try await database.query("SELECT …")
    }

    // An idle timeout in one atomic step: pushes the expiry back, or creates it (then returns true).
    let created = try timers.scheduleOrReschedule(id: TimerID(session.id), after: .seconds(30)) { _ in
        store.expire(session.id)
    }

    // Tolerance: timers that may fire up to 10 ms late share wake-ups; the default is precise.
    try timers.schedule(after: .seconds(30), options: .init(tolerance: .milliseconds(10))) { _ in expireSession() }
    _ = (token, row, created)
}

// README.md #3
func readmeWallClock(timers: PreciseTimer) async throws {
    try timers.scheduleRepeating(id: "backup", on: try CalendarSchedule("*-*-* 03:00 Europe/Berlin")) { tick in
        backup(tick.wallClockDeadline!)                  // the occurrence this call answers
    }
    try timers.schedule(atWallClock: renewAt) { _ in renewCertificate() }
}

// README.md #4
func readmeTesting() async throws {
    let timers = TestTimerService()
    let session = Session(timers: timers, idleTimeout: .seconds(30))
    try timers.advance(by: .seconds(30))   // fires what is due on the way, at its deadline, in order
    #expect(session.isExpired)
    timers.advanceToNextDeadline()         // or step from deadline to deadline
}

// README.md #5
func readmeDaemon() async throws {
    EarlySignals.hold()          // first: a SIGTERM before the group listens still stops it gracefully
    let timers = try PreciseTimer()
    let group = ServiceGroup(
        services: [timers, sessions, httpServer],    // timers FIRST: they stop LAST
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
    try await group.run()
}

// Sources/PreciseTimer/PreciseTimer.docc/AsyncAwait.md #1
func asyncAwaitClock() async throws {
    let timers = try PreciseTimer()

    // Relative:
    try await Task.sleep(for: .milliseconds(5), clock: timers.clock)

    // Absolute, re-armed from the previous deadline: no drift, whatever each step costs.
    var deadline = timers.now
    while !Task.isCancelled {
        deadline = deadline.advanced(by: .milliseconds(10))
        try await Task.sleep(until: deadline, clock: timers.clock)
        step()
    }
}

// Sources/PreciseTimer/PreciseTimer.docc/AsyncAwait.md #2
func asyncAwaitTicks(timers: PreciseTimer) async throws {
    for await tick in try timers.ticks(every: .milliseconds(10)) {
        if tick.missed > 0 { log("behind by \(tick.missed) periods") }
        step()
    }
}

// Sources/PreciseTimer/PreciseTimer.docc/AsyncAwait.md #3
func asyncAwaitTimeLimits(timers: PreciseTimer) async throws {
    let row = try await timers.withTimeout(.milliseconds(250)) {
        try await database.query("SELECT …")
    }
    _ = row
}

// Sources/PreciseTimer/PreciseTimer.docc/AsyncAwait.md #4
func asyncAwaitVirtualTime() async throws {
    let timers = TestTimerService()
    var ticks = try timers.ticks(every: .seconds(1)).makeAsyncIterator()  // its timer starts here
    try timers.advance(by: .seconds(5))
    let tick = await ticks.next()   // one merged tick: count 5, missed 4
    _ = tick
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #1
func embeddingManifest() -> [ManifestStub] {
    [
        .target(name: "MyDaemon", dependencies: [
            .product(name: "PreciseTimer", package: "PreciseTimer"),
            .product(name: "PreciseTimerServiceLifecycle", package: "PreciseTimer"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
    ]
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #2
func embeddingLifecycle() async throws {
    let timers = try PreciseTimer(configuration: .init(threadName: "timers"))
    let group = ServiceGroup(
        services: [timers, sessions, httpServer],    // timers FIRST: they stop LAST
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
    try await group.run()
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #3
func embeddingHandlersInFlight(timers: PreciseTimer) async throws {
    if await !timers.shutdown(gracePeriod: .seconds(2)) {
        logger.warning("timer handlers still running 2 s after shutdown")
    }
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #4
func embeddingGracePeriod() async throws {
    let configuration = PreciseTimer.Configuration(threadName: "timers", shutdownGracePeriod: .seconds(2))  // not negative; .zero waits for nothing
    let timers = try PreciseTimer(configuration: configuration)
    _ = timers
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #5
func embeddingEarlySignals() async throws {
    EarlySignals.hold()          // first: before parsing options, opening stores, creating services
    let timers = try PreciseTimer()
    try await ServiceGroup(services: [timers, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #6
func embeddingLogging() async throws {
    LoggingSystem.bootstrap(StreamLogHandler.standardError)   // the daemon's choice, once
    var logger = Logger(label: "my-daemon.timers")
    logger.logLevel = .info

    let timers = try PreciseTimer(configuration: .init(
        threadName: "timers",
        logger: logger,
        stallThreshold: .milliseconds(2)
    ))
    _ = timers
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #7
func embeddingMetrics() async throws {
    var factory = PrometheusMetricsFactory()
    // Prometheus' default duration buckets start at 5 ms, far above a healthy lateness.
    factory.durationHistogramBuckets["precise_timer_lateness_seconds"] = [
        .microseconds(10), .microseconds(50), .microseconds(100), .microseconds(500),
        .milliseconds(1), .milliseconds(5), .milliseconds(25),
    ]
    MetricsSystem.bootstrap(factory)   // the daemon bootstraps, once; the library never does

    let sessions = try PreciseTimer(configuration: .init(
        threadName: "sessions",
        metrics: SwiftMetricsRecorder(dimensions: [("lane", "sessions")])
    ))
    _ = sessions
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #8
func embeddingCallerBase(base: OpaquePointer?) async throws {
    // `base`: the daemon's event_base (epoll), created (in C or in Swift) from an event_config with
    // EVENT_BASE_FLAG_PRECISE_TIMER set (a timerfd and CLOCK_MONOTONIC instead of whole milliseconds).
    // On the loop thread, before the loop runs or from one of its callbacks:
    let timers = try PreciseTimer(eventBase: base, configuration: .init(logger: logger))  // logs and metrics as on a thread
    try timers.scheduleRepeating(id: "heartbeat", every: .milliseconds(10)) { _ in beat() }

    // The daemon's own thread keeps driving its loop, as before:
    event_base_loop(base, 0)

    // Once the loop has returned, on the same thread: first the service, then the base.
    timers.shutdown()
    event_base_free(base)
}

// Sources/PreciseTimer/PreciseTimer.docc/EmbeddingInADaemon.md #9
func embeddingLanes() async throws {
    // Bulk: idle expiries of every session, tens of thousands due together.
    let sessionsLane = try PreciseTimer(configuration: .init(threadName: "sessions"))
    // Latency-sensitive: the heartbeat, alone on its thread.
    let heartbeatLane = try PreciseTimer(configuration: .init(threadName: "heartbeat"))

    let group = ServiceGroup(
        services: [sessionsLane, heartbeatLane, sessionService],   // both lanes first: they stop last
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
    _ = group
}

// Sources/PreciseTimer/PreciseTimer.docc/PreciseTimer.md #1
func landingPage() async throws {
    let timers = try PreciseTimer()
    try timers.scheduleRepeating(id: "heartbeat", every: .milliseconds(10)) { tick in
        if tick.missed > 0 { print("missed \(tick.missed) beats") }
    }
    try timers.schedule(after: .seconds(30)) { _ in print("once") }  // generated ID, auto-removed
    timers.cancel("heartbeat")
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #1
func semanticsPrecisionOptions() async throws {
    let timers = try PreciseTimer(configuration: .init(
        threadName: "rt-timers",
        spinMargin: .microseconds(100),   // wake 100 µs early and spin to the deadline
        realtimePriority: 50,             // SCHED_FIFO; throws .systemFailure (EPERM) when not permitted
        cpuAffinity: 1                    // pin the loop thread
    ))
    _ = timers
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #2
func semanticsTolerance(timers: PreciseTimer, id: TimerID) async throws {
    // 100 000 session expiries that may fire up to 10 ms late: a handful of wake-ups, not 100 000.
    try timers.scheduleOrReschedule(id: id, after: .seconds(30), options: .init(tolerance: .milliseconds(10))) { _ in
        expire(id)
    }
    try await Task.sleep(for: .seconds(1), tolerance: .milliseconds(50), clock: timers.clock)
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #3
func semanticsHandles(timers: PreciseTimer) async throws {
    let expiry = try timers.scheduleTimer(.after(.seconds(30)), id: "session-7") { _ in expire() }
    timers.cancel(expiry)  // ends this timer, never a later "session-7"
    try timers.scheduleRepeating(id: "poll", every: .seconds(1)) { tick in
        if done { timers.cancel(tick.handle) }  // from its own handler: this timer, exactly
    }
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #4
func semanticsIdleTimeouts(timers: PreciseTimer) async throws {
    // on every request, first or not, from any thread:
    let created = try timers.scheduleOrReschedule(id: TimerID(session.id), after: .seconds(30)) { _ in
        store.expire(session.id)
    }
    if created { store.open(session.id) }   // a new session, or the old one had already expired
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #5
func semanticsCompat(timers: PreciseTimer) async throws {
    let name = timers.execTask({ poll() }, start: 0, interval: 0.5, repeats: true, async: true)  // String?
    timers.cancelTask(name)
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #6
func semanticsErrors(timers: PreciseTimer) async throws {
    do {
        try timers.schedule(id: "heartbeat", after: .seconds(1)) { _ in }
    } catch let error as PreciseTimerError where error.code == .duplicateID {
        print(error)   // PreciseTimerError.duplicateID, id: "heartbeat"
    }
    let delay = try Duration.checkedSeconds(config.double("retry"))   // NaN or -1 throws .invalidDelay
    _ = delay
}

// Sources/PreciseTimer/PreciseTimer.docc/TimerSemantics.md #7
func semanticsLifetime(timers: PreciseTimer) async throws {
    // 1. Weak target: the timer holds the poller weakly and hands it to the action; once the poller
    //    is gone, the timer cancels itself at its next fire.
    try timers.scheduleRepeating(every: .seconds(1), target: poller) { poller, tick in poller.poll() }

    // 2. Token: the owner stores it; when the owner deallocates, the token's deinit cancels the timer
    //    at once (not at the next fire). The handler must not capture the owner strongly.
    final class Cache: Sendable {
        private let evictor: TimerToken
        init(timers: PreciseTimer, store: Store) throws {
            evictor = try timers.scheduleTimer(.every(.seconds(60))) { _ in store.evictExpired() }
                .token(on: timers)
        }
    }

    // 3. Explicit cancel: keep the ID and cancel it when you are done.
    let id = try timers.scheduleRepeating(every: .seconds(1)) { [weak poller] _ in poller?.poll() }
    timers.cancel(id)
}

// Sources/PreciseTimer/PreciseTimer.docc/WallClockAndCalendarTimers.md #1
func wallClockOverview() async throws {
    let timers = try PreciseTimer()

    // The nightly backup, at 03:00 Berlin time, whatever the machine's zone:
    try timers.scheduleRepeating(id: "backup", on: try CalendarSchedule("*-*-* 03:00 Europe/Berlin")) { tick in
        runBackup(for: tick.wallClockDeadline!)
    }

    // A VPN key rotation every 6 hours that still happens after the laptop slept:
    try timers.scheduleRepeating(id: "rotate", every: .seconds(6 * 3600), options: .init(clock: .continuous)) { _ in
        rotateKeys()
    }

    // Once, at an instant on the wall clock:
    try timers.schedule(atWallClock: certificate.notAfter.advanced(by: .seconds(-86_400))) { _ in renew() }
}

// Sources/PreciseTimer/PreciseTimer.docc/WallClockAndCalendarTimers.md #2
func wallClockVirtualTime() async throws {
    let timers = TestTimerService(wallClock: midnight)
    try timers.scheduleRepeating(on: try CalendarSchedule("*-*-* 03:00 UTC")) { _ in backups += 1 }
    try timers.advance(by: .seconds(3 * 3600))        // 03:00: one backup
    timers.setWallClock(to: midnight)                 // NTP steps back three hours: nothing fires again
    timers.suspend(for: .seconds(3 * 86_400))     // asleep three days: one call at resume, missed == 1
}

// Sources/PreciseTimerCalendar/PreciseTimerCalendar.docc/PreciseTimerCalendar.md #1
func calendarLandingPage() async throws {
    let timers = try PreciseTimer()
    try timers.scheduleRepeating(id: "backup", on: try CalendarSchedule("Mon..Fri 03:00 Europe/Berlin")) { tick in
        backup(tick.wallClockDeadline!)
    }
}

// Sources/PreciseTimerCalendar/PreciseTimerCalendar.docc/ReplacingSystemdTimersAndCron.md #1
func replacingCronLogrotate() async throws {
    let unit = try TimerUnit("""
        [Unit]
        Description=Daily rotation of log files
        Documentation=man:logrotate(8) man:logrotate.conf(5)

        [Timer]
        OnCalendar=daily
        AccuracySec=1h
        Persistent=true

        [Install]
        WantedBy=timers.target
        """)
    let timers = try PreciseTimer()
    let stamps = try DirectoryTimerStateStore(directory: "/var/lib/my-daemon/timers")
    try timers.schedule(unit: unit, id: "logrotate.timer", store: stamps) { tick in
        await rotateLogs(for: tick.wallClockDeadline)    // the midnight this run answers
    }
    print(TimerListing.table(timers.listTimers()))       // NEXT LEFT LAST PASSED UNIT
}

// Sources/PreciseTimerCalendar/PreciseTimerCalendar.docc/ReplacingSystemdTimersAndCron.md #2
func replacingCronDaylightSaving() throws {
    let berlin = try CalendarSchedule("*-*-* 02:30 Europe/Berlin")
    let saturdayNoon = WallClockInstant(nanosecondsSinceEpoch: 1_806_148_800_000_000_000)  // 2027-03-27T12:00Z
    let next = berlin.next(after: saturdayNoon)   // 2027-03-29T00:30Z: the 28th has no 02:30
    _ = next
}

// Sources/PreciseTimerTesting/TestTimerService.swift, the type's doc comment (not drift-checked)
func testTimerServiceDocComment() async throws {
    let timers = TestTimerService()
    let session = Session(timers: timers, idleTimeout: .seconds(30))
    try timers.advance(by: .seconds(29))   // throws only for a negative or too long duration
    #expect(!session.isExpired)
    try timers.advance(by: .seconds(1))
    #expect(session.isExpired)
}
