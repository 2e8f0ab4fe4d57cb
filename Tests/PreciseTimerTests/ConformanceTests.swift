import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerCompat
import Synchronization
import Testing

/// The same scenarios against `PreciseTimer` and `DispatchReferenceTimer`: what must hold for
/// both. Timing asserts are one-sided (never early) with generous upper bounds.
@Suite("Conformance")
struct ConformanceTests {
    @Test("a one-shot fires once, never early, and is removed", arguments: Implementation.allCases)
    func oneShot(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let before = MonotonicInstant.now()
        let id = try timers.schedule(after: .milliseconds(20)) { ticks.append($0) }
        // Still registered, unless this thread lost its core past the deadline and it fired.
        let scheduled = timers.isScheduled(id)
        #expect(scheduled || MonotonicInstant.now() - before >= .milliseconds(20))
        let tick = try #require(await ticks.wait(forCount: 1).first)
        #expect(tick.id == id && tick.count == 1 && tick.missed == 0)
        #expect(tick.scheduledAt - before >= .milliseconds(20))
        #expect(tick.firedAt >= tick.scheduledAt)
        #expect(tick.lateness < Bounds.lateness)
        await pause(Bounds.quiet)
        #expect(ticks.count == 1)
        #expect(!timers.isScheduled(id))
        #expect(!timers.cancel(id))
    }

    @Test(
        "a zero delay fires as soon as possible: deadline now, ahead of any later timer",
        arguments: Implementation.allCases)
    func zeroDelay(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let order = Recorder<Tick>()
        // Scheduled first, due later: a service that delayed `.zero` by even 20 ms would fire
        // it second.
        let beforeLater = timers.now
        try timers.schedule(id: "later", after: .milliseconds(20)) { order.append($0) }
        let before = timers.now
        try timers.schedule(id: "zero", after: .zero) { order.append($0) }
        let after = timers.now
        let ticks = await order.wait(forCount: 2)
        if after - beforeLater < .milliseconds(20) {
            #expect(ticks.map(\.id) == ["zero", "later"])
        } else {
            // This thread lost its core for 20 ms between the two calls (a loaded machine, a
            // sanitizer): "later" was due before "zero" was scheduled, and may rightly fire first.
            #expect(Set(ticks.map(\.id)) == ["zero", "later"])
        }
        let zero = try #require(ticks.first { $0.id == "zero" })
        #expect(zero.scheduledAt >= before && zero.scheduledAt <= after, "the deadline is the instant of the call")
        #expect(zero.firedAt >= zero.scheduledAt)
    }

    @Test("repeating: counts 1, 2, 3… on the grid, never early", arguments: Implementation.allCases)
    func repeating(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ticks = Recorder<Tick>()
        let id = try timers.scheduleRepeating(every: .milliseconds(5)) { ticks.append($0) }
        let values = Array(await ticks.wait(forCount: 20).prefix(20))
        timers.cancel(id)
        #expect(values.map(\.count) == Array(1...20))
        let first = try #require(values.first).scheduledAt
        for tick in values {
            #expect(tick.firedAt >= tick.scheduledAt)
            #expect(tick.lateness < Bounds.lateness)
            // On the grid start + k·interval, whatever was skipped.
            #expect((tick.scheduledAt.nanoseconds - first.nanoseconds) % 5_000_000 == 0)
        }
        let periods = zip(values, values.dropFirst()).map { ($1.scheduledAt - $0.scheduledAt) / .milliseconds(5) }
        #expect(zip(periods, values.dropFirst()).allSatisfy { $0 == Double($1.missed + 1) })
    }

    @Test("timers fire by deadline, and in scheduling order at equal delays", arguments: Implementation.allCases)
    func ordering(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let order = Recorder<Tick>()
        let start = timers.now
        for (name, delay) in [("30", 30), ("10", 10), ("20", 20)] {
            try timers.schedule(id: TimerID(name), after: .milliseconds(delay)) { order.append($0) }
        }
        let scheduled = timers.now
        let ticks = await order.wait(forCount: 3)
        // Always: by deadline, whatever the three calls' own delays made those deadlines.
        #expect(ticks.map(\.scheduledAt) == ticks.map(\.scheduledAt).sorted())
        if scheduled - start < .milliseconds(10) {
            // The calls took less than the deadlines' spacing: the order of the delays.
            #expect(ticks.map(\.id) == ["10", "20", "30"])
        }

        let same = Recorder<Int>()
        for index in 0..<300 {
            try timers.schedule(after: .milliseconds(30)) { _ in same.append(index) }
        }
        #expect(await same.wait(forCount: 300) == Array(0..<300))
    }

