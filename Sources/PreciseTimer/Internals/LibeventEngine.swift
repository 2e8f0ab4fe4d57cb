import CLibevent
import Dispatch
import Glibc
import PreciseTimerCore

/// One libevent `event_base` running a ``TimerCore``: a base of its own, driven by one thread
/// this object starts, or a caller's base, driven by the caller's thread.
///
/// Every libevent call happens on the thread that drives the base (after `init`), through the
/// ``Libevent`` wall: an own base is built with `EVENT_BASE_FLAG_NOLOCK` and never needs
/// `evthread_use_pthreads()`, and a caller's base needs no locking either. Its events: the
/// *alarm*, a timer event armed at the core's earliest deadline; the *doorbell*, a read event on
/// the ``EventFDWaker`` through which other threads ask the loop to look again (or to let go);
/// and the timerfds of ``EngineClocks``. Which thread drives the base, and what a stop does, is
/// ``EngineLifecycle``'s business.
final class LibeventEngine: @unchecked Sendable {
    // Invariant: `base` and the events are touched by `init`, then only on the thread that
    // drives the base: the own loop thread, which frees them before it exits, or the caller's
    // loop thread, which deletes and frees the events in `detach()`. `lifecycle` is guarded by
    // its semaphore.
    let base: LibeventBase
    // Allocated once every step that can throw before them has passed (a failed init frees
    // what it allocated, and a struct of raw storage has no deinit to do it).
    let alarm: LibeventEvent
    let doorbell: LibeventEvent
    let clocks: EngineClocks
    let core: TimerCore
    let waker: EventFDWaker
    let spinMargin: Int64
    /// Whether the base is the engine's own (else the caller's: no thread of ours, and the base
    /// is left alone).
    let ownsBase: Bool
    let lifecycle: SemaphoreGuarded<EngineLifecycle>
    /// Test seam: the libevent failure this engine's wall calls pretend at the next chance.
    let faults = InjectedFaults()
    /// Entered while libevent may still call the engine: while the own loop thread runs, or while
    /// the events are on the caller's base. Empty once libevent is done with the service.
    let finished = DispatchGroup()

    /// How long a ``stop()`` waits for a caller's loop to take the events off its base. A
    /// running loop does it as soon as its current callback returns; a loop that does not run
    /// (stopped, or not started) never does, and the events then stay on the base, still
    /// allocated, until it runs again (see `PreciseTimer.init(eventBase:configuration:)`).
    static let detachBound: DispatchTimeInterval = .seconds(2)

    /// Builds a base of its own and starts the loop thread.
    ///
    /// - Throws: ``PreciseTimerError/Code/systemFailure`` when a descriptor (timerfd, the
    ///   descriptors libevent needs) or the thread cannot be had (`SCHED_FIFO` without
    ///   permission, say); ``PreciseTimerError/Code/libeventFailure`` when libevent cannot
    ///   build an epoll base or add the events.
    init(core: TimerCore, waker: EventFDWaker, configuration: PreciseTimer.Configuration) throws(PreciseTimerError) {
        self.core = core
        self.waker = waker
        self.spinMargin = configuration.spinMargin.timerNanoseconds ?? 0
        self.ownsBase = true
        self.lifecycle = SemaphoreGuarded(EngineLifecycle(ownsBase: true))
        let base = try PrivateTableBuild.makePreciseBase(like: waker.fd)
        do {
            self.clocks = try EngineClocks(clockSource: waker)
        } catch {
            base.free()
            throw error
        }
        self.base = base
        self.alarm = LibeventEvent.allocate()
        self.doorbell = LibeventEvent.allocate()
        do {
            try self.addEvents()
            try self.startLoopThread(configuration)
        } catch {
            self.freeEvents()
            self.base.free()
            throw error
        }
    }

    /// Puts the service's events on a caller's base and starts no thread: the caller's loop runs
    /// the timers. Call it on the thread that drives the base.
    ///
    /// - Throws: ``PreciseTimerError/Code/invalidEventBase`` for a base that cannot keep the
    ///   service's precision (``LibeventBase/checkPrecision()``);
    ///   ``PreciseTimerError/Code/libeventFailure`` when the events cannot be added.
    init(
        core: TimerCore, waker: EventFDWaker, eventBase: OpaquePointer, configuration: PreciseTimer.Configuration
    ) throws(PreciseTimerError) {
        let base = LibeventBase(pointer: eventBase)
        try base.checkPrecision()
        self.base = base
        self.core = core
        self.waker = waker
        self.spinMargin = configuration.spinMargin.timerNanoseconds ?? 0
        self.ownsBase = false
        self.lifecycle = SemaphoreGuarded(EngineLifecycle(ownsBase: false))
        self.clocks = try EngineClocks(clockSource: waker)
        self.alarm = LibeventEvent.allocate()
        self.doorbell = LibeventEvent.allocate()
        do {
            try self.addEvents()
        } catch {
            self.freeEvents()
            throw error
        }
        // The events hold +1 on the engine while they are on the caller's base, since its loop
        // may call them after the service is gone (a shutdown that found the loop not running).
        // Released exactly once, by `detach()`.
        _ = Unmanaged.passRetained(self)
        self.finished.enter()
        // The loop's first pass serves the doorbell: from then on the loop thread is known.
        waker.wake()
    }

