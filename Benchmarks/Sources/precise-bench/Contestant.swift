/// The 1 ms periodic-timer contestants of the lateness section, in table order.
enum Contestant: String, CaseIterable, Sendable {
    /// `clock_nanosleep(TIMER_ABSTIME)` in a C loop: the reference floor.
    case floorNanosleep = "kernel floor: clock_nanosleep"
    /// A blocking read of a timerfd armed at absolute deadlines, in C.
    case floorTimerfd = "kernel floor: timerfd read"
    /// `epoll_wait` on such a timerfd, in C: libevent's sleep without libevent.
    case floorEpoll = "kernel floor: epoll + timerfd"
    /// `PreciseTimer()` with the default configuration.
    case precise = "PreciseTimer"
    /// `PreciseTimer` with a spin-finish margin.
    case preciseSpin = "PreciseTimer spin-finish"
    /// `PreciseTimer` whose loop thread runs under `SCHED_FIFO`.
    case preciseRealtime = "PreciseTimer SCHED_FIFO"
    /// `DispatchReferenceTimer()`: the same API and scheduling core on one `DispatchSourceTimer` alarm.
    case dispatch = "DispatchReferenceTimer"
    /// `Task.sleep(until:clock: timers.clock)` on a `PreciseTimer`, re-armed at absolute
    /// deadlines by one task: the async clock, one task resumption on top of the service.
    case preciseClock = "PreciseTimer TimerClock (Task.sleep)"
    /// `Task.sleep(until:clock: .continuous)` at the same absolute deadlines: the standard clock.
    case continuousClock = "ContinuousClock (Task.sleep)"
    /// A raw repeating `DispatchSourceTimer` (``GCDTimers``), zero leeway: idiomatic Dispatch,
    /// the reference of the `×GCD` column.
    case gcd = "GCD DispatchSourceTimer"
    /// SwiftNIO `scheduleTask(deadline:)`, re-armed at absolute deadlines from the task.
    case nioScheduleTask = "NIO scheduleTask (absolute)"
    /// SwiftNIO `scheduleRepeatedTask`: fixed delay between runs.
    case nioRepeatedTask = "NIO scheduleRepeatedTask"
    /// Foundation's `Timer` on its own thread's `RunLoop`.
    case foundation = "Foundation Timer (RunLoop)"

    /// The kernel-floor loops.
    var isFloor: Bool {
        switch self {
        case .floorNanosleep, .floorTimerfd, .floorEpoll: true
        default: false
        }
    }

    /// The name shown in the table.
    func label(_ plan: BenchPlan) -> String {
        switch self {
        case .preciseSpin: "\(self.rawValue) \(plan.spinMargin.formatted)"
        case .preciseRealtime: "\(self.rawValue) \(plan.realtimePriority)"
        default: self.rawValue
        }
    }
}