    @Test(
        "cancel: true once, then false; the handler never starts after it returns",
        arguments: Implementation.allCases)
    func cancelGuarantee(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let calls = Atomic<Int>(0)
        let ticks = Recorder<UInt64>()
        let id = try timers.scheduleRepeating(every: .milliseconds(1)) { tick in
            calls.add(1, ordering: .sequentiallyConsistent)
            ticks.append(tick.count)
        }
        await ticks.wait(forCount: 3)
        // Hold the loop in another `.loop` handler: the repeating timer (same executor, never in
        // parallel with it) cannot have a call in flight, and falls due meanwhile. So no call at
        // all may follow `cancel`: not even one excused as "already begun".
        let gate = DispatchSemaphore(value: 0)
        let holding = Recorder<Bool>()
        try timers.schedule(after: .zero) { _ in
            holding.append(true)
            gate.wait()
        }
        await holding.wait(forCount: 1)
        let before = calls.load(ordering: .sequentiallyConsistent)
        usleep(5_000)  // Several periods pass: the timer is due when the loop is released.
        #expect(timers.cancel(id))
        gate.signal()
        #expect(!timers.cancel(id))
        #expect(!timers.isScheduled(id))
        await pause(Bounds.quiet)
        #expect(calls.load(ordering: .sequentiallyConsistent) == before, "a call began after cancel returned")
    }

    @Test(
        "shutdown from a handler does not deadlock, and refuses new timers after",
        arguments: Implementation.allCases)
    func shutdownFromHandler(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let done = Recorder<Bool>()
        try timers.scheduleRepeating(every: .milliseconds(50)) { _ in }
        try timers.schedule(after: .milliseconds(5)) { _ in
            timers.shutdown()
            timers.shutdown()
            done.append(true)
        }
        await done.wait(forCount: 1)
        #expect(timers.scheduledIDs.isEmpty)
        #expect(throws: PreciseTimerError.self) { try timers.schedule(after: .zero) { _ in } }
        do {
            try timers.schedule(id: "late", after: .zero) { _ in }
        } catch let error as PreciseTimerError {
            #expect(error.code == .shutDown)
            #expect(error.id == "late")
        }
        timers.shutdown()
    }

    @Test(
        "generated IDs stay unique across cancels; explicit IDs are reusable once ended",
        arguments: Implementation.allCases)
    func idUniqueness(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var seen = Set<TimerID>()
        for _ in 0..<200 {
            let id = try timers.schedule(after: .seconds(3_600)) { _ in }
            #expect(seen.insert(id).inserted, "\(id) was handed out twice")
            timers.cancel(id)
        }
        // A generated name cannot be taken explicitly, live or ended.
        #expect(throws: PreciseTimerError(.reservedID, id: seen.first!)) {
            try timers.schedule(id: seen.first!, after: .seconds(1)) { _ in }
        }
        let live = try timers.schedule(id: "live", after: .seconds(3_600)) { _ in }
        #expect(throws: PreciseTimerError(.duplicateID, id: live)) {
            try timers.schedule(id: live, after: .seconds(1)) { _ in }
        }
        timers.cancel(live)
        try timers.schedule(id: live, after: .seconds(3_600)) { _ in }
        #expect(timers.isScheduled(live))
    }

    @Test("bad input throws a typed error and registers nothing", arguments: Implementation.allCases)
    func badInput(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let tooLong = PreciseTimer.maximumDuration + .nanoseconds(1)
        let cases: [(PreciseTimerError.Code, () throws -> Void)] = [
            (.invalidDelay, { try timers.schedule(after: .milliseconds(-1)) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: tooLong) { _ in } }),
            (.invalidDelay, { try timers.scheduleRepeating(every: .seconds(1), startingAfter: .seconds(-1)) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: .zero) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: .nanoseconds(-5)) { _ in } }),
            (.invalidInterval, { try timers.scheduleRepeating(every: tooLong) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: Duration.checkedSeconds(.nan)) { _ in } }),
            (.invalidDelay, { try timers.schedule(after: Duration.checkedSeconds(-.infinity)) { _ in } }),
            (.emptyID, { try timers.schedule(id: "", after: .seconds(1)) { _ in } }),
        ]
        for (code, call) in cases {
            #expect { try call() } throws: { ($0 as? PreciseTimerError)?.code == code }
        }
        #expect(timers.scheduledIDs.isEmpty)
        #expect(timers.execTask({}, start: .nan, interval: 0, repeats: false, async: false) == nil)
        #expect(timers.scheduledIDs.isEmpty)
    }

}
