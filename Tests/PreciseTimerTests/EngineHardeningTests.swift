import CLibevent
import Glibc
import PreciseTimer
import PreciseTimerTesting
import Testing

/// The libevent engine when libevent fails under it, and in a forked child.
@Suite("Engine hardening")
struct EngineHardeningTests {
    /// Schedules and cancels a probe timer until `schedule` throws; returns that error.
    private static func scheduleUntilRefused(_ timers: PreciseTimer) async -> PreciseTimerError? {
        // Up to two minutes: the loop thread may wait that long for a core on a loaded machine.
        let deadline = MonotonicInstant.now().advanced(by: .seconds(120))
        while MonotonicInstant.now() < deadline {
            do {
                let id = try timers.schedule(after: .seconds(1)) { _ in }
                timers.cancel(id)
            } catch let error as PreciseTimerError {
                return error
            } catch {
                return nil
            }
            await pause(.milliseconds(5))
        }
        return nil
    }

    @Test(
        "a libevent failure ends every timer, releases every handler and makes schedule throw, naming the call",
        arguments: [(InjectedEngineFailure.alarmAdd, "event_add"), (.loop, "event_base_loop")])
    func engineFailure(_ failure: InjectedEngineFailure, _ function: String) async throws {
        let timers = try PreciseTimer()
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        try timers.schedule(id: "held", after: .seconds(3_600)) { [canary] _ in _ = canary }
        try timers.scheduleRepeating(id: "beat", every: .seconds(1)) { [canary] _ in _ = canary }
        canary = nil
        timers.injectEngineFailure(failure)
        // The alarm is armed at the next change of the earliest deadline.
        _ = try? timers.schedule(id: "earlier", after: .milliseconds(500)) { _ in }

        let error = try #require(await Self.scheduleUntilRefused(timers), "schedule never failed")
        #expect(error.code == .libeventFailure)
        #expect(error.function == function)
        #expect(error.returnCode == -1)
        // The loop thread closes the shards one by one, then releases every handler: a schedule
        // into a closed shard throws while a later shard still holds its timers (under
        // AddressSanitizer on a loaded machine, `scheduledCount` read 2 there). Once the handlers
        // are released, every shard is closed and empty.
        #expect(await Polling.until { probe.isReleased }, "a handler outlived the failure")
        #expect(timers.scheduledCount == 0)
        #expect(!timers.isScheduled("held"))
        timers.shutdown()  // Returns: the loop thread is already gone.
        #expect(throws: PreciseTimerError.self) { try timers.schedule(after: .zero) { _ in } }
    }

    @Test(
        "a forked child that uses and drops an inherited service exits at once, and the parent goes on",
        .disabled(
            if: Sanitizers.threadSanitizerIsActive, "fork from a multi-threaded process can hang under TSan's runtime"))
    func forkedChild() async throws {
        var timers: PreciseTimer? = try PreciseTimer()
        let ticks = Recorder<Tick>()
        try timers!.scheduleRepeating(id: "parent", every: .milliseconds(2)) { ticks.append($0) }
        await ticks.wait(forCount: 2)
        // Everything the child calls runs once here first, so no lazy initialisation (and no
        // lock another thread might hold at the fork) is left for the child.
        _ = try? timers!.schedule(id: "parent", after: .zero) { _ in }
        _ = timers!.isScheduled("warm")
        _ = timers!.cancel("warm")
        // A handle from the parent: in the child, cancelling it must not touch the registry. The
        // cancel by a handle that names nothing warms that path up, as the calls above do theirs.
        let parentHandle = try timers!.scheduleTimer(.after(.seconds(3_600)), id: nil, options: TimerOptions()) { _ in }
        _ = timers!.cancel(TimerHandle(id: "warm", generation: 1))
        // A throw too: Swift Testing's hook for thrown errors builds type metadata the first time
        // it sees one, and a child forked while another test's thread is building it would wait
        // forever for that build (seen: the child hung in Testing.Backtrace's error cache).
        try timers!.schedule(id: "warm-throw", after: .seconds(3_600)) { _ in }
        #expect(throws: PreciseTimerError.self) {
            try timers!.schedule(id: "warm-throw", after: .seconds(3_600)) { _ in }
        }
        _ = timers!.cancel("warm-throw")

