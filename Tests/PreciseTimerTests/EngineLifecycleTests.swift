import CLibevent
import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Synchronization
import Testing

/// The engine's lifecycle state machine and spin decision, as pure values; then the two defects
/// they fix, on real bases: the loop thread is never guessed (defect 8), and a forked child that
/// runs an inherited base runs no timer of the parent's (defect 5).
@Suite("Engine lifecycle")
struct EngineLifecycleTests {
    private let a: UInt = 0xA
    private let b: UInt = 0xB

    @Test("own thread: stop before the loop starts, from another thread, from the loop thread")
    func ownThread() {
        var early = EngineLifecycle(ownsBase: true)
        let r1 = early.stop(on: self.a)
        #expect(r1 == .ringAndWait(bounded: false))
        let r2 = early.loopStarts(on: self.b)
        #expect(!r2, "a stop that came first: free libevent at once")
        early.loopEnded()
        #expect(early.isStopped)
        let r3 = early.stop(on: self.a)
        #expect(r3 == .none)

        var running = EngineLifecycle(ownsBase: true)
        let r4 = running.loopStarts(on: self.b)
        #expect(r4)
        let r5 = running.callbackBegins(on: self.b, inherited: false)
        #expect(r5 == .run)
        let r6 = running.stop(on: self.b)
        #expect(r6 == .letTheCallbackFinish, "from a .loop handler: never wait for itself")
        let r7 = running.stop(on: self.a)
        #expect(r7 == .ringAndWait(bounded: false))
        let r8 = running.callbackEnds(coreClosed: true)
        #expect(!r8, "an own loop breaks at the doorbell; nothing to detach")
        running.loopEnded()
        #expect(running.isStopped)
    }

    @Test("caller's base: no thread counts as the loop thread until a callback ran (defect 8)")
    func callersBase() {
        var unknown = EngineLifecycle(ownsBase: false)
        let r9 = unknown.stop(on: self.a)
        #expect(r9 == .ringAndWait(bounded: true), "never touch the base from outside")
        let r10 = unknown.callbackBegins(on: self.b, inherited: false)
        #expect(r10 == .detach, "the loop lets go at its pass")
        #expect(unknown.isStopped)

        var known = EngineLifecycle(ownsBase: false)
        let r11 = known.callbackBegins(on: self.b, inherited: false)
        #expect(r11 == .run)
        let r12 = known.callbackEnds(coreClosed: false)
        #expect(!r12)
        let r13 = known.stop(on: self.b)
        #expect(r13 == .detachNow, "its loop thread, between callbacks")
        #expect(known.isStopped)

        var fromHandler = EngineLifecycle(ownsBase: false)
        _ = fromHandler.callbackBegins(on: self.b, inherited: false)
        let r14 = fromHandler.stop(on: self.b)
        #expect(r14 == .letTheCallbackFinish)
        let r15 = fromHandler.callbackEnds(coreClosed: true)
        #expect(r15, "the events come off as the callback returns")
        #expect(fromHandler.isStopped)

        var fromElsewhere = EngineLifecycle(ownsBase: false)
        _ = fromElsewhere.callbackBegins(on: self.b, inherited: false)
        _ = fromElsewhere.callbackEnds(coreClosed: false)
        let r16 = fromElsewhere.stop(on: self.a)
        #expect(r16 == .ringAndWait(bounded: true))
        let r17 = fromElsewhere.callbackBegins(on: self.b, inherited: false)
        #expect(r17 == .detach)
    }

    @Test("an inherited base is left once, whatever the state (defect 5)")
    func inherited() {
        var lifecycle = EngineLifecycle(ownsBase: false)
        _ = lifecycle.callbackBegins(on: self.b, inherited: false)
        _ = lifecycle.callbackEnds(coreClosed: false)
        let r18 = lifecycle.callbackBegins(on: self.a, inherited: true)
        #expect(r18 == .leaveInheritedBase)
        let r19 = lifecycle.callbackBegins(on: self.a, inherited: true)
        #expect(r19 == .ignore)
        #expect(lifecycle.isStopped)
    }

    @Test("a thread that gets the dead loop thread's pthread_t is not taken for it (defect 13)")
    func reusedPthread() async {
        let log = Recorder<String>()
        detachThread {
            // Another thread of the process (the suite runs in parallel) may take the cached
            // stack first: a fresh round then, up to 50.
            for _ in 0..<50 {
                if let stayed = Self.shutDownFromReusedPthread() {
                    log.append("stayed: \(stayed)")
                    break
                }
            }
            log.append("done")
        }
        #expect(await log.wait(timeout: .seconds(120)) { $0.contains("done") })
        if log.values == ["done"] {
            withKnownIssue("no thread got the loop thread's pthread_t back in 50 rounds") { Issue.record("not shown") }
        } else {
            #expect(log.values == ["stayed: true", "done"])
        }
    }

