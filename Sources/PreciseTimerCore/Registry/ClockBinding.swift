/// What ties a timer to a clock other than the core's monotonic one: the continuous clock
/// (`CLOCK_BOOTTIME`) or the wall clock (`CLOCK_REALTIME`), and for a calendar timer its schedule.
///
/// The core keeps one heap, on the monotonic clock. A bound timer sits in it at an *estimate*:
/// where its deadline falls on the monotonic clock, as far as the clocks' offset is known now.
/// The estimate goes stale when the offset changes: a suspend moves the continuous and wall
/// clocks but not the monotonic one, a step (NTP, `settimeofday`) moves the wall clock alone, and
/// NTP's slewing makes the wall clock run up to 0.05 % off. So the estimate is never trusted to
/// fire: when it comes due, the registry reads the timer's own clock and fires only if that
/// reached the deadline, else moves the estimate (``ShardState``'s `next`); and ``TimerCore``'s
/// `rebase` re-estimates every bound timer when the engine sees the offset change (its timerfds
/// on `CLOCK_REALTIME` with `TFD_TIMER_CANCEL_ON_SET` and on `CLOCK_BOOTTIME`, or a virtual step).
package final class ClockBinding: @unchecked Sendable {
    // Invariant: `anchor` is read and written only under the timer's shard semaphore, like
    // `TimerNode`'s vars.

    package enum Kind: UInt8, Sendable {
        /// `CLOCK_BOOTTIME`: true deadline = node deadline + `anchor`.
        case continuous
        /// `CLOCK_REALTIME`: true deadline = `anchor`, the occurrence.
        case wall
    }

    package let kind: Kind
    /// Continuous: the offset `CLOCK_BOOTTIME − CLOCK_MONOTONIC` the node's deadline was
    /// estimated with. Wall: the occurrence (nanoseconds since the epoch) the deadline estimates.
    package var anchor: Int64
    /// A calendar timer's schedule: after each call, the next occurrence comes from it.
    package let schedule: (any WallClockSchedule)?
    /// Whether it has a ``schedule``: a stored flag, because testing the optional existential
    /// copies and destroys it (a value-witness call), and the loop asks this for every fire.
    package let isCalendar: Bool
    /// For a calendar timer: what ``anchor`` holds, and what the loop does when the timer comes
    /// due. The schedule is user code, so the registry never asks it under the lock: it takes
    /// the timer, the loop asks the schedule, and the registry commits the answer (checking the
    /// timer's epoch, as a queue hop does).
    package var phase: Phase = .occurrence

    package enum Phase: UInt8, Sendable {
        /// ``anchor`` is the occurrence the next call answers.
        case occurrence
        /// A reschedule moved the next call: ``anchor`` is where that call falls on the wall
        /// clock, and the call answers no occurrence (its tick's `wallClockDeadline` is `nil`).
        /// After it, the schedule goes on with its first occurrence after the instant the call
        /// was due.
        case moved
        /// Resumed from a pause: before anything else, the loop asks the schedule for its first
        /// occurrence after the wall clock's now (the occurrences passed while paused get no call).
        case resumed
        /// The wall clock was stepped back by more than ``ClockBinding/offsetNoise``: before
        /// anything else, the loop checks whether two occurrences now lie before ``anchor``.
        /// Then the clock had been wrong by more than a period, and the schedule starts afresh
        /// from the new time; otherwise the timer keeps its occurrence (an occurrence already
        /// called is never called again).
        case stepped
    }

    package init(kind: Kind, anchor: Int64, schedule: (any WallClockSchedule)? = nil) {
        self.kind = kind
        self.anchor = anchor
        self.schedule = schedule
        self.isCalendar = schedule != nil
    }

    /// The three clocks read together (monotonic first), for one decision about a bound timer.
    package struct Readings {
        package let monotonic: Int64
        package let continuous: Int64
        package let wall: Int64

        package init(monotonic: Int64, continuous: Int64, wall: Int64) {
            self.monotonic = monotonic
            self.continuous = continuous
            self.wall = wall
        }

        /// Reads the continuous and wall clocks as they stood at `monotonic`, a reading of the
        /// driver's monotonic clock just taken. Two clocks cannot be read at one instant, and a
        /// thread preempted between two reads (a loaded machine) would make their offset look
        /// changed by the preemption: so each is read between two monotonic reads, the tightest of
        /// a few tries is kept, and the reading is carried back to `monotonic` by the time that
        /// passed since.
        package init(_ driver: any TimerDriver, monotonic: Int64) {
            func bracketed(_ read: () -> Int64) -> Int64 {
                var best: (width: Int64, value: Int64) = (.max, 0)
                for _ in 0..<4 {
                    let before = driver.now()
                    let value = read()
                    let after = driver.now()
                    let width = after &- before
                    if width < best.width {
                        // The clock's reading at the middle of the bracket, carried back to `monotonic`.
                        best = (width, value &- (before &+ width / 2 &- monotonic))
                    }
                    if width <= 20_000 { break }
                }
                return best.value
            }
            self.init(
                monotonic: monotonic, continuous: bracketed(driver.continuousNow), wall: bracketed(driver.wallClockNow))
        }
    }

    /// Whether the timer's own clock has reached its deadline, and the monotonic estimate of that
    /// deadline as the clocks stand now (for the continuous clock, the offset is updated too).
    ///
    /// Two clocks cannot be read at one instant, so an offset read now differs from the last by
    /// the time between the reads even when neither clock moved against the other. The continuous
    /// clock's offset is therefore taken as changed only beyond ``offsetNoise``: below it the
    /// estimate is exact (both clocks run at one rate while the machine is awake), and any real
    /// suspend is far longer.
    package func resolve(estimate: Int64, _ clocks: Readings) -> (due: Bool, estimate: Int64) {
        switch self.kind {
        case .continuous:
            let offset = clocks.continuous &- clocks.monotonic
            guard abs(saturatingSubtract(offset, self.anchor)) > Self.offsetNoise else {
                return (estimate <= clocks.monotonic, estimate)
            }
            let deadline = saturatingAdd(estimate, self.anchor)
            self.anchor = offset
            let moved = saturatingSubtract(deadline, offset)
            return (moved <= clocks.monotonic, moved)
        case .wall:
            // Clamped like every validated deadline, so the registry's arithmetic on it cannot
            // overflow whatever step the wall clock took.
            let limit = TimerLimits.maximumNanoseconds
            let distance = min(max(saturatingSubtract(self.anchor, clocks.wall), -limit), limit)
            return (distance <= 0, clocks.monotonic + distance)
        }
    }

    /// How far apart two readings of the continuous clock's offset may be without a suspend
    /// between them: 1 ms.
    package static let offsetNoise: Int64 = 1_000_000

    /// Re-targets the timer at monotonic `deadline` (a reschedule or a resume), moving its
    /// deadline on its own clock by the same amount.
    package func retarget(to deadline: Int64, _ clocks: Readings) {
        switch self.kind {
        case .continuous: self.anchor = clocks.continuous &- clocks.monotonic
        case .wall:
            self.anchor = saturatingAdd(clocks.wall, saturatingSubtract(deadline, clocks.monotonic))
            if self.isCalendar { self.phase = .moved }
        }
    }
}

/// `lhs + rhs`, clamped to `Int64`'s range instead of trapping (clock differences after an
/// absurd step can be anything).
@inline(__always)
package func saturatingAdd(_ lhs: Int64, _ rhs: Int64) -> Int64 {
    let (sum, overflow) = lhs.addingReportingOverflow(rhs)
    guard overflow else { return sum }
    return rhs < 0 ? .min : .max
}

/// `lhs - rhs`, clamped to `Int64`'s range instead of trapping.
@inline(__always)
package func saturatingSubtract(_ lhs: Int64, _ rhs: Int64) -> Int64 {
    let (difference, overflow) = lhs.subtractingReportingOverflow(rhs)
    guard overflow else { return difference }
    return rhs < 0 ? .max : .min
}
