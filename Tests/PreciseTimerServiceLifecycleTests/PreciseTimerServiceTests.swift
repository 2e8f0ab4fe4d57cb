import Dispatch
import InMemoryLogging
import Logging
import PreciseTimer
import PreciseTimerServiceLifecycle
import PreciseTimerTesting
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

@Suite("PreciseTimer as a swift-service-lifecycle Service")
struct PreciseTimerServiceTests {
    /// Schedules a `.loop` repeating timer, a far one-shot and a `.queue` one-shot, each holding
    /// its own canary, and returns probes on the canaries.
    private func scheduleCanaries(on timers: PreciseTimer, fired: Events) throws -> [WeakProbe<Canary>] {
        var probes: [WeakProbe<Canary>] = []
        do {
            let canary = Canary()
            probes.append(WeakProbe(canary))
            try timers.scheduleRepeating(id: "repeating", every: .milliseconds(2)) { _ in
                withExtendedLifetime(canary) { fired.append("repeating") }
            }
        }
        do {
            let canary = Canary()
            probes.append(WeakProbe(canary))
            try timers.schedule(id: "far", after: .seconds(3600)) { _ in withExtendedLifetime(canary) {} }
        }
        do {
            let canary = Canary()
            probes.append(WeakProbe(canary))
            let queue = DispatchQueue(label: "PreciseTimerServiceTests.queue")
            try timers.scheduleRepeating(
                id: "queued", every: .milliseconds(3), options: TimerOptions(executor: .queue(queue))
            ) { _ in withExtendedLifetime(canary) {} }
        }
        return probes
    }

    @Test("run() keeps the timers running until graceful shutdown, then ends every timer and returns")
    func gracefulShutdownEndsTheService() async throws {
        let timers = try PreciseTimer()
        let fired = Events()
        let probes = try self.scheduleCanaries(on: timers, fired: fired)

        try await testGracefulShutdown { trigger in
            let ended = Events()
            let running = Task {
                await timers.run()
                ended.append("run returned")
            }
            // Running: the timers fire and the service accepts new ones.
            #expect(await fired.wait { $0.count >= 3 })
            try await Task.sleep(for: .milliseconds(20))
            #expect(ended.values.isEmpty, "run() returned before graceful shutdown")
            #expect(!schedulingFailsWithShutDown(timers))

            trigger.triggerGracefulShutdown()
            #expect(await finishes(running, within: .seconds(180)))
            #expect(ended.values == ["run returned"])
        }

        #expect(probes.allSatisfy { $0.isReleased }, "a handler outlived the service")
        #expect(timers.scheduledCount == 0)
        #expect(schedulingFailsWithShutDown(timers))
        let firesAtShutdown = fired.values.count
        try await Task.sleep(for: .milliseconds(20))
        #expect(fired.values.count == firesAtShutdown, "a handler ran after run() returned")
    }

