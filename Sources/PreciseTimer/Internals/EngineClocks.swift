import Glibc
import PreciseTimerCore
import Synchronization

/// The engine's watch over the clocks libevent does not keep: a ``ClockTimerFD`` on
/// `CLOCK_REALTIME` and one on `CLOCK_BOOTTIME`, each a persistent read event on the base, armed
/// at the earliest deadline of the timers bound to that clock (see `ClockBinding` in the core).
///
/// When either fires, or the wall clock is stepped or the machine resumes (`ECANCELED`), the
/// core re-estimates its bound timers and the loop runs what became due. Nothing polls: with a
/// daily timer pending, the loop sleeps until the day comes.
final class EngineClocks: @unchecked Sendable {
    // Invariant: the events and the armed state are touched on the loop thread only (after
    // `init`; the engine deletes and frees the events with its own); `injected` is an atomic.

    let wall: ClockTimerFD
    let continuous: ClockTimerFD
    let wallEvent: LibeventEvent
    let continuousEvent: LibeventEvent
    /// The engine's clocks, whose test seam may read them ahead of or behind the machine's.
    private let clockSource: EventFDWaker
    /// The core's `boundVersion` the timerfds were last armed for; `nil`: arm at the next pass.
    private var armedVersion: UInt64?
    /// The deadlines each timerfd is armed at (`nil`: the far future); a re-arm to the same
    /// deadline makes no system call.
    private var armedWall: Int64?? = .none
    private var armedContinuous: Int64?? = .none
    /// Test seam: a clock change to report at the loop's next pass, as if a read had failed with
    /// `ECANCELED` (see ``injectClockChange()``).
    private let injected = Atomic<Bool>(false)

    /// - Throws: ``PreciseTimerError/Code/systemFailure`` when a timerfd cannot be created.
    init(clockSource: EventFDWaker) throws(PreciseTimerError) {
        self.clockSource = clockSource
        self.wall = try ClockTimerFD(.wall)
        self.continuous = try ClockTimerFD(.continuous)
        // After the last step that can throw: nothing here frees them (the engine does).
        self.wallEvent = LibeventEvent.allocate()
        self.continuousEvent = LibeventEvent.allocate()
    }

    /// Both read events, for the engine to delete and free with its own.
    var events: [LibeventEvent] { [self.wallEvent, self.continuousEvent] }

    /// Puts both read events on `base` (`context` is the engine, as for its other events).
    func add(
        on base: LibeventBase, context: UnsafeMutableRawPointer, callback: LibeventEvent.Callback
    ) throws(PreciseTimerError) {
        try self.wallEvent.addPersistentRead(fd: self.wall.fd, on: base, callback, context)
        try self.continuousEvent.addPersistentRead(fd: self.continuous.fd, on: base, callback, context)
    }

    /// What a readable timerfd says (loop thread).
    enum Served {
        /// Its deadline passed: run what is due; if the timer it was armed for did not fire from
        /// its monotonic estimate, call ``expiredUnanswered(core:)``.
        case expired
        /// The clock changed and the core re-estimated: run what is due.
        case clockChanged
        /// Nothing to do.
        case none
    }

    /// A timerfd was readable (loop thread).
    func serve(fd: Int32, core: TimerCore) -> Served {
        let timer = fd == self.wall.fd ? self.wall : self.continuous
        switch timer.read() {
        case .expired:
            // Usually the monotonic alarm fires the timer at the same pass: a rebase (a walk over
            // every bound timer) is needed only when the estimate lagged the clock.
            // An expired timerfd is disarmed: arm it again at the loop's next pass.
            if timer === self.wall { self.armedWall = .none } else { self.armedContinuous = .none }
            self.armedVersion = nil
            return .expired
        case .clockChanged:
            self.clockChanged(core)
            return .clockChanged
        case .none:
            return .none
        }
    }

    /// The deadline a timerfd was armed for passed but no bound timer fired from its estimate
    /// (NTP's slewing made the estimate late): re-estimate, so the timer is due now.
    func expiredUnanswered(core: TimerCore) {
        core.rebase()
    }

    /// The loop's doorbell rang: reports an injected clock change (tests only).
    func serveInjected(core: TimerCore) {
        if self.injected.exchange(false, ordering: .acquiring) { self.clockChanged(core) }
    }

    /// The wall clock was stepped or the machine resumed: re-estimate everything, re-arm (a
    /// cancelled wall-clock timerfd stays cancelled until armed again).
    private func clockChanged(_ core: TimerCore) {
        core.rebase()
        self.armedVersion = nil
        self.armedWall = .none
        self.armedContinuous = .none
    }

    /// After a pass of the loop: re-arms the timerfds when a bound timer came, went or moved.
    ///
    /// - Returns: 0, or the `errno` of a failed `timerfd_settime`.
    func rearm(core: TimerCore) -> Int32 {
        let version = core.boundVersion
        guard version != self.armedVersion else { return 0 }
        self.armedVersion = version
        let (wall, continuous) = core.earliestBoundDeadlines()
        // The deadlines are on the engine's clocks; the timerfds count on the machine's. A step
        // of the seam's wall clock moves what the timerfd waits for too: armed at the engine's
        // reading, a deadline stepped back into the machine's past would expire at every pass,
        // and the loop would spin until the engine's clock reached it.
        let offsets = self.clockSource.clockOffsets
        if self.armedWall != .some(wall) {
            let rc = self.wall.arm(at: wall.map { Self.machineReading($0, offset: offsets.wall) })
            guard rc == 0 else { return rc }
            self.armedWall = .some(wall)
        }
        if self.armedContinuous != .some(continuous) {
            let rc = self.continuous.arm(at: continuous.map { Self.machineReading($0, offset: offsets.continuous) })
            guard rc == 0 else { return rc }
            self.armedContinuous = .some(continuous)
        }
        return 0
    }

    /// `deadline` on the engine's clock, read on the machine's (saturating).
    private static func machineReading(_ deadline: Int64, offset: Int64) -> Int64 {
        let (reading, overflow) = deadline.subtractingReportingOverflow(offset)
        guard overflow else { return reading }
        return offset > 0 ? .min : .max
    }

    /// Makes the loop act at its next pass as if the wall clock had been stepped or the machine
    /// had resumed (tests only: the engine's wall and continuous clocks can be offset through
    /// the waker's seam first). The caller rings the doorbell.
    func injectClockChange() {
        self.injected.store(true, ordering: .releasing)
    }
}