        let pid = fork()
        if pid == 0 {
            // The parent bounds its wait and kills a child that hangs; the alarm is a second
            // guard, for which SIGALRM is unblocked (the test thread blocks most signals).
            var alarmOnly = sigset_t()
            sigemptyset(&alarmOnly)
            sigaddset(&alarmOnly, SIGALRM)
            pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
            alarm(10)
            var ok = true
            do {
                _ = try timers!.schedule(after: .zero) { _ in }
                ok = false
            } catch let error as PreciseTimerError {
                ok = error.code == .shutDown
            } catch {
                ok = false
            }
            do {  // The class's own entry (inlined here), not the protocol's.
                _ = try timers!.scheduleTimer(.after(.zero), id: nil, options: TimerOptions()) { _ in }
                ok = false
            } catch let error as PreciseTimerError {
                ok = ok && error.code == .shutDown
            } catch {
                ok = false
            }
            ok =
                ok && !timers!.cancel("parent") && !timers!.cancel(parentHandle) && !timers!.isScheduled("parent")
                && timers!.scheduledCount == 0
            timers!.shutdown()  // Must not wait for the parent's loop thread.
            timers = nil  // deinit: must not wait either.
            _exit(ok ? 0 : 1)
        }
        try #require(pid > 0, "fork failed: \(errno)")
        var status: Int32 = 0
        var waited = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            waited += 1
            if waited == 1_000 {  // 10 s: the child hangs. Kill it, then reap it.
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                break
            }
            await pause(.milliseconds(10))
        }
        let signal = status & 0x7f
        #expect(signal == 0, "the child was killed by signal \(signal): it hung")
        #expect((status >> 8) & 0xff == 0, "the child saw the inherited service misbehave")

        let before = ticks.count
        await ticks.wait(forCount: before + 3)
        #expect(timers!.isScheduled("parent"), "the parent's service kept running")
        timers!.shutdown()
    }
}

/// Spin finish (`spinMargin`) must never hold the loop: not from an earlier timer, not from
/// the doorbell, not from shutdown.
@Suite("Spin finish")
struct SpinTests {
    @Test("a timer scheduled during a spin for a later deadline is not held back until the spin ends")
    func earlierTimerDuringSpin() async throws {
        let timers = try PreciseTimer(configuration: .init(spinMargin: .milliseconds(10)))
        defer { timers.shutdown() }
        // Held by the spin, the early timer can only fire once the spin ended at the late
        // deadline. So one attempt in which it fires before that deadline proves the spin let
        // go; a loaded machine may spoil some attempts (a descheduled loop thread), not all.
        var firedBeforeTheLateDeadline = 0
        for attempt in 0..<10 {
            let fired = Recorder<Tick>()
            // Due in 9.5 ms, within the margin: the loop starts spinning for it at once.
            try timers.schedule(id: TimerID("late-\(attempt)"), after: .microseconds(9_500)) { fired.append($0) }
            usleep(1_000)
            try timers.schedule(id: TimerID("early-\(attempt)"), after: .zero) { fired.append($0) }
            let ticks = await fired.wait(forCount: 2)
            let late = try #require(ticks.first { $0.id.rawValue.hasPrefix("late") })
            let early = try #require(ticks.first { $0.id.rawValue.hasPrefix("early") })
            if early.firedAt < late.scheduledAt { firedBeforeTheLateDeadline += 1 }
        }
        #expect(firedBeforeTheLateDeadline > 0, "in 10 attempts the early timer always waited for the spin")
    }
}
