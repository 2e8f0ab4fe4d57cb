import CLibevent
import Dispatch
import Glibc
import Synchronization

/// One libevent `event_base`, driven by one thread this object starts, running a ``TimerCore``.
///
/// Every libevent call happens on the loop thread (after `init` hands the base over), so the
/// base is built with `EVENT_BASE_FLAG_NOLOCK` and never needs `evthread_use_pthreads()`. Two
/// events live on it: the *alarm*, a timer event armed at the core's earliest deadline, and the
/// *doorbell*, a read event on the ``EventFDWaker`` through which other threads ask the loop to
/// look again.
/// A libevent failure a test can make the engine see, since a real one cannot be provoked.
package enum InjectedEngineFailure: UInt8, Sendable {
    case none
    /// The next `event_add` of the alarm reports failure.
    case alarmAdd
    /// `event_base_loop` returns -1 the next time the doorbell rings.
    case loop
}

final class LibeventEngine: @unchecked Sendable {
    // Invariant: `base`, `alarm` and `doorbell` are touched by `init` before the thread starts,
    // then only on the loop thread, which frees them before it exits.
    private let base: OpaquePointer
    private let alarm: OpaquePointer
    private let doorbell: OpaquePointer
    private let core: TimerCore
    private let waker: EventFDWaker
    private let spinMargin: Int64
    private let threadName: String
    private let timerSlack: Int64?
    /// `pthread_self()` of the loop thread once it runs; 0 before.
    private let loopThread = Atomic<UInt>(0)
    private let finished = DispatchGroup()
    /// Test seam: the libevent failure to pretend at the next chance (see ``InjectedEngineFailure``).
    private let injected = Atomic<UInt8>(InjectedEngineFailure.none.rawValue)


    /// Below this, the alarm callback spins instead of re-arming: libevent works in whole
    /// microseconds and a re-arm costs an epoll round trip. The alarm is also armed this much
    /// early, which makes up for libevent's rounding to microseconds (up to ~2 µs late
    /// otherwise); the kernel's wake-up latency is far longer, so in practice nothing spins.
    private static let minimumSpin: Int64 = 2_000

    /// Builds the base and starts the loop thread.
    ///
    /// - Throws: ``PreciseTimerError/Code/libeventFailure`` when libevent cannot build an epoll
    ///   base; ``PreciseTimerError/Code/systemFailure`` when the thread cannot start with the
    ///   requested scheduling (for example `SCHED_FIFO` without permission).
    init(core: TimerCore, waker: EventFDWaker, configuration: PreciseTimer.Configuration) throws(PreciseTimerError) {
        self.core = core
        self.waker = waker
        self.spinMargin = configuration.spinMargin.timerNanoseconds ?? 0
        self.threadName = configuration.threadName
        self.timerSlack = configuration.timerSlack?.timerNanoseconds

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
        self.alarm = Self.allocateEvent(size: eventSize)
        self.doorbell = Self.allocateEvent(size: eventSize)

        // Events get the engine unretained: the loop thread holds +1 on it for as long as
        // event_base_loop runs, and callbacks run only inside event_base_loop.
        let context = Unmanaged.passUnretained(self).toOpaque()
        var rc = CLibevent_evtimer_assign(self.alarm, base, alarmCallback, context)
        if rc == 0 {
            rc = event_assign(
                self.doorbell, base, waker.fd, Int16(CLibevent_EV_READ() | CLibevent_EV_PERSIST()),
                doorbellCallback, context)
        }
        if rc == 0 {
            rc = event_add(self.doorbell, nil)
        }
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

    /// What `event_base_new_with_config` opens: the epoll descriptor, the precise timer's
    /// timerfd, and the socketpair of libevent's signal handling, whose failure libevent treats
    /// as fatal (`exit(1)`, the whole daemon gone) instead of returning an error.
    private static let descriptorsLibeventNeeds = 4

    /// Makes sure `count` descriptors are free before libevent needs them, so running out is a
    /// typed ``PreciseTimerError/Code/systemFailure`` (`EMFILE`) here, never libevent's `exit`.
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
        event_del(self.alarm)
        event_del(self.doorbell)
        event_base_free(self.base)
        UnsafeMutableRawPointer(self.alarm).deallocate()
        UnsafeMutableRawPointer(self.doorbell).deallocate()
    }

    /// Whether the caller is the loop thread.
    var isOnLoopThread: Bool {
        self.loopThread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Makes the loop exit (the core must be shut down first) and, unless called from the loop
    /// thread itself, waits until it has freed libevent.
    func stop() {
        self.waker.wake()
        if !self.isOnLoopThread {
            self.finished.wait()
        }
    }

    // MARK: Callbacks (loop thread)

    fileprivate func doorbellRang() {
        self.waker.drain()
        if self.core.isClosed || self.injected.load(ordering: .relaxed) == InjectedEngineFailure.loop.rawValue {
            event_base_loopbreak(self.base)
            return
        }
        self.runTimers()
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
        var rc = CLibevent_evtimer_add(self.alarm, &timeout)
        if self.takeInjected(.alarmAdd) { rc = -1 }
        if rc != 0 {
            // No alarm means no timer would ever fire again: end them all, loudly.
            self.fail(function: "event_add", returnCode: rc)
            event_base_loopbreak(self.base)
        }
    }

    /// The engine cannot go on: end every timer (their handlers are released) and make every
    /// later `schedule` throw this failure. A shutdown that came first keeps its reason.
    private func fail(function: String, returnCode: Int32) {
        let error = PreciseTimerError(.libeventFailure, function: function, returnCode: returnCode, errno: Glibc.errno)
        if self.core.close(.failed(error)) { self.core.instruments.engineFailed(error) }
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

// One trampoline per callback kind; `arg` is the engine, unretained (see `init`).

private func alarmCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue().runTimers()
}

private func doorbellCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue().doorbellRang()
}

private func loopThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    // Balances the passRetained in `startThread`.
    Unmanaged<LibeventEngine>.fromOpaque(arg!).takeRetainedValue().runLoop()
    return nil
}
