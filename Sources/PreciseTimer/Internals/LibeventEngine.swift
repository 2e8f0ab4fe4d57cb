import CLibevent
import PreciseTimerCore
import Dispatch
import Glibc
import Synchronization

/// A libevent failure a test can make the engine see, since a real one cannot be provoked.
package enum InjectedEngineFailure: UInt8, Sendable {
    case none
    /// The next `event_add` of the alarm reports failure.
    case alarmAdd
    /// `event_base_loop` returns -1 the next time the doorbell rings.
    case loop
}

/// One libevent `event_base` running a ``TimerCore``: either a base of its own, driven by one
/// thread this object starts, or a caller's base, driven by the caller's thread.
///
/// Every libevent call happens on the thread that drives the base (after `init`), so an own base
/// is built with `EVENT_BASE_FLAG_NOLOCK` and never needs `evthread_use_pthreads()`, and a
/// caller's base needs no locking either. Two events live on it: the *alarm*, a timer event
/// armed at the core's earliest deadline, and the *doorbell*, a read event on the
/// ``EventFDWaker`` through which other threads ask the loop to look again (or to let go).
///
/// On a caller's base (``init(core:waker:eventBase:configuration:)``) the engine never frees
/// the base: ``detach()`` deletes and frees its two events, on the loop thread only.
final class LibeventEngine: @unchecked Sendable {
    // Invariant: `base`, `alarm` and `doorbell` are touched by `init`, then only on the thread
    // that drives the base: the engine's own loop thread, which frees them before it exits, or
    // the caller's loop thread, which deletes and frees the two events in `detach()`.
    private let base: OpaquePointer
    private let alarm: OpaquePointer
    private let doorbell: OpaquePointer
    /// Whether the base is the caller's: no thread of ours; the events are taken off it by
    /// ``detach()`` and the base is left alone.
    let borrowsBase: Bool
    private let core: TimerCore
    private let waker: EventFDWaker
    /// The timerfds on the wall and continuous clocks (see ``EngineClocks``).
    private let clocks: EngineClocks
    private let spinMargin: Int64
    private let threadName: String
    private let timerSlack: Int64?
    /// `pthread_self()` of the thread that drives the base: the own loop thread once it runs (0
    /// before); on a caller's base, the thread that called `init`, then the one that last ran a
    /// callback of ours.
    private let loopThread = Atomic<UInt>(0)
    /// Entered while libevent may still call the engine: while the own loop thread runs, or while
    /// the events are on the caller's base. Empty once libevent is done with the service.
    let finished = DispatchGroup()
    /// Whether the thread that drives the base is inside one of our callbacks (read meaningfully
    /// only by that thread: a shutdown from a `.loop` handler leaves the freeing to the callback).
    private let inCallback = Atomic<Bool>(false)
    /// A caller's base: whether the two events are still on it.
    private let attached = Atomic<Bool>(false)
    /// Test seam: the libevent failure to pretend at the next chance (see ``InjectedEngineFailure``).
    private let injected = Atomic<UInt8>(InjectedEngineFailure.none.rawValue)

    /// Below this, the alarm callback spins instead of re-arming: libevent works in whole
    /// microseconds and a re-arm costs an epoll round trip. The alarm is also armed this much
    /// early, which makes up for libevent's rounding to microseconds (up to ~2 µs late
    /// otherwise); the kernel's wake-up latency is far longer, so in practice nothing spins.
    private static let minimumSpin: Int64 = 2_000

    /// How long a ``stop()`` from another thread waits for a caller's loop to take the events off
    /// its base. A running loop does it as soon as its current callback returns; a loop that does
    /// not run (stopped, or not yet started) never does, and then the events stay on the base,
    /// still allocated, until it runs again (see ``PreciseTimer/init(eventBase:configuration:)``).
    static let detachBound: DispatchTimeInterval = .seconds(2)