    /// Assigns the alarm and adds the read events.
    private func addEvents() throws(PreciseTimerError) {
        // Events get the engine unretained. Own base: the loop thread's closure holds +1 for as
        // long as it loops, and callbacks run only inside the loop. A caller's base: the events'
        // own +1 (see `init(core:waker:eventBase:configuration:)`).
        let context = Unmanaged.passUnretained(self).toOpaque()
        try self.alarm.assignTimer(on: self.base, alarmCallback, context)
        try self.doorbell.addPersistentRead(fd: self.waker.fd, on: self.base, doorbellCallback, context)
        try self.clocks.add(on: self.base, context: context, callback: clockCallback)
    }

    /// Deletes and frees every event (loop thread, or before the loop ever ran).
    func freeEvents() {
        for event in [self.alarm, self.doorbell] + self.clocks.events {
            event.delete()
            event.deallocate()
        }
    }

    // MARK: Stopping

    /// Whether libevent is done with the service (see ``finished``); never blocks.
    var hasStopped: Bool {
        self.finished.wait(timeout: .now()) == .success
    }

    /// Asks libevent to let go of the service (the core is closed first) and returns at once.
    func requestStop() {
        self.stop(waiting: false)
    }

    /// ``requestStop()``, then, unless called from a callback of the service, waits until
    /// libevent is done with it: for the own loop thread to have freed libevent, or for the
    /// caller's loop to take the events off its base, at most ``detachBound``.
    func stop() {
        self.stop(waiting: true)
    }

    private func stop(waiting: Bool) {
        let thread = ThreadIdentity.current
        let action = self.lifecycle.withLock { $0.stop(on: thread) }
        switch action {
        case .detachNow:
            self.detach()
        case .letTheCallbackFinish:
            self.waker.wake()  // An own loop breaks at the doorbell; a caller's detaches as it returns.
        case .ringAndWait(let bounded):
            self.waker.wake()
            guard waiting else { return }
            if bounded {
                _ = self.finished.wait(timeout: .now() + Self.detachBound)
            } else {
                self.finished.wait()
            }
        case .none:
            break
        }
    }

    /// Takes the events off the caller's base and frees them, then gives back their +1 on the
    /// engine. Loop thread only, exactly once (the lifecycle's `.stopped` decides it).
    private func detach() {
        self.freeEvents()
        self.finished.leave()
        // Balances the passRetained in `init(core:waker:eventBase:configuration:)`. Whoever
        // called in holds a reference of its own across this call (the trampoline, or the
        // service in `stop()`), so the engine outlives this method.
        Unmanaged.passUnretained(self).release()
    }

    /// In a forked child that runs a base it inherited (after `event_reinit`): takes the events
    /// off the child's copy of the base and reads nothing (the eventfd and timerfds are shared
    /// with the parent: a read here would steal the parent's wake-ups).
    private func leaveInheritedBase() {
        // One by one, allocating nothing: a forked child of a multithreaded process may not get
        // a lock (malloc's, the runtime's) that another thread of the parent held at the fork.
        self.alarm.delete()
        self.doorbell.delete()
        self.clocks.wallEvent.delete()
        self.clocks.continuousEvent.delete()
    }

    // MARK: Callbacks (loop thread)

    /// Every callback of the service runs `body` through the lifecycle.
    func callback(_ body: () -> Void) {
        let thread = ThreadIdentity.current
        let action = self.lifecycle.withLock {
            $0.callbackBegins(on: thread, inherited: self.core.isInherited)
        }
        switch action {
        case .run:
            body()
            if !self.ownsBase {
                let closed = self.core.isClosed
                if self.lifecycle.withLock({ $0.callbackEnds(coreClosed: closed) }) { self.detach() }
            }
        case .detach:
            self.detach()
        case .leaveInheritedBase:
            self.leaveInheritedBase()
        case .ignore:
            break
        }
    }

    /// The engine cannot go on: end every timer (their handlers are released; the core logs it)
    /// and make every later `schedule` throw `error`. A shutdown that came first keeps its reason.
    func fail(_ error: PreciseTimerError) {
        self.core.close(.failed(error))
        if self.ownsBase { self.base.loopBreak() }  // A caller's loop is not ours to break.
    }
}

// One trampoline per callback kind; `arg` is the engine, unretained (see `addEvents`). The
// local reference keeps it alive through the call, in which `detach()` may give back the +1
// that the events hold on a caller's base.

private func alarmCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.callback { engine.runTimers() } }
}

private func doorbellCallback(_: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.callback { engine.doorbellRang() } }
}

private func clockCallback(_ fd: Int32, _: Int16, _ arg: UnsafeMutableRawPointer?) {
    let engine = Unmanaged<LibeventEngine>.fromOpaque(arg!).takeUnretainedValue()
    withExtendedLifetime(engine) { engine.callback { engine.clockFired(fd: fd) } }
}
