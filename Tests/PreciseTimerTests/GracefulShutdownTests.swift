import Dispatch
import PreciseTimer
import PreciseTimerTesting
import Testing

/// `shutdown(gracePeriod:)`: ends every timer, then waits for the handlers in flight, bounded.
///
/// The handlers here block their own thread (a Dispatch worker, or the loop thread) on a
/// semaphore the test signals, always explicitly: no test here depends on time passing on a free
/// pool (a cap of 10 minutes only keeps a broken test from hanging the run forever); the
/// test itself only awaits.
@Suite("Graceful shutdown")
struct GracefulShutdownTests {
    /// A handler that reports it started, then blocks until the test releases it.
    private final class Blocker: Sendable {
        let log: Recorder<String>
        private let release = DispatchSemaphore(value: 0)

        init(_ log: Recorder<String>) { self.log = log }

        func run() {
            self.log.append("handler started")
            _ = self.release.wait(timeout: .now() + .seconds(600))
            self.log.append("handler returned")
        }

        func finish() { self.release.signal() }
    }

    /// A service whose one handler has started and blocks until `finish()`, on a queue or on the loop.
    private static func blockedHandler(onQueue: Bool) async throws -> (PreciseTimer, Recorder<String>, Blocker) {
        let timers = try PreciseTimer()
        let log = Recorder<String>()
        let blocker = Blocker(log)
        let options = onQueue ? TimerOptions(executor: .queue(DispatchQueue(label: "graceful"))) : TimerOptions()
        try timers.schedule(id: "slow", after: .zero, options: options) { _ in blocker.run() }
        #expect(await log.wait { $0.contains("handler started") })
        return (timers, log, blocker)
    }

    @Test("waits for a running handler, .queue or .loop, then returns true", arguments: [true, false])
    func waitsForRunningHandler(onQueue: Bool) async throws {
        let (timers, log, blocker) = try await Self.blockedHandler(onQueue: onQueue)

        let shutdown = Task {
            let drained = await timers.shutdown(gracePeriod: .seconds(60))
            log.append("shutdown returned \(drained)")
        }
        // Timers end at once, before any waiting.
        #expect(await log.wait { _ in Self.schedulingFails(timers) })
        await pause(.milliseconds(50))
        #expect(!log.values.contains { $0.hasPrefix("shutdown returned") }, "returned while a handler ran")

        blocker.finish()
        await shutdown.value
        #expect(log.values == ["handler started", "handler returned", "shutdown returned true"])
    }

    @Test(
        "returns false once the grace period ends with a handler still running, .queue or .loop",
        arguments: [true, false])
    func gracePeriodEnds(onQueue: Bool) async throws {
        let (timers, log, blocker) = try await Self.blockedHandler(onQueue: onQueue)

        let start = ContinuousClock.now
        let drained = await timers.shutdown(gracePeriod: .milliseconds(100))
        let elapsed = ContinuousClock.now - start
        #expect(!drained)
        #expect(elapsed >= .milliseconds(100))
        // The bound is shown by the handler: it is still blocked (until `finish()` below, or its
        // 600 s timeout), so a wait the grace period did not end could not have returned yet.
        // The elapsed time also counts the wait for a cooperative thread to resume this test,
        // which under ThreadSanitizer, with the whole suite started at once on two cores, took
        // 20.6 s in CI: only a bound far below the blocker's timeout is asserted on it.
        #expect(!log.values.contains("handler returned"), "the grace period did not bound the wait")
        #expect(elapsed < .seconds(300), "the grace period did not bound the wait")
        #expect(Self.schedulingFails(timers))

        // Once the handler returns, a second call reports the service drained.
        blocker.finish()
        #expect(await timers.shutdown(gracePeriod: .seconds(60)))
        #expect(log.values.last == "handler returned")
    }

