import Logging
import PreciseTimerCore

extension PreciseTimer {
    /// How a ``PreciseTimer`` runs its thread. The defaults suit most daemons; the precision
    /// options trade CPU or privileges for lower lateness.
    public struct Configuration: Sendable {
        /// The loop thread's name, as `top -H` and debuggers show it. At most 15 UTF-8 bytes (the
        /// kernel's limit).
        public var threadName: String
        /// Spin finish: wake this much before each deadline and busy-wait on the clock until it.
        ///
        /// Cuts lateness from the kernel's wake-up latency (tens of microseconds on a VM) to a
        /// few microseconds, at the cost of up to this much CPU per fire. `.zero` (the default)
        /// sleeps until the deadline. At most 10 ms.
        ///
        /// A spin never holds the loop: it ends at once when another thread schedules, cancels
        /// or shuts down (so an earlier timer is not kept waiting), and the loop passes through
        /// libevent between two spun fires, even when the margin covers a whole period.
        public var spinMargin: Duration
        /// Run the loop thread under `SCHED_FIFO` with this priority (1...99). Needs
        /// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` allowance; without it ``PreciseTimer/init(configuration:)``
        /// throws ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` (`pthread_create`, `EPERM`), so a daemon
        /// can retry without it. `nil` (the default) keeps the normal policy.
        public var realtimePriority: Int32?
        /// Pin the loop thread to this CPU index. `nil` (the default) lets it float.
        public var cpuAffinity: Int?
        /// The loop thread's timer slack (`PR_SET_TIMERSLACK`). It applies only to sleeps that go
        /// through a plain timeout (`epoll_wait`, `nanosleep`); this engine sleeps on a timerfd,
        /// which slack does not delay, so it matters only if libevent had to fall back. `nil`
        /// keeps the kernel's default (50 µs).
        public var timerSlack: Duration?
        /// Where the service logs. By default a logger that drops everything: a library never
        /// logs unasked, and the service never bootstraps `LoggingSystem`.
        ///
        /// The service captures this logger when it is created (its loop thread cannot see the
        /// task-local `Logger.current`) and never logs under its registry's lock. What it logs,
        /// with metadata keys under `timer.`:
        /// - `debug`: the service started (`timer.thread`) and shut down.
        /// - `debug`: a tick that missed periods (`timer.id`, `timer.missed`, `timer.lateness`).
        /// - `warning`: a ``/PreciseTimerCore/TimerExecutor/loop`` handler that ran longer than ``stallThreshold``
        ///   (`timer.id`, `timer.duration`, `timer.threshold`): it delayed every other timer.
        /// - `error`: libevent or the system failed under the running service, which then ends
        ///   every timer (`timer.function`, `timer.return_code`, `timer.errno`, and the error).
        ///
        /// Missed-tick lines and stall warnings are rate-limited, each to 10 lines per second; a
        /// line written after some were dropped says how many in `timer.suppressed`. Whether to
        /// time `.loop` handlers at all is decided from the logger's level when the service is
        /// created (a logger that shows no warnings costs no clock read per fire). Failures of
        /// `init` are thrown, not logged. Nothing is logged per tick on time.
        public var logger: Logger
        /// How long a ``/PreciseTimerCore/TimerExecutor/loop`` handler may run before the service logs a warning.
        ///
        /// Such a handler holds the loop thread, so every timer due meanwhile fires at least that
        /// late. The default, 1 ms, is some 20 times the engine's own lateness on an idle machine
        /// (tens of microseconds), and long enough that ordinary handlers never trip it; move
        /// slow work to ``/PreciseTimerCore/TimerExecutor/queue(_:)``. Must be greater than zero.
        public var stallThreshold: Duration
        /// Where the service records its events for metrics (see ``/PreciseTimerCore/TimerMetricsRecorder``), or
        /// `nil` (the default) for no metrics, at the cost of one optional check per schedule,
        /// cancel and fire. The `PreciseTimerMetrics` product provides one on swift-metrics.
        public var metrics: (any TimerMetricsRecorder)?
        /// How long the service-lifecycle adapter's `run()` waits for handlers still running
        /// when it shuts the service down (``PreciseTimer/shutdown(gracePeriod:)``). 5 seconds by
        /// default; not negative (``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration``); `.zero`
        /// waits for nothing.
        ///
        /// Task cancellation does not shorten the wait, so a `ServiceGroup` whose
        /// `maximumGracefulShutdownDuration` runs out still waits up to this long for the
        /// timers: keep the sum of the two below the service manager's stop timeout, and a group's
        /// `maximumCancellationDuration`, if set, above this.
        public var shutdownGracePeriod: Duration

