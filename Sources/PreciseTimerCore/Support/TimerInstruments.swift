import Logging

/// What a service tells its logger and its ``TimerMetricsRecorder``: ``TimerCore`` calls one of
/// these hooks at each event, always after releasing the registry's lock.
///
/// Off, each hook is one optional check (metrics) or one comparison on a value already at hand
/// (a missed count, a cached threshold), so a service without logging or metrics pays nothing
/// measurable. Two log lines can repeat at the timers' rate (a handler that stalls the loop,
/// missed ticks), so each goes through a ``LogRateLimiter``.
package final class TimerInstruments: Sendable {
    /// No logging, no metrics: what the virtual-time and the Dispatch services use.
    package static let disabled = TimerInstruments(
        logger: TimerInstruments.silentLogger, metrics: nil, stallThreshold: nil)

    /// A logger that drops everything (the configuration's default: a library never logs unasked).
    package static let silentLogger = Logger(label: "PreciseTimer", factory: { _ in SwiftLogNoOpLogHandler() })

    /// How many stall warnings, and how many missed-tick lines, a service writes per second at
    /// most; the lines it suppresses are counted in the next one it writes (`timer.suppressed`).
    package static let linesPerSecond = 10

    package let logger: Logger
    package let metrics: (any TimerMetricsRecorder)?
    /// In nanoseconds; `nil` when the logger writes no warnings (read once, here: the check
    /// costs a clock read per fire, so a service whose logger cannot show it skips it).
    private let stallThreshold: Int64?
    private let stallLines = LogRateLimiter(linesPerSecond: TimerInstruments.linesPerSecond)
    private let missedTickLines = LogRateLimiter(linesPerSecond: TimerInstruments.linesPerSecond)

    /// - Parameters:
    ///   - logger: Where the service logs.
    ///   - metrics: Where the service records its events, or `nil` for no metrics.
    ///   - stallThreshold: Warn when a ``TimerExecutor/loop`` handler runs longer than this;
    ///     `nil` never warns.
    package init(logger: Logger, metrics: (any TimerMetricsRecorder)?, stallThreshold: Duration?) {
        self.logger = logger
        self.metrics = metrics
        if let threshold = stallThreshold?.timerNanoseconds, logger.logLevel <= .warning {
            self.stallThreshold = threshold
        } else {
            self.stallThreshold = nil
        }
    }

    // MARK: Hooks (TimerCore, outside the lock)

    /// A valid timer is about to be registered (before it is visible: see
    /// ``TimerMetricsRecorder/timerScheduled()``).
    @inline(__always)
    package func scheduled() {
        self.metrics?.timerScheduled()
    }

    /// The registry refused the timer of the last ``scheduled()`` on this thread.
    @inline(__always)
    package func refused() {
        self.metrics?.timerScheduleRefused()
    }

    /// The loop woke and ran timers.
    @inline(__always)
    package func wokeUp() {
        self.metrics?.loopWokeUp()
    }

    /// `count` timers were cancelled (none when `count` is 0).
    @inline(__always)
    package func cancelled(_ count: Int) {
        if count > 0 { self.metrics?.timersCancelled(count) }
    }

    /// `count` timers ended by shutdown, failure or the clock's range (none when `count` is 0).
    @inline(__always)
    package func ended(_ count: Int) {
        if count > 0 { self.metrics?.timersEnded(count) }
    }

    /// A call begins: right before the handler, so a handler (or a test it signals) already sees
    /// its fire counted.
    @inline(__always)
    package func willCall(_ fire: ShardState.Fire, firedAt: Int64) {
        guard let metrics = self.metrics else { return }
        let lateness = max(0, firedAt - fire.scheduledAt)
        metrics.timerFired(
            latenessNanoseconds: lateness, excessLatenessNanoseconds: max(0, lateness - fire.node.coalescing),
            missed: fire.missed, ended: !fire.node.repeats)
    }

    /// ``willCall(_:firedAt:)`` for a plain one-shot (``ShardState/PlainFire``): no tolerance,
    /// no missed ticks, and the call ends it.
    @inline(__always)
    package func willCall(plainScheduledAt scheduledAt: Int64, firedAt: Int64) {
        guard let metrics = self.metrics else { return }
        let lateness = max(0, firedAt - scheduledAt)
        metrics.timerFired(latenessNanoseconds: lateness, excessLatenessNanoseconds: lateness, missed: 0, ended: true)
    }

    /// The handler returned: log missed ticks and a stall now, after the call, so logging never
    /// delays a handler.
    ///
    /// - Parameter clock: Read once, only to time a ``TimerExecutor/loop`` handler when the
    ///   stall warning is on.
    @inline(__always)
    package func didCall(_ fire: ShardState.Fire, firedAt: Int64, clock: any TimerDriver) {
        if fire.missed > 0 {
            self.logMissedTicks(fire, firedAt: firedAt)
        }
        if fire.node.queue == nil {
            self.didCallOnLoop(fire.node, firedAt: firedAt, clock: clock)
        }
    }

    /// ``didCall(_:firedAt:clock:)`` for a handler that ran on the loop and missed no tick:
    /// the stall warning alone.
    @inline(__always)
    package func didCallOnLoop(_ node: TimerNode, firedAt: Int64, clock: any TimerDriver) {
        if let threshold = self.stallThreshold {
            let returnedAt = clock.now()
            if returnedAt - firedAt > threshold {
                self.logStall(node.id, ran: returnedAt - firedAt, threshold: threshold, at: returnedAt)
            }
        }
    }

    // MARK: Log lines

    private func logMissedTicks(_ fire: ShardState.Fire, firedAt: Int64) {
        guard self.logger.logLevel <= .debug, let suppressed = self.missedTickLines.admit(at: firedAt) else { return }
        var metadata: Logger.Metadata = [
            "timer.id": "\(fire.node.id)",
            "timer.missed": "\(fire.missed)",
            "timer.lateness": "\(Duration.nanoseconds(max(0, firedAt - fire.scheduledAt)))",
        ]
        if suppressed > 0 { metadata["timer.suppressed"] = "\(suppressed)" }
        self.logger.debug("Timer missed ticks", metadata: metadata)
    }

    private func logStall(_ id: TimerID, ran: Int64, threshold: Int64, at now: Int64) {
        guard let suppressed = self.stallLines.admit(at: now) else { return }
        var metadata: Logger.Metadata = [
            "timer.id": "\(id)",
            "timer.duration": "\(Duration.nanoseconds(ran))",
            "timer.threshold": "\(Duration.nanoseconds(threshold))",
        ]
        if suppressed > 0 { metadata["timer.suppressed"] = "\(suppressed)" }
        self.logger.warning(
            "Timer handler stalled the loop thread: every other timer waited for it", metadata: metadata)
    }

    /// A calendar timer ended because its schedule answered `answered` when asked for the
    /// occurrence after `asked` (for a catch-up, `answered` is the latest occurrence it gave,
    /// not after `asked` or past the wall clock): one error line (rare by nature: a timer ends
    /// with it) and the metric.
    package func scheduleBroke(
        _ id: TimerID, schedule: (any WallClockSchedule)?, asked: Int64, answered: Int64
    ) {
        self.metrics?.timerScheduleBroke()
        let error = PreciseTimerError(
            .invalidSchedule, id: id, value: schedule.map { "\($0)" },
            detail:
                "asked for the occurrence after \(WallClockInstant(nanosecondsSinceEpoch: asked)), it answered "
                + "\(WallClockInstant(nanosecondsSinceEpoch: answered)), less than the minimum interval later: the timer ended"
        )
        self.logger.error(
            "Timer ended: its wall-clock schedule does not advance", error: error, metadata: ["timer.id": "\(id)"])
    }

    /// The core closed (its timers are ended): a debug line for a shutdown, one error line for
    /// an engine failure.
    package func closed(_ reason: ShardState.End) {
        switch reason {
        case .shutDown: self.logger.debug("Timer service shut down")
        case .failed(let error): self.engineFailed(error)
        }
    }

    /// The engine failed under a running service (every timer has been ended): one error line.
    private func engineFailed(_ error: PreciseTimerError) {
        var metadata: Logger.Metadata = [:]
        if let function = error.function { metadata["timer.function"] = "\(function)" }
        if let returnCode = error.returnCode { metadata["timer.return_code"] = "\(returnCode)" }
        if let errno = error.errno { metadata["timer.errno"] = "\(errno)" }
        self.logger.error(
            "Timer engine failed: every timer ended, and the service schedules nothing more", error: error,
            metadata: metadata)
    }
}