    @Test("a .queue fire still waiting in its queue is dropped, not waited for")
    func queuedFireIsDropped() async throws {
        let timers = try PreciseTimer()
        let log = Recorder<String>()
        let queue = DispatchQueue(label: "graceful.busy")
        let gate = DispatchSemaphore(value: 0)
        // Not a handler: something else of the daemon's keeps the queue busy.
        queue.async {
            log.append("queue busy")
            _ = gate.wait(timeout: .now() + .seconds(600))
        }
        #expect(await log.wait { $0.contains("queue busy") })
        try timers.schedule(id: "queued", after: .zero, options: .init(executor: .queue(queue))) { _ in
            log.append("handler ran")
        }
        // The fire is taken by the loop and waits behind the busy block (had it not been taken
        // yet, shutdown would cancel it all the same: the test cannot fail either way).
        await pause(.milliseconds(20))

        #expect(await timers.shutdown(gracePeriod: .seconds(60)))
        gate.signal()
        let drainedQueue = Recorder<String>()
        queue.async { drainedQueue.append("done") }
        #expect(await drainedQueue.wait { !$0.isEmpty })
        #expect(!log.values.contains("handler ran"))
    }

    @Test("with 100 000 timers pending, every handler is released and it returns true")
    func manyPending() async throws {
        let timers = try PreciseTimer()
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        for _ in 0..<100_000 {
            try timers.schedule(after: .seconds(3_600)) { [canary] _ in withExtendedLifetime(canary) {} }
        }
        canary = nil
        #expect(await timers.shutdown(gracePeriod: .seconds(60)))
        #expect(probe.isReleased)
        #expect(timers.scheduledCount == 0)
    }

    @Test("on a caller's base, from a task, it waits for the loop to take the events off")
    func callerBase() async throws {
        let log = Recorder<String>()
        let shared = SemaphoreGuarded<(timers: PreciseTimer?, loop: SocketLoop?, baseline: Int32)>((nil, nil, 0))
        SocketLoop.run(
            setUp: { loop in
                let baseline = loop.addedEvents
                do {
                    let timers = try PreciseTimer(eventBase: loop.base)
                    try timers.scheduleRepeating(id: "beat", every: .milliseconds(1)) { _ in }
                    shared.withLock { $0 = (timers, loop, baseline) }
                    log.append("ready")
                } catch {
                    log.append("init failed: \(error)")
                    loop.stop()
                }
            },
            onRead: { loop, _ in
                log.append("back to baseline: \(loop.addedEvents == shared.withLock { $0.baseline })")
                loop.stop()
            },
            tearDown: { _ in log.append("loop returned") })
        #expect(await log.wait { $0.contains("ready") || $0.contains { $0.hasPrefix("init failed") } })
        let (service, socketLoop, _) = shared.withLock { $0 }
        let timers = try #require(service)
        let loop = try #require(socketLoop)
        #expect(await timers.shutdown(gracePeriod: .seconds(60)))
        log.append("shutdown returned")
        loop.write(0)
        #expect(await log.wait { $0.contains("loop returned") })
        #expect(log.values == ["ready", "shutdown returned", "back to baseline: true", "loop returned"])
        shared.withLock { $0 = (nil, nil, 0) }
    }

    static func schedulingFails(_ timers: PreciseTimer) -> Bool {
        do {
            try timers.schedule(after: .seconds(1)) { _ in }
            return false
        } catch {
            return (error as? PreciseTimerError)?.code == .shutDown
        }
    }

    @Test("defect 2: an idle service drains at once: true for .zero and 20 µs, however busy the machine")
    func idleServicesDrain() async throws {
        for (count, grace) in [(100, Duration.zero), (200, .microseconds(20))] {
            var refused = 0
            for _ in 0..<count {
                let timers = try PreciseTimer()
                try timers.schedule(after: .seconds(3_600)) { _ in }  // pending, never running
                if await !timers.shutdown(gracePeriod: grace) { refused += 1 }
            }
            #expect(refused == 0, "\(refused) of \(count) idle services reported a running handler (grace \(grace))")
        }
    }

    @Test("defect 11: dropping the last reference on the cooperative pool never waits for a running .loop handler")
    func droppingNeverBlocks() async throws {
        var (timers, log, blocker): (PreciseTimer?, Recorder<String>, Blocker) = try await Self.blockedHandler(
            onQueue: false)
        let start = ContinuousClock.now
        timers = nil  // deinit here, on this task's thread, while the handler blocks the loop thread
        let elapsed = ContinuousClock.now - start
        #expect(timers == nil)
        #expect(elapsed < .seconds(5), "deinit waited \(elapsed) for the loop thread")
        #expect(!log.values.contains("handler returned"))
        blocker.finish()
        #expect(await log.wait { $0.contains("handler returned") })
    }
}