        /// Creates a configuration.
        /// - Parameters:
        ///   - threadName: The loop thread's name (at most 15 UTF-8 bytes).
        ///   - spinMargin: How long before a deadline to start spinning; `.zero` for never.
        ///   - realtimePriority: `SCHED_FIFO` priority 1...99, or `nil`.
        ///   - cpuAffinity: CPU index to pin the loop thread to, or `nil`.
        ///   - timerSlack: The loop thread's timer slack, or `nil` for the default.
        ///   - logger: Where the service logs; by default nowhere.
        ///   - stallThreshold: How long a `.loop` handler may run before a warning; greater than zero.
        ///   - metrics: Where the service records metrics, or `nil` for none.
        ///   - shutdownGracePeriod: How long the service-lifecycle `run()` waits for handlers still
        ///     running when it shuts the service down; not negative.
        public init(
            threadName: String = "PreciseTimer", spinMargin: Duration = .zero,
            realtimePriority: Int32? = nil, cpuAffinity: Int? = nil, timerSlack: Duration? = nil,
            logger: Logger = Logger(label: "PreciseTimer", factory: { _ in SwiftLogNoOpLogHandler() }),
            stallThreshold: Duration = .milliseconds(1), metrics: (any TimerMetricsRecorder)? = nil,
            shutdownGracePeriod: Duration = .seconds(5)
        ) {
            self.threadName = threadName
            self.spinMargin = spinMargin
            self.realtimePriority = realtimePriority
            self.cpuAffinity = cpuAffinity
            self.timerSlack = timerSlack
            self.logger = logger
            self.stallThreshold = stallThreshold
            self.metrics = metrics
            self.shutdownGracePeriod = shutdownGracePeriod
        }

        func validate() throws(PreciseTimerError) {
            func invalid(_ field: String, _ value: Any) -> PreciseTimerError {
                PreciseTimerError(.invalidConfiguration, value: "\(field) = \(value)")
            }
            guard !self.threadName.isEmpty, self.threadName.utf8.count <= 15, !self.threadName.utf8.contains(0) else {
                throw invalid("threadName", "\"\(self.threadName)\" (1 to 15 UTF-8 bytes)")
            }
            guard let spin = self.spinMargin.timerNanoseconds, spin <= 10_000_000 else {
                throw invalid("spinMargin", "\(self.spinMargin) (0 to 10 ms)")
            }
            if let priority = self.realtimePriority, !(1...99).contains(priority) {
                throw invalid("realtimePriority", "\(priority) (1...99)")
            }
            if let cpu = self.cpuAffinity, !(0..<1024).contains(cpu) {
                throw invalid("cpuAffinity", "\(cpu) (0..<1024)")
            }
            if let slack = self.timerSlack, slack.timerNanoseconds == nil || slack == .zero {
                throw invalid("timerSlack", "\(slack) (greater than zero)")
            }
            guard self.stallThreshold.timerNanoseconds != nil, self.stallThreshold > .zero else {
                throw invalid("stallThreshold", "\(self.stallThreshold) (greater than zero)")
            }
            guard self.shutdownGracePeriod >= .zero else {
                throw invalid("shutdownGracePeriod", "\(self.shutdownGracePeriod) (not negative)")
            }
        }

        /// On a caller's base there is no thread of the service's own to apply these to, and
        /// silently ignoring them would hide a mistake.
        func validateForCallersThread() throws(PreciseTimerError) {
            for (field, value) in [
                ("realtimePriority", self.realtimePriority.map { "\($0)" }),
                ("cpuAffinity", self.cpuAffinity.map { "\($0)" }),
                ("timerSlack", self.timerSlack.map { "\($0)" }),
            ] {
                if let value {
                    throw PreciseTimerError(
                        .invalidConfiguration,
                        value: "\(field) = \(value) (nil with an eventBase: the caller's thread runs the timers)")
                }
            }
        }

        var schedulingDescription: String {
            var parts: [String] = []
            if let priority = self.realtimePriority { parts.append("SCHED_FIFO priority \(priority)") }
            if let cpu = self.cpuAffinity { parts.append("CPU \(cpu)") }
            return parts.isEmpty ? "default scheduling" : parts.joined(separator: ", ")
        }
    }
}
