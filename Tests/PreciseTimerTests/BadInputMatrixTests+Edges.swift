import Dispatch
import PreciseTimer
import PreciseTimerCompat
import PreciseTimerTesting
import Testing

extension BadInputMatrixTests {
    @Test("odd and very long IDs are valid: they schedule, fire and cancel", arguments: Implementation.allCases)
    func oddIDs(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ids: [TimerID] = [
            "e\u{301}", "🧪⏱️", "שָׁלוֹם", "a\u{0}b", "\u{200B}", "\u{FEFF}", " ", "\n", "\u{FFFD}",
            "👩‍👩‍👧‍👦", String(repeating: "x", count: 100_000).asID, String(repeating: "é", count: 50_000).asID,
            "timer-", "timer-1a", "Timer-1", "timer--1", "timer-١",
        ]
        let fired = Recorder<TimerID>()
        for id in ids {
            // None fires before the registry is inspected, however slow the machine (a sanitizer
            // build hashing 100 000-character IDs); `reschedule` then makes them all due.
            try timers.schedule(id: id, after: .seconds(600)) { fired.append($0.id) }
        }
        // IDs compare as Swift strings, by canonical equivalence: precomposed "é" is the same ID.
        try timers.schedule(id: "cafe\u{301}", after: .seconds(3_600)) { _ in }
        #expect { try timers.schedule(id: "caf\u{E9}", after: .seconds(1)) { _ in } } throws: {
            ($0 as? PreciseTimerError)?.code == .duplicateID
        }
        #expect(timers.cancel("caf\u{E9}"))
        #expect(Set(timers.scheduledIDs) == Set(ids))
        for id in ids {
            #expect(try timers.reschedule(id, after: .zero))
        }
        let received = await fired.wait(forCount: ids.count)
        #expect(Set(received) == Set(ids))
        #expect(received.count == ids.count, "a one-shot fired twice")
        #expect(await fired.wait(timeout: .seconds(5)) { _ in timers.scheduledIDs.isEmpty })
        let long = String(repeating: "y", count: 100_000).asID
        try timers.scheduleRepeating(id: long, every: .seconds(60)) { _ in }
        #expect(timers.isScheduled(long))
        #expect(timers.cancel(long))
        #expect(!timers.cancel(long))
        #expect(timers.execTask({}, start: 60, interval: 0, repeats: false, async: false) != nil)
    }

    @Test(
        "cancel of an ID that already fired is false, and the ID is free again",
        arguments: Implementation.allCases)
    func cancelAfterFiring(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let fired = Recorder<TimerID>()
        try timers.schedule(id: "once", after: .zero) { fired.append($0.id) }
        let generatedHandle = try timers.scheduleTimer(.after(.zero)) { fired.append($0.id) }
        let generated = generatedHandle.id
        let task = timers.execTask({ fired.append("task") }, start: 0, interval: 0, repeats: false, async: false)
        #expect(task != nil)
        await fired.wait(forCount: 3)
        #expect(await fired.wait(timeout: .seconds(5)) { _ in timers.scheduledIDs.isEmpty })
        #expect(!timers.cancel("once"))
        #expect(!timers.cancel(generated))
        #expect(!generatedHandle.token(on: timers).cancel())
        timers.cancelTask(task)
        #expect(!timers.isScheduled("once"))
        try timers.schedule(id: "once", after: .seconds(3_600)) { _ in }
        #expect(timers.scheduledIDs == ["once"])
        await pause(Bounds.quiet)
        #expect(fired.count == 3, "a fired one-shot ran again")
    }

    @Test(
        "every call after shutdown: schedules throw .shutDown, the rest are no-ops",
        arguments: Implementation.untimed)
    func afterShutdown(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        let handle = try timers.scheduleTimer(.after(.seconds(60)), id: "named") { _ in }
        let id = handle.id
        let token = handle.token(on: timers)
        timers.shutdown()
        timers.shutdown()
        let target = Canary()
        let calls: [(String, () throws -> TimerID)] = [
            ("schedule", { try timers.schedule(after: .zero) { _ in } }),
            ("schedule with an ID", { try timers.schedule(id: "x", after: .zero) { _ in } }),
            ("schedule with the cancelled ID", { try timers.schedule(id: id, after: .zero) { _ in } }),
            ("scheduleRepeating", { try timers.scheduleRepeating(every: .seconds(1)) { _ in } }),
            ("weak-target schedule", { try timers.schedule(after: .zero, target: target) { _, _ in } }),
            (
                "weak-target scheduleRepeating",
                { try timers.scheduleRepeating(every: .seconds(1), target: target) { _, _ in } }
            ),
        ]
        for (name, call) in calls {
            let error = #expect(throws: PreciseTimerError.self, "\(name)") { try call() }
            #expect(error?.code == .shutDown, "\(name)")
        }
        #expect(timers.execTask({}, start: 0, interval: 0, repeats: false, async: false) == nil)
        #expect(
            timers.execTask(target: target, action: { _ in }, start: 0, interval: 1, repeats: true, async: true) == nil)
        #expect(!timers.cancel(id))
        #expect(!token.cancel())
        timers.cancelAll()
        timers.cancelTask(id.rawValue)
        #expect(!timers.isScheduled(id))
        #expect(timers.scheduledIDs.isEmpty)
        timers.shutdown()
    }

    @Test(
        "shutdown from a handler, on either executor, twice: returns, then every schedule throws",
        arguments: Implementation.allCases, [false, true])
    func shutdownFromHandler(_ implementation: Implementation, onQueue: Bool) async throws {
        let timers = try implementation.make()
        let outcome = Recorder<String>()
        let options = TimerOptions(executor: onQueue ? .queue(DispatchQueue(label: "shutdown-handler")) : .loop)
        try timers.scheduleRepeating(every: .milliseconds(50)) { _ in }
        try timers.schedule(after: .milliseconds(5), options: options) { _ in
            timers.shutdown()
            timers.shutdown()
            do {
                try timers.schedule(after: .zero) { _ in }
                outcome.append("scheduled after shutdown")
            } catch {
                outcome.append((error as? PreciseTimerError)?.code.description ?? "\(error)")
            }
        }
        #expect(await outcome.wait(forCount: 1, timeout: .seconds(10)) == ["shutDown"], "deadlocked or accepted")
        #expect(timers.scheduledIDs.isEmpty)
        timers.shutdown()
    }

    @Test("shutdown from two threads at once, twice each, returns everywhere", arguments: Implementation.allCases)
    func concurrentShutdown(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        for _ in 0..<100 { try timers.scheduleRepeating(every: .milliseconds(1), Self.handler(canary!)) }
        canary = nil
        let returned = Recorder<Int>()
        detachThread {
            runOnThreads(2) { thread in
                timers.shutdown()
                timers.shutdown()
                returned.append(thread)
            }
        }
        #expect(await returned.wait(forCount: 2, timeout: .seconds(10)).count == 2)
        #expect(timers.scheduledIDs.isEmpty)
        #expect(await returned.wait(timeout: .seconds(5)) { _ in probe.isReleased }, "a handler outlived shutdown")
        #expect { try timers.schedule(after: .zero) { _ in } } throws: {
            ($0 as? PreciseTimerError)?.code == .shutDown
        }
    }
}
