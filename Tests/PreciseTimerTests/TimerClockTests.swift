import PreciseTimer
import PreciseTimerTesting
import Testing

/// ``TimerClock`` on both real services and on virtual time.
@Suite("Async: TimerClock", .timeLimit(.minutes(5)))
struct TimerClockTests {
    @Test("now is the service's now; minimumResolution is 1 ns", arguments: Implementation.untimed)
    func basics(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = timers.clock
        let before = timers.now
        let now = clock.now
        #expect(now >= before && now <= timers.now)
        #expect(clock.minimumResolution == .nanoseconds(1))
        #expect(clock.measure {} >= .zero)
    }

    @Test("sleep(until:) is never early and late by at most a generous bound", arguments: Implementation.allCases)
    func precision(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        for _ in 0..<3 {
            let deadline = timers.now.advanced(by: .milliseconds(20))
            try await timers.clock.sleep(until: deadline, tolerance: .seconds(1))
            let woke = timers.now
            #expect(woke >= deadline, "early by \(deadline - woke)")
            #expect(woke - deadline < resumptionBound)
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("Task.sleep(until:clock:) and Task.sleep(for:clock:) run on it", arguments: Implementation.allCases)
    func taskSleep(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let deadline = timers.now.advanced(by: .milliseconds(15))
        try await Task.sleep(until: deadline, tolerance: nil, clock: timers.clock)
        #expect(timers.now >= deadline)
        let before = timers.now
        try await Task.sleep(for: .milliseconds(15), clock: timers.clock)
        #expect(timers.now >= before.advanced(by: .milliseconds(15)))
        #expect(timers.now - before < .milliseconds(15) + resumptionBound)
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "a deadline in the past returns at once without scheduling; a cancelled task throws first",
        arguments: Implementation.untimed)
    func pastDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(-1)))
        try await timers.clock.sleep(until: timers.now)
        try await Task.sleep(for: .seconds(-5), clock: timers.clock)
        #expect(clock.now - start < resumptionBound)
        #expect(timers.scheduledCount == 0)
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(-1))) }
        }.value
        #expect(outcome == .cancelled)
    }

    @Test(
        "issue 21 defect 10: a deadline however far in the past returns at once; beyond maximumDuration ahead throws",
        arguments: Implementation.untimed)
    func farPastDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = ContinuousClock()
        let start = clock.now
        let justBeyond = timers.now.advanced(by: .zero - TestTimerService.maximumDuration - .nanoseconds(1))
        for deadline in [justBeyond, MonotonicInstant(nanoseconds: .min)] {
            try await timers.clock.sleep(until: deadline)
            try await timers.clock.sleep(until: deadline, tolerance: .seconds(1))
            try await Task.sleep(until: deadline, tolerance: nil, clock: timers.clock)
        }
        #expect(clock.now - start < resumptionBound)
        #expect(timers.scheduledCount == 0)
        // A cancelled task still hears about it first, as for any past deadline.
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await SleepOutcome { try await timers.clock.sleep(until: MonotonicInstant(nanoseconds: .min)) }
        }.value
        #expect(outcome == .cancelled)
        // The future stays bounded.
        for deadline in [
            timers.now.advanced(by: TestTimerService.maximumDuration + .seconds(1)),
            MonotonicInstant(nanoseconds: .max),
        ] {
            let error = await #expect(throws: PreciseTimerError.self) {
                try await timers.clock.sleep(until: deadline)
            }
            #expect(error?.code == .invalidDelay)
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test("on virtual time a sleep resumes exactly when advance passes its deadline")
    func virtualSleep() async throws {
        let timers = TestTimerService()
        let deadline = timers.now.advanced(by: .milliseconds(10))
        let woke = Recorder<MonotonicInstant>()
        let sleeper = Task {
            try await timers.clock.sleep(until: deadline)
            woke.append(timers.now)
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        try timers.advance(by: .milliseconds(9))
        await pause(Bounds.quiet)
        #expect(woke.count == 0, "woke before its deadline")
        try timers.advance(by: .milliseconds(1))
        try await sleeper.value
        #expect(woke.values == [deadline])
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "cancellation throws CancellationError promptly, long before the deadline, leaving nothing scheduled",
        arguments: Implementation.untimed)
    func cancellation(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let clock = ContinuousClock()
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) }
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        let cancelledAt = clock.now
        sleeper.cancel()
        #expect(await sleeper.value == .cancelled)
        #expect(clock.now - cancelledAt < resumptionBound, "not promptly: the deadline is 600 s away")
        #expect(timers.scheduledCount == 0, "cancelling the task must cancel its timer")
        // A task cancelled before it sleeps never schedules anything.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) }
        }
        #expect(await early.value == .cancelled)
        #expect(timers.scheduledCount == 0)
    }

    @Test("cancelling a sleep ends only its own timer", arguments: Implementation.untimed)
    func cancellationIsolated(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        try timers.schedule(id: "other", after: .seconds(600)) { _ in }
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) }
        }
        #expect(await eventually { timers.scheduledCount == 2 })
        sleeper.cancel()
        #expect(await sleeper.value == .cancelled)
        #expect(timers.isScheduled("other"))
        #expect(timers.scheduledCount == 1)
    }

    @Test("a service shut down before the sleep: .shutDown at once", arguments: Implementation.untimed)
    func shutDownBefore(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        timers.shutdown()
        let outcome = await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) }
        #expect(outcome == .shutDown)
        // A duration no stall outlasts: `Task.sleep(for:)` takes its deadline from `now` first, and
        // a deadline already passed returns at once, shut down or not (under AddressSanitizer a
        // 5 ms one passed while the suite starved this task, and the sleep returned).
        let forOutcome = await SleepOutcome { try await Task.sleep(for: .seconds(600), clock: timers.clock) }
        #expect(forOutcome == .shutDown)
    }

    @Test("a service shut down during the sleep ends it with .shutDown promptly", arguments: Implementation.untimed)
    func shutDownDuring(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        let clock = ContinuousClock()
        let sleepers = (0..<4).map { _ in
            Task { await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) } }
        }
        #expect(await eventually { timers.scheduledCount == 4 })
        let shutAt = clock.now
        timers.shutdown()
        for sleeper in sleepers {
            #expect(await sleeper.value == .shutDown)
        }
        #expect(clock.now - shutAt < resumptionBound, "not promptly: the deadline is 600 s away")
    }

    @Test(
        "a sleep with cancelAll during it ends with .shutDown (the timer was withdrawn), never hangs",
        arguments: Implementation.untimed)
    func cancelAllDuring(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let sleeper = Task {
            await SleepOutcome { try await timers.clock.sleep(until: timers.now.advanced(by: .seconds(600))) }
        }
        #expect(await eventually { timers.scheduledCount == 1 })
        timers.cancelAll()
        #expect(await sleeper.value == .shutDown)
    }

    @Test(
        "race: tiny deadlines cancelled at once, many times; each sleep ends exactly once, nothing stays",
        arguments: Implementation.allCases)
    func cancelRacesFire(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var counts: [SleepOutcome: Int] = [:]
        for index in 0..<1_500 {
            let sleeper = Task {
                await SleepOutcome {
                    try await timers.clock.sleep(until: timers.now.advanced(by: .microseconds(index % 40)))
                }
            }
            if index % 3 == 1 { await Task.yield() }
            if index % 3 == 2 { try? await Task.sleep(for: .microseconds(index % 50)) }
            sleeper.cancel()
            counts[await sleeper.value, default: 0] += 1
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 1_500)
        #expect(await eventually { timers.scheduledCount == 0 }, "a cancelled sleep left its timer")
    }

    @Test("race: fire (advance on another task) against cancel on virtual time, many times")
    func cancelRacesVirtualFire() async throws {
        let timers = TestTimerService()
        var counts: [SleepOutcome: Int] = [:]
        for index in 0..<1_000 {
            let deadline = timers.now.advanced(by: .nanoseconds(1))
            let sleeper = Task { await SleepOutcome { try await timers.clock.sleep(until: deadline) } }
            let advancer = Task.detached {
                for _ in 0..<(index % 4) { await Task.yield() }
                try timers.advance(by: .nanoseconds(1))
            }
            if index % 2 == 0 { await Task.yield() }
            sleeper.cancel()
            try await advancer.value
            counts[await sleeper.value, default: 0] += 1
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 1_000)
        #expect(await eventually { timers.scheduledCount == 0 })
    }

    @Test(
        "race: shutdown and cancellation against sleeps in flight; every sleep ends once, none hangs",
        arguments: Implementation.untimed)
    func shutdownRacesCancel(_ implementation: Implementation) async throws {
        var counts: [SleepOutcome: Int] = [:]
        for round in 0..<20 {
            let timers = try implementation.make()
            let sleepers = (0..<10).map { index in
                Task {
                    await SleepOutcome {
                        try await timers.clock.sleep(until: timers.now.advanced(by: .microseconds(index * 20)))
                    }
                }
            }
            if round % 2 == 0 { await Task.yield() }
            let shutter = Task.detached { timers.shutdown() }
            for (index, sleeper) in sleepers.enumerated() where index % 2 == round % 2 {
                sleeper.cancel()
            }
            await shutter.value
            for sleeper in sleepers {
                counts[await sleeper.value, default: 0] += 1
            }
        }
        #expect(Set(counts.keys).isSubset(of: [.returned, .cancelled, .shutDown]), "\(counts)")
        #expect(counts.values.reduce(0, +) == 200)
    }
}