    /// Builds the base and starts the loop thread.
    ///
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` when libevent cannot build an epoll
    ///   base; ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when the thread cannot start with the
    ///   requested scheduling (for example `SCHED_FIFO` without permission).
    init(core: TimerCore, waker: EventFDWaker, configuration: PreciseTimer.Configuration) throws(PreciseTimerError) {
        self.core = core
        self.waker = waker
        self.spinMargin = configuration.spinMargin.timerNanoseconds ?? 0
        self.threadName = configuration.threadName
        self.timerSlack = configuration.timerSlack?.timerNanoseconds
        self.clocks = try EngineClocks(eventSize: event_get_struct_event_size())

        try Self.reserveDescriptors(Self.descriptorsLibeventNeeds, like: waker.fd)
        guard let config = event_config_new() else {
            throw PreciseTimerError(.libeventFailure, function: "event_config_new")
        }
        defer { event_config_free(config) }
        // Precise: timerfd instead of epoll's whole milliseconds, CLOCK_MONOTONIC instead of the
        // 4 ms coarse clock. No cache: a timeout added from a callback counts from a fresh read.
        let flags =
            CLibevent_EVENT_BASE_FLAG_PRECISE_TIMER() | CLibevent_EVENT_BASE_FLAG_NO_CACHE_TIME()
            | CLibevent_EVENT_BASE_FLAG_NOLOCK()
        event_config_set_flag(config, flags)
        // poll and select have no timerfd; failing is better than silently losing precision.
        event_config_avoid_method(config, "poll")
        event_config_avoid_method(config, "select")
        guard let base = event_base_new_with_config(config) else {
            throw PreciseTimerError(.libeventFailure, function: "event_base_new_with_config", errno: Glibc.errno)
        }
        let eventSize = event_get_struct_event_size()
        self.base = base
        self.borrowsBase = false
        self.alarm = Self.allocateEvent(size: eventSize)
        self.doorbell = Self.allocateEvent(size: eventSize)

        let rc = self.addEvents()
        guard rc == 0 else {
            self.freeLibevent()
            throw PreciseTimerError(.libeventFailure, function: "event_assign/event_add", returnCode: rc)
        }
        do {
            try self.startThread(configuration)
        } catch {
            self.freeLibevent()
            throw error
        }
    }

    /// Puts the service's two events on a caller's base and starts no thread: the caller's loop
    /// runs the timers. Call it on the thread that drives the base.
    ///
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/invalidEventBase`` for a base that cannot keep the
    ///   service's precision (see ``checkPrecision(of:)``);
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` when the events cannot be added.
    init(
        core: TimerCore, waker: EventFDWaker, eventBase base: OpaquePointer,
        configuration: PreciseTimer.Configuration
    ) throws(PreciseTimerError) {
        try Self.checkPrecision(of: base)
        self.core = core
        self.waker = waker
        self.clocks = try EngineClocks(eventSize: event_get_struct_event_size())
        self.spinMargin = configuration.spinMargin.timerNanoseconds ?? 0
        self.threadName = configuration.threadName
        self.timerSlack = nil
        self.base = base
        self.borrowsBase = true
        let eventSize = event_get_struct_event_size()
        self.alarm = Self.allocateEvent(size: eventSize)
        self.doorbell = Self.allocateEvent(size: eventSize)
        self.loopThread.store(UInt(pthread_self()), ordering: .releasing)

        let rc = self.addEvents()
        guard rc == 0 else {
            self.freeEvents()
            throw PreciseTimerError(.libeventFailure, function: "event_assign/event_add", returnCode: rc)
        }
        // The events hold +1 on the engine while they are on the caller's base, since its loop
        // may call them after the service is gone (a shutdown from another thread that found the
        // loop not running). Taken once both are on the base; released exactly once, by `detach()`.
        _ = Unmanaged.passRetained(self)
        self.attached.store(true, ordering: .releasing)
        self.finished.enter()
        // The loop's first pass serves the doorbell, which tells which thread drives the base.
        waker.wake()
    }

    /// Assigns both events and adds the doorbell; libevent's return code.
    private func addEvents() -> Int32 {
        // Events get the engine unretained. Own base: the loop thread holds +1 on it for as long
        // as event_base_loop runs, and callbacks run only inside it. A caller's base: the events'
        // own +1 (see `init(core:waker:eventBase:configuration:)`).
        let context = Unmanaged.passUnretained(self).toOpaque()
        var rc = CLibevent_evtimer_assign(self.alarm, self.base, alarmCallback, context)
        if rc == 0 {
            rc = event_assign(
                self.doorbell, self.base, self.waker.fd, Int16(CLibevent_EV_READ() | CLibevent_EV_PERSIST()),
                doorbellCallback, context)
        }
        if rc == 0 {
            rc = event_add(self.doorbell, nil)
        }
        if rc == 0 {
            rc = self.clocks.add(to: self.base, context: context, callback: clockCallback)
        }
        return rc
    }

