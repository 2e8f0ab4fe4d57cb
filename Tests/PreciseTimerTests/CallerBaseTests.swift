import CLibevent
import Glibc
import InMemoryLogging
import Logging
import PreciseTimer
import PreciseTimerTesting
import Testing

/// `PreciseTimer(eventBase:)`: the service on a libevent base that the caller creates and drives.
@Suite("A caller's event_base")
struct CallerBaseTests {
    private static func byte(_ character: Unicode.Scalar) -> UInt8 { UInt8(ascii: character) }

    @Test("a service on a caller's base logs through its configured logger, as one on its own thread does")
    func logsOnCallersBase() throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .debug
        let base = SocketLoop.preciseBase()
        defer { event_base_free(base) }
        let timers = try PreciseTimer(eventBase: base, configuration: .init(logger: logger))
        event_base_loop(base, EVLOOP_NONBLOCK)  // One pass: this thread is now known as the loop's.
        timers.shutdown()  // On the loop thread, between callbacks: the events go at once.
        #expect(handler.entries.map(\.message.description) == ["Timer service started", "Timer service shut down"])
        #expect(handler.entries.first?.metadata["timer.thread"] == "caller's event_base")
    }

    @Test(
        "timers and a socketpair read event on one caller-owned base are served in order, and shutdown leaves the I/O event working"
    )
    func servedInOrder() async throws {
        let log = Recorder<String>()
        let threads = Recorder<UInt>()
        let shared = SemaphoreGuarded<(timers: PreciseTimer?, loop: SocketLoop?, baseline: Int32)>((nil, nil, 0))
        SocketLoop.run(
            setUp: { loop in
                threads.append(currentThread())
                let baseline = loop.addedEvents
                do {
                    let timers = try PreciseTimer(eventBase: loop.base)
                    shared.withLock { $0 = (timers, loop, baseline) }
                    log.append("ready")
                } catch {
                    log.append("init failed: \(error)")
                    loop.stop()
                }
            },
            onRead: { loop, byte in
                threads.append(currentThread())
                log.append("io \(Character(Unicode.Scalar(byte)))")
                let (timers, _, baseline) = shared.withLock { $0 }
                switch byte {
                case Self.byte("x"):
                    // Scheduled on the loop thread, from an I/O callback.
                    _ = try? timers?.schedule(id: "B", after: .zero) { _ in
                        threads.append(currentThread())
                        log.append("timer B")
                        loop.write(Self.byte("y"))
                    }
                case Self.byte("y"):
                    let before = loop.addedEvents
                    timers?.shutdown()  // On the loop thread, outside the service's callbacks.
                    log.append("shutdown: \(before > baseline), back to baseline: \(loop.addedEvents == baseline)")
                    loop.write(Self.byte("z"))
                default:
                    loop.stop()
                }
            },
            tearDown: { _ in log.append("loop returned") })

        #expect(
            await log.wait(timeout: .seconds(60)) {
                $0.contains("ready") || $0.contains { $0.hasPrefix("init failed") }
            })
        let (service, socketLoop, _) = shared.withLock { $0 }
        let timers = try #require(service)
        let loop = try #require(socketLoop)
        // Scheduled from this thread while the loop runs: the doorbell wakes it.
        try timers.schedule(id: "A", after: .milliseconds(1)) { _ in
            threads.append(currentThread())
            log.append("timer A")
            loop.write(Self.byte("x"))
        }

        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("loop returned") })
        #expect(
            log.values == [
                "ready", "timer A", "io x", "timer B", "io y", "shutdown: true, back to baseline: true", "io z",
                "loop returned",
            ])
        #expect(Set(threads.values).count == 1, "a handler or callback ran off the loop thread")
        #expect(throws: PreciseTimerError.self) { try timers.schedule(after: .zero) { _ in } }
        shared.withLock { $0 = (nil, nil, 0) }
    }

    @Test("shutdown() from another thread while the caller's loop runs waits for the loop to take the events off")
    func shutdownFromAnotherThread() async throws {
        let log = Recorder<String>()
        let beats = Recorder<UInt64>()
        let probes = Recorder<WeakProbe<Canary>>()
        let shared = SemaphoreGuarded<(timers: PreciseTimer?, loop: SocketLoop?, baseline: Int32)>((nil, nil, 0))
        SocketLoop.run(
            setUp: { loop in
                let baseline = loop.addedEvents
                do {
                    let timers = try PreciseTimer(eventBase: loop.base)
                    let canary = Canary()
                    probes.append(WeakProbe(canary))
                    try timers.scheduleRepeating(id: "beat", every: .milliseconds(1)) { tick in
                        withExtendedLifetime(canary) { beats.append(tick.count) }
                    }
                    shared.withLock { $0 = (timers, loop, baseline) }
                } catch {
                    log.append("init failed: \(error)")
                    loop.stop()
                }
            },
            onRead: { loop, _ in
                let baseline = shared.withLock { $0.baseline }
                log.append("back to baseline: \(loop.addedEvents == baseline)")
                loop.stop()
            },
            tearDown: { _ in log.append("loop returned") })

        await beats.wait(forCount: 3)
        let (service, socketLoop, _) = shared.withLock { $0 }
        let timers = try #require(service)
        let loop = try #require(socketLoop)
        // shutdown() blocks until the loop has answered: a thread of its own, not this task's.
        detachThread {
            timers.shutdown()
            log.append(
                probes.values.allSatisfy { $0.isReleased } ? "shutdown returned" : "a handler outlived shutdown()")
            loop.write(Self.byte("q"))
        }
        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("loop returned") })
        #expect(log.values == ["shutdown returned", "back to baseline: true", "loop returned"])
        let beatsAtShutdown = beats.count
        await pause(.milliseconds(20))
        #expect(beats.count == beatsAtShutdown, "a handler ran after shutdown() returned")
        shared.withLock { $0 = (nil, nil, 0) }
    }

    @Test("shutdown() from a .loop handler on the caller's base takes the events off as the handler returns")
    func shutdownFromHandler() async throws {
        let log = Recorder<String>()
        let shared = SemaphoreGuarded<(timers: PreciseTimer?, baseline: Int32)>((nil, 0))
        SocketLoop.run(
            setUp: { loop in
                let baseline = loop.addedEvents
                do {
                    let timers = try PreciseTimer(eventBase: loop.base)
                    shared.withLock { $0 = (timers, baseline) }
                    try timers.schedule(id: "last", after: .milliseconds(1)) { _ in
                        shared.withLock { $0.timers }?.shutdown()
                        log.append("handler returned")
                        loop.write(Self.byte("q"))
                    }
                    try timers.scheduleRepeating(id: "beat", every: .milliseconds(1)) { _ in }
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

        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("loop returned") })
        #expect(log.values == ["handler returned", "back to baseline: true", "loop returned"])
        shared.withLock { $0 = (nil, 0) }
    }

    @Test(
        "before the loop ever ran, shutdown() cannot know the loop thread: the events stay until one pass; after the loop returned, it frees them"
    )
    func shutdownBeforeAndAfterTheLoop() async throws {
        let log = Recorder<String>()
        detachThread {
            do {
                // Before: the loop never runs.
                let base = SocketLoop.preciseBase()
                let baseline = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED))
                let timers = try PreciseTimer(eventBase: base)
                var canary: Canary? = Canary()
                let probe = WeakProbe(canary!)
                try timers.schedule(after: .seconds(3_600)) { [canary] _ in withExtendedLifetime(canary) {} }
                canary = nil
                timers.shutdown()  // No callback ran: waits its bound, touches nothing (defect 8).
                let stayed = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) > baseline
                event_base_loop(base, EVLOOP_NONBLOCK)  // One pass: the doorbell takes them off.
                let back = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == baseline
                log.append("before: stayed \(stayed), then \(back), released: \(probe.isReleased)")
                event_base_free(base)
            } catch {
                log.append("before: \(error)")
            }
            do {
                // After: one timer fires and breaks the loop; the service is shut down afterwards.
                let base = SocketLoop.preciseBase()
                let baseline = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED))
                let timers = try PreciseTimer(eventBase: base)
                // Used by the handler on this very thread (the loop's).
                nonisolated(unsafe) let loopBase = base
                try timers.schedule(after: .milliseconds(1)) { _ in event_base_loopbreak(loopBase) }
                var canary: Canary? = Canary()
                let probe = WeakProbe(canary!)
                try timers.schedule(after: .seconds(3_600)) { [canary] _ in withExtendedLifetime(canary) {} }
                canary = nil
                event_base_dispatch(base)
                timers.shutdown()
                let back = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == baseline
                log.append("after: \(back), released: \(probe.isReleased)")
                event_base_free(base)
            } catch {
                log.append("after: \(error)")
            }
            log.append("done")
        }
        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("done") })
        #expect(
            log.values == ["before: stayed true, then true, released: true", "after: true, released: true", "done"])
    }

    @Test("releasing the last reference on the loop thread takes the events off the base")
    func releasedOnTheLoopThread() async throws {
        let log = Recorder<String>()
        detachThread {
            let base = SocketLoop.preciseBase()
            let baseline = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED))
            do {
                var timers: PreciseTimer? = try PreciseTimer(eventBase: base)
                try timers!.scheduleRepeating(every: .milliseconds(1)) { _ in }
                event_base_loop(base, EVLOOP_NONBLOCK)  // The loop thread is known from here on.
                log.append("added: \(event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) > baseline)")
                timers = nil
                log.append("released: \(event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == baseline)")
            } catch {
                log.append("\(error)")
            }
            event_base_free(base)
            log.append("done")
        }
        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("done") })
        #expect(log.values == ["added: true", "released: true", "done"])
    }

    @Test("a nil base, one without the precise timer, a poll base and thread options are typed errors")
    func badInput() throws {
        func error(_ make: () throws -> PreciseTimer) -> PreciseTimerError? {
            do {
                _ = try make()
                return nil
            } catch {
                return error as? PreciseTimerError
            }
        }
        let nilBase = error { try PreciseTimer(eventBase: nil) }
        #expect(nilBase?.code == .invalidEventBase)

        // event_base_new(): epoll, but no EVENT_BASE_FLAG_PRECISE_TIMER (unless the environment sets it).
        if getenv("EVENT_PRECISE_TIMER") == nil {
            let coarse = event_base_new()!
            defer { event_base_free(coarse) }
            let imprecise = error { try PreciseTimer(eventBase: coarse) }
            #expect(imprecise?.code == .invalidEventBase)
            #expect(imprecise?.value?.contains("EVENT_BASE_FLAG_PRECISE_TIMER") == true)
            #expect(event_base_get_num_events(coarse, UInt32(EVENT_BASE_COUNT_ADDED)) == 0)
        }

        let config = event_config_new()!
        event_config_set_flag(config, CLibevent_EVENT_BASE_FLAG_PRECISE_TIMER())
        event_config_avoid_method(config, "epoll")
        let poll = event_base_new_with_config(config)!
        event_config_free(config)
        defer { event_base_free(poll) }
        let notEpoll = error { try PreciseTimer(eventBase: poll) }
        #expect(notEpoll?.code == .invalidEventBase)
        #expect(notEpoll?.value?.contains("not epoll") == true)

        let base = SocketLoop.preciseBase()
        defer { event_base_free(base) }
        for configuration in [
            PreciseTimer.Configuration(realtimePriority: 10), .init(cpuAffinity: 0),
            .init(timerSlack: .microseconds(1)),
        ] {
            let thread = error { try PreciseTimer(eventBase: base, configuration: configuration) }
            #expect(thread?.code == .invalidConfiguration)
        }
        // The base itself is fine: a service starts, runs a pass and ends on it.
        let timers = try PreciseTimer(eventBase: base)
        event_base_loop(base, EVLOOP_NONBLOCK)
        timers.shutdown()
        #expect(event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == 0)
    }
}