    @Test("run() does not throw, seen as `any Service` as a ServiceGroup sees it")
    func runDoesNotThrow() async throws {
        let timers = try PreciseTimer()
        await testGracefulShutdown { trigger in
            trigger.triggerGracefulShutdown()
            let service: any Service = timers
            do {
                try await service.run()
            } catch {
                Issue.record("run() threw \(error)")
            }
        }
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("Task cancellation ends run() the same way")
    func cancellationEndsTheService() async throws {
        let timers = try PreciseTimer()
        let fired = Events()
        let probes = try self.scheduleCanaries(on: timers, fired: fired)

        let running = Task { await timers.run() }
        #expect(await fired.wait { $0.count >= 3 })
        running.cancel()
        #expect(await finishes(running, within: .seconds(180)))

        #expect(probes.allSatisfy { $0.isReleased }, "a handler outlived the service")
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("run() in a task cancelled before it starts ends the service at once")
    func alreadyCancelled() async throws {
        let timers = try PreciseTimer()
        let running = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await timers.run()
        }
        #expect(await finishes(running, within: .seconds(180)))
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("run() ends a service with 100 000 pending timers and releases them all")
    func shutdownAtScale() async throws {
        let timers = try PreciseTimer()
        let canary = Canary()
        let probe = WeakProbe(canary)
        for index in 0..<100_000 {
            try timers.schedule(id: TimerID("t\(index)"), after: .seconds(3600)) { _ in
                withExtendedLifetime(canary) {}
            }
        }
        _ = consume canary
        await testGracefulShutdown { trigger in
            let running = Task { await timers.run() }
            trigger.triggerGracefulShutdown()
            #expect(await finishes(running, within: .seconds(180)))
        }
        #expect(timers.scheduledCount == 0)
        #expect(probe.isReleased)
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("run() returns after a direct shutdown(), from another thread or from a handler", arguments: [false, true])
    func directShutdownEndsRun(fromHandler: Bool) async throws {
        let timers = try PreciseTimer()
        let fired = Events()
        try timers.scheduleRepeating(id: "beat", every: .milliseconds(2)) { _ in fired.append("beat") }
        let running = Task { await timers.run() }
        #expect(await fired.wait { $0.count >= 2 })
        if fromHandler {
            try timers.schedule(id: "stop", after: .zero) { _ in timers.shutdown() }
        } else {
            // shutdown() joins the loop thread: a thread of its own, not this task's.
            detachThread { timers.shutdown() }
        }
        #expect(await finishes(running, within: .seconds(180)))
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("run() already shut down returns at once")
    func alreadyShutDown() async throws {
        let timers = try PreciseTimer()
        await timers.shutdown(gracePeriod: .seconds(60))
        let running = Task { await timers.run() }
        #expect(await finishes(running, within: .seconds(180)))
    }

    @Test("On graceful shutdown, run() waits for a .queue handler in flight before it returns")
    func gracefulShutdownDrainsHandlers() async throws {
        let timers = try PreciseTimer()
        let events = Events()
        let release = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "PreciseTimerServiceTests.drain")
        try timers.schedule(id: "slow", after: .zero, options: TimerOptions(executor: .queue(queue))) { _ in
            events.append("handler started")
            _ = release.wait(timeout: .now() + .seconds(600))
            events.append("handler returned")
        }
        #expect(await events.wait { $0.contains("handler started") })
        await testGracefulShutdown { trigger in
            let running = Task {
                await timers.run()
                events.append("run returned")
            }
            trigger.triggerGracefulShutdown()
            try? await Task.sleep(for: .milliseconds(50))
            #expect(!events.values.contains("run returned"), "run() returned while a handler ran")
            release.signal()
            #expect(await finishes(running, within: .seconds(180)))
        }
        #expect(events.values == ["handler started", "handler returned", "run returned"])
    }

    @Test("A handler still running when the grace period ends: run() logs a warning and returns")
    func gracePeriodExceededIsLogged() async throws {
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in handler })
        let timers = try PreciseTimer(
            configuration: .init(logger: logger, shutdownGracePeriod: .milliseconds(20)))
        let events = Events()
        let release = DispatchSemaphore(value: 0)
        // On the service's own loop thread, not a Dispatch queue: a blocked queue would hold one
        // of the few threads Swift concurrency shares with Dispatch here, and starve the tests.
        try timers.schedule(id: "stuck", after: .zero) { _ in
            events.append("handler started")
            _ = release.wait(timeout: .now() + .seconds(600))
        }
        #expect(await events.wait { $0.contains("handler started") })
        await testGracefulShutdown { trigger in
            let running = Task { await timers.run() }
            trigger.triggerGracefulShutdown()
            #expect(await finishes(running, within: .seconds(180)), "run() waits no longer than the grace period")
        }
        release.signal()
        // (The handler also logs a stall warning when it returns: it held the loop thread.)
        let graceWarnings = handler.entries.filter {
            $0.level == .warning
                && $0.message.description == "Timer handlers still running after the shutdown grace period"
        }
        #expect(graceWarnings.count == 1)
    }

    @Test("defect 2: idle services shut down with a zero grace period log no warning")
    func idleServicesLogNothing() async throws {
        let handler = InMemoryLogHandler()
        let logger = Logger(label: "test", factory: { _ in handler })
        for _ in 0..<50 {
            let timers = try PreciseTimer(configuration: .init(logger: logger, shutdownGracePeriod: .zero))
            try timers.schedule(after: .seconds(3_600)) { _ in }
            await testGracefulShutdown { trigger in
                let running = Task { await timers.run() }
                trigger.triggerGracefulShutdown()
                #expect(await finishes(running, within: .seconds(180)))
            }
        }
        #expect(handler.entries.filter { $0.level >= .warning }.isEmpty)
    }

    /// A daemon's own service: on graceful shutdown it still uses the timer service (a last
    /// timer, as a session flush would), then records that it ended.
    private struct Flusher: Service {
        let timers: PreciseTimer
        let events: Events

        func run() async {
            try? await gracefulShutdown()
            let flushed = Events()
            do {
                try self.timers.schedule(after: .milliseconds(1)) { _ in flushed.append("fired") }
                let fired = await flushed.wait(timeout: .seconds(10)) { !$0.isEmpty }
                self.events.append(fired ? "flusher: last timer fired" : "flusher: last timer never fired")
            } catch {
                self.events.append("flusher: \(error)")
            }
            self.events.append("flusher stopped")
        }
    }

    /// The timer service, recording when its `run()` returns.
    private struct RecordingTimers: Service {
        let timers: PreciseTimer
        let events: Events

        func run() async {
            await self.timers.run()
            self.events.append("timers stopped")
        }
    }

    private func runGroup(_ services: [any Service]) async throws {
        let group = ServiceGroup(
            services: services, gracefulShutdownSignals: [], cancellationSignals: [],
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let run = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(20))
        await group.triggerGracefulShutdown()
        try await run.value
    }

    @Test("issue 21 defect 11 (guard): a graceful shutdown asked for at any moment of a group's start ends it")
    func gracefulShutdownDuringStart() async throws {
        let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        for index in 0..<300 {
            // The issue's shape: two timer services in one group, asked to stop before, while and
            // after their run() begins.
            let services = try (0..<2).map { _ in try PreciseTimer(configuration: .init(shutdownGracePeriod: .zero)) }
            let group = ServiceGroup(
                services: services, gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
            let running = Task { _ = try? await group.run() }
            for _ in 0..<(index % 8) { await Task.yield() }
            if index % 3 == 0 { try await Task.sleep(for: .microseconds(index % 400)) }
            await group.triggerGracefulShutdown()
            #expect(await finishes(running, within: .seconds(180)), "run \(index) missed its graceful shutdown")
            #expect(services.allSatisfy { schedulingFailsWithShutDown($0) })
        }
    }

    @Test("In a ServiceGroup, timers listed first stop last: the daemon's services can still use them")
    func serviceGroupStopsInReverseOrder() async throws {
        let timers = try PreciseTimer()
        let events = Events()
        try await self.runGroup([
            RecordingTimers(timers: timers, events: events), Flusher(timers: timers, events: events),
        ])
        #expect(events.values == ["flusher: last timer fired", "flusher stopped", "timers stopped"])
        #expect(schedulingFailsWithShutDown(timers))
    }

    @Test("Listed after the services that use them, the timers are gone when those shut down")
    func serviceGroupWrongOrder() async throws {
        let timers = try PreciseTimer()
        let events = Events()
        try await self.runGroup([
            Flusher(timers: timers, events: events), RecordingTimers(timers: timers, events: events),
        ])
        let shutDown = PreciseTimerError.Code.shutDown
        #expect(events.values.first == "timers stopped")
        #expect(events.values.contains { $0.hasPrefix("flusher: ") && $0.contains("\(shutDown)") })
    }
}