    /// Thread A drives a caller's base for one pass (the service learns it as its loop thread)
    /// and exits. Threads started after it often get its stack, and so its pthread_t, back from
    /// glibc's cache: the first that does shuts the service down. It is not the loop thread, so
    /// it must wait for the loop (at most 2 s), not take the events off a base it does not drive.
    ///
    /// - Returns: Whether the events stayed on the base after that shutdown and came off at the
    ///   loop's next pass; `nil` when no thread got A's pthread_t back.
    private static func shutDownFromReusedPthread() -> Bool? {
        let base = SocketLoop.preciseBase()
        defer { event_base_free(base) }
        let baseline = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED))
        let service = Mutex<PreciseTimer?>(nil)
        let loopThread = Atomic<UInt>(0)
        nonisolated(unsafe) let loopBase = base
        Self.join {
            service.withLock { $0 = try? PreciseTimer(eventBase: loopBase) }
            event_base_loop(loopBase, EVLOOP_NONBLOCK)  // The doorbell's callback: A is the loop thread.
            loopThread.store(currentThread(), ordering: .relaxed)
        }
        guard let timers = service.withLock({ $0 }) else { return false }
        let stayed = Mutex<Bool?>(nil)
        for _ in 0..<20 where stayed.withLock({ $0 }) == nil {
            Self.join {
                guard currentThread() == loopThread.load(ordering: .relaxed) else { return }
                timers.shutdown()
                let count = event_base_get_num_events(loopBase, UInt32(EVENT_BASE_COUNT_ADDED))
                stayed.withLock { $0 = count > baseline }
            }
        }
        let shown = stayed.withLock { $0 }
        if shown == nil { timers.shutdown() }  // Waits its bound: no loop runs.
        event_base_loop(base, EVLOOP_NONBLOCK)  // The loop's next pass takes the events off.
        let back = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == baseline
        return shown.map { $0 && back }
    }

    /// Runs `body` on a joinable thread of its own and joins it.
    private static func join(_ body: @escaping @Sendable () -> Void) {
        guard case .success(let thread) = PosixThread.start(detached: false, body) else { return }
        pthread_join(thread, nil)
    }

    @Test("spin decision: sleep while far, spin once through the last stretch, then yield to libevent")
    func spinDecision() {
        let margin: Int64 = 100_000
        let window = margin + SpinDecision.minimumSpin
        #expect(
            SpinDecision.decide(remaining: 1_000_000, spinMargin: margin, alreadySpun: false)
                == .sleep(nanoseconds: 1_000_000 - window))
        #expect(
            SpinDecision.decide(remaining: window + 1, spinMargin: margin, alreadySpun: true) == .sleep(nanoseconds: 1))
        #expect(SpinDecision.decide(remaining: window, spinMargin: margin, alreadySpun: false) == .spin)
        #expect(SpinDecision.decide(remaining: -5, spinMargin: 0, alreadySpun: false) == .spin)
        #expect(SpinDecision.decide(remaining: 1_000, spinMargin: margin, alreadySpun: true) == .yield)
        #expect(SpinDecision.decide(remaining: 5_000, spinMargin: 0, alreadySpun: false) == .sleep(nanoseconds: 3_000))
    }

    /// Blocks the loop thread inside a callback of the test's own until released.
    private final class Gate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
    }

    @Test("defect 8: shutdown() from the creating thread while another thread runs the loop waits for that loop")
    func neverGuessTheLoopThread() async throws {
        let log = Recorder<String>()
        let gate = Gate()
        detachThread {
            let base = SocketLoop.preciseBase()
            // Two priorities: the test's event (0) runs before the service's (1) in a pass.
            event_base_priority_init(base, 2)
            let blocker = event_new(
                base, -1, 0,
                { _, _, arg in
                    let gate = Unmanaged<Gate>.fromOpaque(arg!).takeUnretainedValue()
                    gate.entered.signal()
                    _ = gate.release.wait(timeout: .now() + .seconds(600))
                }, Unmanaged.passUnretained(gate).toOpaque())!
            event_priority_set(blocker, 0)
            let baseline = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED))
            event_active(blocker, Int32(EV_TIMEOUT), 0)  // Due at the loop's first pass.
            guard let timers = try? PreciseTimer(eventBase: base) else { return log.append("no service") }
            nonisolated(unsafe) let loopBase = base
            detachThread {
                event_base_dispatch(loopBase)  // Another thread runs the loop: it blocks in `blocker` first.
                log.append("loop returned")
            }
            _ = gate.entered.wait(timeout: .now() + .seconds(30))
            detachThread {
                usleep(300_000)
                log.append("loop released")
                gate.release.signal()
            }
            timers.shutdown()  // No callback of the service ran yet: the loop thread is unknown.
            // Until the loop is released, only its thread may take the events off: if it is still
            // held (a loaded machine can outlast the shutdown's 2 s bound), they must be there.
            let held = !log.values.contains("loop released")
            let stillOn = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) > baseline
            log.append("shutdown returned; base untouched while held: \(!held || stillOn)")
            while !log.values.contains("loop returned") { usleep(1_000) }
            let back = event_base_get_num_events(base, UInt32(EVENT_BASE_COUNT_ADDED)) == baseline
            log.append("events off the base: \(back)")
            event_free(blocker)
            event_base_free(base)
            log.append("done")
        }
        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("done") })
        #expect(
            log.values.contains("shutdown returned; base untouched while held: true")
                && log.values.suffix(2) == ["events off the base: true", "done"],
            "the shutdown touched the base while another thread ran the loop: \(log.values)")
    }

    /// Set by the parent's handler, in whichever process runs it.
    private final class Flag: Sendable {
        let value = SemaphoreGuarded(false)
    }

    @Test(
        "defect 5: a forked child that reinits and runs an inherited caller's base runs none of the parent's timers",
        .disabled(
            if: Sanitizers.threadSanitizerIsActive, "fork from a multi-threaded process can hang under TSan's runtime"))
    func forkedChildOnCallersBase() async throws {
        let log = Recorder<String>()
        // One thread of its own drives the base throughout, as a daemon's loop thread would.
        detachThread {
            let base = SocketLoop.preciseBase()
            guard let timers = try? PreciseTimer(eventBase: base) else { return log.append("no service") }
            let ran = Flag()
            _ = try? timers.schedule(id: "parent", after: .milliseconds(150)) { _ in ran.value.withLock { $0 = true } }
            // Warm what the child calls (no lazy initialisation left for it, which could wait for
            // a runtime lock another thread held at the fork; see the other fork test): one pass
            // of the loop runs the service's callback path here first.
            _ = ran.value.withLock { $0 }
            _ = timers.isScheduled("parent")
            event_base_loop(base, EVLOOP_NONBLOCK)
            let pid = fork()
            if pid == 0 {
                // Fired in the parent before the fork (its thread lost its core for 150 ms after
                // scheduling): the child inherits `true`, and only a change from here is its own.
                let ranAtFork = ran.value.withLock { $0 }
                var alarmOnly = sigset_t()
                sigemptyset(&alarmOnly)
                sigaddset(&alarmOnly, SIGALRM)
                pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
                alarm(10)
                guard event_reinit(base) == 0 else { _exit(3) }
                for _ in 0..<25 {  // A quarter of a second of the child's loop.
                    event_base_loop(base, EVLOOP_NONBLOCK)
                    usleep(10_000)
                }
                _exit(!ranAtFork && ran.value.withLock { $0 } ? 1 : 0)
            }
            guard pid > 0 else { return log.append("fork failed: \(errno)") }
            var status: Int32 = 0
            var waited = 0
            while waitpid(pid, &status, WNOHANG) == 0 {
                waited += 1
                if waited == 1_000 {  // 10 s: the child hangs. Kill it, then reap it.
                    kill(pid, SIGKILL)
                    waitpid(pid, &status, 0)
                    break
                }
                usleep(10_000)
            }
            log.append("child: signal \(status & 0x7f), exit \((status >> 8) & 0xff)")
            // The parent's service is untouched: passes of its loop fire its timer here.
            usleep(30_000)
            event_base_loop(base, EVLOOP_NONBLOCK)
            event_base_loop(base, EVLOOP_NONBLOCK)
            log.append("parent's timer fired in the parent: \(ran.value.withLock { $0 })")
            timers.shutdown()
            event_base_free(base)
            log.append("done")
        }
        #expect(await log.wait(timeout: .seconds(60)) { $0.contains("done") })
        #expect(log.values == ["child: signal 0, exit 0", "parent's timer fired in the parent: true", "done"])
    }
}
