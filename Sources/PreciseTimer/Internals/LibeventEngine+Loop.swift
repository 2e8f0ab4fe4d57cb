import CLibevent
import Dispatch
import Glibc
import PreciseTimerCore

extension LibeventEngine {
    /// Starts the own loop thread, named and scheduled as configured. The thread's closure holds
    /// +1 on the engine until the loop has freed libevent.
    func startLoopThread(_ configuration: PreciseTimer.Configuration) throws(PreciseTimerError) {
        self.finished.enter()
        let name = configuration.threadName
        let slack = configuration.timerSlack?.timerNanoseconds
        let started = PosixThread.start(
            detached: true,
            configure: { attributes in
                if let priority = configuration.realtimePriority {
                    var parameters = sched_param(sched_priority: priority)
                    pthread_attr_setinheritsched(&attributes, Int32(PTHREAD_EXPLICIT_SCHED))
                    pthread_attr_setschedpolicy(&attributes, SCHED_FIFO)
                    pthread_attr_setschedparam(&attributes, &parameters)
                }
                if let cpu = configuration.cpuAffinity {
                    var set = cpu_set_t()
                    withUnsafeMutableBytes(of: &set) { bytes in bytes[cpu / 8] |= UInt8(1 << (cpu % 8)) }
                    pthread_attr_setaffinity_np(&attributes, MemoryLayout<cpu_set_t>.size, &set)
                }
            }
        ) { [self] in
            self.runLoop(name: name, slack: slack)
        }
        if case .failure(let error) = started {
            self.finished.leave()
            throw PreciseTimerError(
                .systemFailure, value: configuration.schedulingDescription,
                function: "pthread_create", returnCode: error.code, errno: error.code)
        }
    }

    /// The own loop thread's life: name itself, run the loop until it breaks, free libevent.
    private func runLoop(name: String, slack: Int64?) {
        let thread = ThreadIdentity.current
        if self.lifecycle.withLock({ $0.loopStarts(on: thread) }) {
            _ = pthread_setname_np(pthread_self(), name)
            if let slack { _ = CLibevent_set_timer_slack(UInt(slack)) }
            do {
                try self.base.loop(faults: self.faults)
            } catch {
                self.fail(error)
            }
        }
        self.freeEvents()
        self.base.free()
        self.lifecycle.withLock { $0.loopEnded() }
        self.finished.leave()
    }

    /// The doorbell rang: someone scheduled ahead of the loop's sleep, a stop was asked for, or a
    /// test injected a clock change or a failure.
    func doorbellRang() {
        self.waker.drain()
        self.clocks.serveInjected(core: self.core)
        if self.core.isClosed {
            if self.ownsBase { self.base.loopBreak() }
            return
        }
        if self.ownsBase, self.faults.isPending(.loop) {
            self.base.loopBreak()  // The loop returns; the wall reports the injected failure.
            return
        }
        self.runTimers()
    }

    /// A timerfd on the wall or continuous clock was readable.
    func clockFired(fd: Int32) {
        guard !self.core.isClosed else { return }
        switch self.clocks.serve(fd: fd, core: self.core) {
        case .expired:
            let before = self.core.boundVersion
            self.runTimers()
            // Nothing bound fired or moved: the estimate lagged its clock (NTP slewing).
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

    /// Runs what is due, then arms the alarm for the next deadline, spinning through the last
    /// microseconds as ``SpinDecision`` says; a spin ends early when the doorbell rings (a new,
    /// earlier timer, or a stop, is then served at once).
    func runTimers() {
        var spun = false
        passes: while true {
            let next: Int64
            switch self.core.runDue() {
            case .empty:
                self.alarm.delete()
                break passes
            case .batchLimitReached:  // Let the doorbell and any I/O have a turn.
                self.arm(in: 0)
                break passes
            case .idle(let deadline):
                next = deadline
            }
            var remaining = next - self.waker.now()
            switch SpinDecision.decide(remaining: remaining, spinMargin: self.spinMargin, alreadySpun: spun) {
            case .sleep(let nanoseconds):
                self.arm(in: nanoseconds)
                break passes
            case .yield:
                self.arm(in: 0)
                break passes
            case .spin:
                spun = true
                while remaining > 0 {
                    if self.waker.hasRung {
                        self.arm(in: remaining)  // Rounded up: the alarm never comes early.
                        break passes
                    }
                    remaining = next - self.waker.now()
                }
            }
        }
        self.rearmClocks()
    }

    private func arm(in nanoseconds: Int64) {
        // A caller's base caches the time at each pass of its loop: without a fresh read, a
        // timeout added after a long handler would count from the start of the pass.
        if !self.ownsBase { self.base.updateCacheTime() }
        do {
            try self.alarm.addTimer(in: .nanoseconds(nanoseconds), faults: self.faults)
        } catch {
            self.fail(error)  // No alarm means no timer would ever fire again: end them all, loudly.
        }
    }

    /// Re-arms the wall and continuous timerfds when the core's bound timers changed.
    private func rearmClocks() {
        let rc = self.clocks.rearm(core: self.core)
        guard rc != 0 else { return }
        self.fail(PreciseTimerError(.systemFailure, function: "timerfd_settime", returnCode: -1, errno: rc))
    }

    /// Makes the loop act as if the wall clock had been stepped or the machine had resumed, at
    /// its next pass (tests only).
    func injectClockChange() {
        self.clocks.injectClockChange()
        self.waker.wake()
    }

    /// Makes the engine see `failure` at its next chance (tests only), and rings the doorbell.
    func inject(_ failure: InjectedEngineFailure) {
        self.faults.inject(failure)
        self.waker.wake()
    }
}
