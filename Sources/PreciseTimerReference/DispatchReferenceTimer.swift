import Dispatch
import PreciseTimerCore

/// The ``TimerService`` API on Dispatch: the reference the libevent engine is measured and tested
/// against.
///
/// It runs the same scheduling core as `PreciseTimer` (the semaphore-guarded registry and
/// deadline heap, so the same ordering, missed-tick policies, errors and cancel guarantee) on
/// Dispatch's engine instead of libevent's: one `DispatchSourceTimer`, armed at the earliest
/// deadline, on one serial queue. The conformance suite runs every scenario against both, so
/// what it compares is the engine: wake-up precision, threads, queue hops and shutdown.
///
/// ```swift
/// let timers = DispatchReferenceTimer()
/// try timers.scheduleRepeating(id: "tick", every: .milliseconds(1)) { tick in … }
/// ```
///
/// Why not one `DispatchSourceTimer` per timer, the classic GCD wrapper? That is what this type
/// once was: it cannot order timers due at the same instant (Dispatch does not), pausing a
/// repeating source needs `suspend`/`resume` pairs that trap when unbalanced (libdispatch's
/// "over-resume" crash), and every timer costs a kernel-visible source. The
/// benchmark still measures raw per-timer sources as their own contestant.
///
/// - Important: handlers on ``TimerExecutor/loop`` run on the service's serial queue and must not
///   block it.
///
/// ## Fork safety
///
/// libdispatch does not survive `fork()`: in a child process, a `DispatchReferenceTimer` (one
/// inherited from the parent, or one created in the child after the parent used Dispatch)
/// never fires. Create timers in the child only after `exec`, or use `PreciseTimer`, which
/// refuses to run in a process other than the one that created it.
public final class DispatchReferenceTimer: TimerCoreService {
    package let core: TimerCore
    /// ``core``, unretained (see ``TimerCoreService/coreReference``).
    package var coreReference: Unmanaged<TimerCore> { .passUnretained(self.core) }
    package let units: TimerUnitTable
    private let alarm: DispatchAlarm

    /// Creates the service.
    /// - Parameter queue: The queue the alarm and ``TimerExecutor/loop`` handlers run on: a
    ///   serial queue of its own that targets `queue` (so a concurrent queue given here never
    ///   runs two ``TimerExecutor/loop`` handlers at once).
    public init(queue: DispatchQueue? = nil) {
        let alarm = DispatchAlarm(queue: DispatchQueue(label: "DispatchReferenceTimer", target: queue))
        self.alarm = alarm
        self.core = TimerCore(doorbell: alarm)
        self.units = TimerUnitTable(startedAt: self.core.now)
        alarm.start(driving: self.core)
    }

    deinit {
        self.shutdown()
    }

    /// The engine's part of ``TimerService/shutdown()``: stops the alarm. It never waits, so a
    /// shutdown is safe from any handler; a handler already running on another queue may finish.
    package func stopEngine() {
        self.alarm.stop()
    }
}