    /// Refuses a caller's base that cannot keep the service's precision: a backend other than
    /// epoll (poll and select have no timerfd), or a base built without
    /// `EVENT_BASE_FLAG_PRECISE_TIMER` (epoll then waits in whole milliseconds and libevent reads
    /// the coarse clock, which moves in 1 to 4 ms steps).
    ///
    /// libevent 2.1 has no `event_base_get_flags`; the flag shows in the clock the base reads
    /// (`event_gettime_monotonic`): `CLOCK_MONOTONIC` with it, `CLOCK_MONOTONIC_COARSE` without
    /// (libevent's `evutil_configure_monotonic_time_`; the `EVENT_PRECISE_TIMER` environment
    /// variable sets the flag too). Read between two reads of `CLOCK_MONOTONIC`, the precise clock
    /// always lies between them; the coarse one holds the last kernel tick, so over 20 µs of
    /// back-to-back samples (less than one tick) it falls behind the earlier read at least once.
    private static func checkPrecision(of base: OpaquePointer) throws(PreciseTimerError) {
        let method = event_base_get_method(base).map { String(cString: $0) } ?? "unknown"
        guard method == "epoll" else {
            throw PreciseTimerError(
                .invalidEventBase,
                value: "the base uses \(method), not epoll: no timerfd, so timers would wait in whole milliseconds",
                function: "event_base_get_method")
        }
        func microseconds() -> Int64 {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1_000
        }
        for _ in 0..<1_000 {
            let first = microseconds()
            var last = first
            while last - first < 20 {
                let before = microseconds()
                var time = timeval()
                let rc = event_gettime_monotonic(base, &time)
                guard rc == 0 else {
                    throw PreciseTimerError(.libeventFailure, function: "event_gettime_monotonic", returnCode: rc)
                }
                last = microseconds()
                let read = Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_usec)
                guard read >= before, read <= last else {
                    throw PreciseTimerError(
                        .invalidEventBase,
                        value: "the base was built without EVENT_BASE_FLAG_PRECISE_TIMER: it reads the coarse "
                            + "clock and waits in whole milliseconds",
                        function: "event_gettime_monotonic")
                }
            }
            // A sample taken after a preemption longer than a tick could match a coarse clock.
            if last - first < 500 { return }
        }
        throw PreciseTimerError(
            .invalidEventBase, value: "the base's clock could not be told apart from the coarse clock",
            function: "event_gettime_monotonic")
    }

    /// What `event_base_new_with_config` opens: the epoll descriptor, the precise timer's
    /// timerfd, and the socketpair of libevent's signal handling, whose failure libevent treats
    /// as fatal (`exit(1)`, the whole daemon gone) instead of returning an error.
    private static let descriptorsLibeventNeeds = 4

    /// Makes sure `count` descriptors are free before libevent needs them, so running out is a
    /// typed ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` (`EMFILE`) here, never libevent's `exit`.
    /// (Another thread could take descriptors between this check and libevent's: the window is
    /// a few microseconds at start-up.)
    private static func reserveDescriptors(_ count: Int, like fd: Int32) throws(PreciseTimerError) {
        var reserved: [Int32] = []
        defer { for descriptor in reserved { close(descriptor) } }
        for _ in 0..<count {
            let descriptor = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard descriptor >= 0 else {
                throw PreciseTimerError(
                    .systemFailure, value: "\(count) free file descriptors for libevent",
                    function: "fcntl(F_DUPFD_CLOEXEC)", returnCode: descriptor, errno: Glibc.errno)
            }
            reserved.append(descriptor)
        }
    }

    /// Storage for a `struct event`, zeroed so that the failure path may `event_del` an event that
    /// was never assigned (libevent then sees no base and does nothing).
    private static func allocateEvent(size: Int) -> OpaquePointer {
        let storage = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        return OpaquePointer(storage)
    }

    private func startThread(_ configuration: PreciseTimer.Configuration) throws(PreciseTimerError) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let priority = configuration.realtimePriority {
            var parameters = sched_param(sched_priority: priority)
            pthread_attr_setinheritsched(&attributes, Int32(PTHREAD_EXPLICIT_SCHED))
            pthread_attr_setschedpolicy(&attributes, SCHED_FIFO)
            pthread_attr_setschedparam(&attributes, &parameters)
        }
        if let cpu = configuration.cpuAffinity {
            var set = cpu_set_t()
            withUnsafeMutableBytes(of: &set) { bytes in
                bytes[cpu / 8] |= UInt8(1 << (cpu % 8))
            }
            pthread_attr_setaffinity_np(&attributes, MemoryLayout<cpu_set_t>.size, &set)
        }
        self.finished.enter()
        // The thread owns +1 on the engine, taken back exactly once by `loopThreadMain`.
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attributes, loopThreadMain, context)
        guard rc == 0 else {
            Unmanaged<LibeventEngine>.fromOpaque(context).release()
            self.finished.leave()
            throw PreciseTimerError(
                .systemFailure, value: configuration.schedulingDescription,
                function: "pthread_create", returnCode: rc, errno: rc)
        }
    }

    /// The loop thread's life: name itself, run the loop until shutdown, free libevent.
    fileprivate func runLoop() {
        self.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        _ = pthread_setname_np(pthread_self(), self.threadName)
        if let slack = self.timerSlack {
            _ = CLibevent_set_timer_slack(UInt(slack))
        }
        var rc = event_base_loop(self.base, CLibevent_EVLOOP_NO_EXIT_ON_EMPTY())
        if self.takeInjected(.loop) { rc = -1 }
        if rc == -1 {
            self.fail(function: "event_base_loop", returnCode: rc)
        }
        self.freeLibevent()
        self.finished.leave()
    }

    private func freeLibevent() {
        self.freeEvents()
        event_base_free(self.base)
    }

    private func freeEvents() {
        event_del(self.alarm)
        event_del(self.doorbell)
        self.clocks.remove()
        UnsafeMutableRawPointer(self.alarm).deallocate()
        UnsafeMutableRawPointer(self.doorbell).deallocate()
    }

    /// Takes the two events off the caller's base and frees them, then gives back their +1 on
    /// the engine. Loop thread only, once the core is closed; idempotent.
    private func detach() {
        guard self.attached.exchange(false, ordering: .acquiringAndReleasing) else { return }
        self.freeEvents()
        self.finished.leave()
        // Balances the passRetained in `init(core:waker:eventBase:configuration:)`. Whoever
        // called in holds a reference of its own across this call (the trampoline, or the
        // service in `stop()`), so the engine outlives this method.
        Unmanaged.passUnretained(self).release()
    }

    /// Whether libevent is done with the service (see ``finished``); never blocks.
    var hasStopped: Bool {
        self.finished.wait(timeout: .now()) == .success
    }

    /// Whether the caller is the loop thread.
    var isOnLoopThread: Bool {
        self.loopThread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Asks libevent to let go of the service (the core must be shut down first) and returns at
    /// once. Own base: the loop thread breaks its loop and frees libevent. A caller's base: the
    /// events are taken off it here when called on the loop thread outside our callbacks, when
    /// the callback returns when called from one (a `.loop` handler), and otherwise by the loop
    /// thread when it serves the doorbell.
    func requestStop() {
        if self.borrowsBase, self.isOnLoopThread, !self.inCallback.load(ordering: .relaxed) {
            self.detach()
        } else {
            self.waker.wake()
        }
    }

    /// ``requestStop()``, then, unless called on the loop thread, waits until libevent is done
    /// with the service: for the own loop thread to have freed libevent, or for the caller's
    /// loop to have taken the events off its base, at most ``detachBound``.
    func stop() {
        self.requestStop()
        guard !self.isOnLoopThread else { return }
        if self.borrowsBase {
            _ = self.finished.wait(timeout: .now() + Self.detachBound)
        } else {
            self.finished.wait()
        }
    }

    // MARK: Callbacks (loop thread)

    fileprivate func alarmFired() {
        self.enterCallback()
        defer { self.leaveCallback() }
        self.runTimers()
    }

    fileprivate func doorbellRang() {
        self.enterCallback()
        defer { self.leaveCallback() }
        self.waker.drain()
        self.clocks.serveInjected(core: self.core)
        if self.core.isClosed {
            if !self.borrowsBase { event_base_loopbreak(self.base) }
            return
        }
        if !self.borrowsBase, self.injected.load(ordering: .relaxed) == InjectedEngineFailure.loop.rawValue {
            event_base_loopbreak(self.base)
            return
        }
        self.runTimers()
    }

    fileprivate func clockFired(fd: Int32) {
        self.enterCallback()
        defer { self.leaveCallback() }
        guard !self.core.isClosed else { return }
        switch self.clocks.serve(fd: fd, core: self.core) {
        case .expired:
            let before = self.core.boundVersion
            self.runTimers()
            // Nothing bound fired or moved: the estimate lagged the clock (NTP slewing).
            if self.core.boundVersion == before {
                self.clocks.expiredUnanswered(core: self.core)
                self.runTimers()
            }
        case .clockChanged:
            self.runTimers()
        case .none:
            self.rearmClocks()
        }
    }

    /// Makes the loop act as if the wall clock had been stepped or the machine had resumed, at
    /// its next pass (tests only).
    func injectClockChange() {
        self.clocks.injectClockChange()
        self.waker.wake()
    }

    private func enterCallback() {
        guard self.borrowsBase else { return }
        self.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        self.inCallback.store(true, ordering: .relaxed)
    }

    /// A caller's base: once the core is closed (a shutdown, from a handler or from another
    /// thread, or a failure), the events come off the base as the callback ends.
    private func leaveCallback() {
        guard self.borrowsBase else { return }
        self.inCallback.store(false, ordering: .relaxed)
        if self.core.isClosed { self.detach() }
    }

    /// Runs what is due, then arms the alarm for the next deadline; spins through the last
    /// microseconds (or the configured spin margin) instead of sleeping through them.
    ///
    /// The spinning is bounded so that libevent always gets the loop back between fires: a spin
    /// ends early when the doorbell rings (a new, earlier timer, or a shutdown, is then served
    /// at once instead of after the spin), and after one spun fire the loop passes through
    /// libevent (an alarm armed at zero) before it spins again, so the doorbell and any other
    /// event on the base are served even when the spin margin covers a whole period.
    fileprivate func runTimers() {
        self.runDueTimers()
        self.rearmClocks()
    }

    /// Re-arms the wall and continuous timerfds when the core's bound timers changed.
    private func rearmClocks() {
        let rc = self.clocks.rearm(core: self.core)
        guard rc != 0 else { return }
        Glibc.errno = rc
        self.fail(function: "timerfd_settime", returnCode: -1)
        if !self.borrowsBase { event_base_loopbreak(self.base) }
    }

    private func runDueTimers() {
        var spun = false
        while true {
            let next: Int64
            switch self.core.runDue() {
            case .empty:
                event_del(self.alarm)
                return
            case .batchLimitReached:  // Let the doorbell and any I/O have a turn.
                self.arm(in: 0)
                return
            case .idle(let deadline):
                next = deadline
            }
            var remaining = next - self.waker.now()
            if remaining > self.spinMargin + Self.minimumSpin {
                self.arm(in: remaining - self.spinMargin - Self.minimumSpin)
                return
            }
            if spun {
                self.arm(in: 0)
                return
            }
            spun = true
            while remaining > 0 {
                if self.waker.hasRung {
                    self.arm(in: remaining)  // Rounded up: the alarm never comes early.
                    return
                }
                remaining = next - self.waker.now()
            }
        }
    }

    private func arm(in nanoseconds: Int64) {
        var timeout = timeval(roundingUp: .nanoseconds(nanoseconds))
        // A caller's base caches the time at each pass of its loop: without a fresh read, a
        // timeout added after a long handler would count from the start of the pass.
        if self.borrowsBase { _ = event_base_update_cache_time(self.base) }
        var rc = CLibevent_evtimer_add(self.alarm, &timeout)
        if self.takeInjected(.alarmAdd) { rc = -1 }
        if rc != 0 {
            // No alarm means no timer would ever fire again: end them all, loudly.
            self.fail(function: "event_add", returnCode: rc)
            // A caller's loop is not ours to break: our events come off it as the callback ends.
            if !self.borrowsBase { event_base_loopbreak(self.base) }
        }
    }

    /// The engine cannot go on: end every timer (their handlers are released) and make every
    /// later `schedule` throw this failure. A shutdown that came first keeps its reason.
    private func fail(function: String, returnCode: Int32) {
        let error = PreciseTimerError(.libeventFailure, function: function, returnCode: returnCode, errno: Glibc.errno)
        self.core.close(.failed(error))
    }

    /// Makes the engine see `failure` at its next chance (tests only), and rings the doorbell.
    func inject(_ failure: InjectedEngineFailure) {
        self.injected.store(failure.rawValue, ordering: .relaxed)
        self.waker.wake()
    }

    private func takeInjected(_ failure: InjectedEngineFailure) -> Bool {
        self.injected.compareExchange(
            expected: failure.rawValue, desired: InjectedEngineFailure.none.rawValue, ordering: .relaxed
        ).exchanged
    }
}

// One trampoline per callback kind; `arg` is the engine, unretained (see `addEvents`). The
// local reference keeps it alive through the call, in which `detach()` may give back the +1
// that the events hold on a caller's base.

private func alarmCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.alarmFired() }
}

private func clockCallback(_ fd: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.clockFired(fd: fd) }
}

private func doorbellCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.doorbellRang() }
}

private func loopThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    // Balances the passRetained in `startThread`.
    Unmanaged<LibeventEngine>.fromOpaque(arg!).takeRetainedValue().runLoop()
    return nil
}
