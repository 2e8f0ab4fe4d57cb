/// A sequence of wall-clock instants a repeating timer fires at: "every day at 03:00 in
/// Europe/Berlin", "Mon..Fri 09:00", "at the top of every hour".
///
/// `CalendarSchedule` (module `PreciseTimerCalendar`) implements systemd's `OnCalendar=` syntax;
/// any type can conform. Give it to ``TimerService/scheduleRepeating(id:on:options:_:)``.
///
/// A service calls a schedule without any lock of its own held: on the calling thread when the
/// timer is scheduled, and on the service's loop thread (or the driving thread of a virtual-time
/// service) to find the next occurrence after each call, after a clock step or a resume. Keep it
/// fast and pure: every other timer of the service waits while it computes.
///
/// A schedule whose `next(after:)` answers an instant that is not at least
/// ``TimerService/minimumInterval`` after the one it was asked about ends its timer: the service
/// logs the reason (``PreciseTimerError/Code/invalidSchedule``) and counts the timer as ended,
/// and the timer is no longer scheduled. It never fires one occurrence over and over.
public protocol WallClockSchedule: Sendable {
    /// The first occurrence strictly after `instant`, or `nil` when there is none (the schedule
    /// never fires again).
    func next(after instant: WallClockInstant) -> WallClockInstant?

    /// The occurrences after `occurrence` that are not after `instant`: what a clock step, a
    /// suspend or a slow handler passed over. `nil` when there is none.
    ///
    /// A service calls it once per call of a calendar timer whose policy answers only the
    /// latest passed occurrence (``MissedTickPolicy/skip``, ``MissedTickPolicy/delay``), so a
    /// one-year step costs one call, not one per occurrence. The default implementation walks
    /// ``next(after:)`` up to 64 times and then searches back from `instant` in doubling steps,
    /// so it finds the latest occurrence in about `2·log₂(gap ÷ spacing)` calls; its `passed` is
    /// then a lower bound. A schedule that can count its occurrences implements this exactly:
    /// `CalendarSchedule` (module `PreciseTimerCalendar`) does, counting per civil day (see its
    /// `occurrences(after:notAfter:)`).
    func occurrences(after occurrence: WallClockInstant, notAfter instant: WallClockInstant) -> WallClockCatchUp?
}

/// What ``WallClockSchedule/occurrences(after:notAfter:)`` found: the latest occurrence passed,
/// and how many passed.
public struct WallClockCatchUp: Sendable, Hashable {
    /// The latest occurrence not after the instant asked about.
    public var latest: WallClockInstant
    /// How many occurrences came after the one asked about, up to and including ``latest``
    /// (at least 1): a tick that answers ``latest`` reports this as ``Tick/missed``. Exact when
    /// the schedule counts its occurrences (`CalendarSchedule` does); a lower bound from the
    /// default implementation after more than 64.
    public var passed: UInt64

    /// - Parameters:
    ///   - latest: The latest occurrence passed.
    ///   - passed: How many occurrences passed, ``latest`` included.
    public init(latest: WallClockInstant, passed: UInt64) {
        self.latest = latest
        self.passed = passed
    }
}

extension WallClockSchedule {
    /// Walks ``next(after:)`` while that is cheap, then searches back from `instant` (see the
    /// requirement). Stops at an answer that is not after the one before it (such a schedule
    /// ends its timer when the service next asks it).
    public func occurrences(after occurrence: WallClockInstant, notAfter instant: WallClockInstant) -> WallClockCatchUp?
    {
        let walk: UInt64 = 64
        var latest = occurrence
        var gap: Int64 = 1
        var passed: UInt64 = 0
        while true {
            let (found, steps, lastGap) = self.walk(from: latest, notAfter: instant, atMost: walk)
            passed &+= steps
            if steps > 0 {
                latest = found
                gap = max(1, lastGap)
            }
            guard steps == walk else {
                return passed == 0 ? nil : WallClockCatchUp(latest: latest, passed: passed)
            }
            // More than a walk passed: skip to an occurrence close before `instant` (the count of
            // what was skipped is not known: `passed` stays a lower bound) and walk on from there.
            if let near = self.occurrence(closeBefore: instant, after: latest, window: gap) {
                latest = near
                passed &+= 1
            }
        }
    }

    /// An occurrence after `latest` and not after `instant`, looked for in windows before
    /// `instant` that double from `window`; `nil` once the window reaches back to `latest`.
    private func occurrence(
        closeBefore instant: WallClockInstant, after latest: WallClockInstant, window start: Int64
    ) -> WallClockInstant? {
        var window = start
        while window < saturatingSubtract(instant.nanosecondsSinceEpoch, latest.nanosecondsSinceEpoch) {
            let probe = WallClockInstant(nanosecondsSinceEpoch: instant.nanosecondsSinceEpoch - window)
            if let near = self.next(after: probe), near > latest, near <= instant { return near }
            guard window <= Int64.max / 2 else { return nil }
            window *= 2
        }
        return nil
    }

    /// Walks at most `limit` occurrences after `start` that are not after `instant`: the last one
    /// reached, how many, and the spacing of the last two.
    private func walk(
        from start: WallClockInstant, notAfter instant: WallClockInstant, atMost limit: UInt64
    ) -> (latest: WallClockInstant, steps: UInt64, gap: Int64) {
        var latest = start
        var steps: UInt64 = 0
        var gap: Int64 = 0
        while steps < limit, let next = self.next(after: latest), next > latest, next <= instant {
            gap = saturatingSubtract(next.nanosecondsSinceEpoch, latest.nanosecondsSinceEpoch)
            latest = next
            steps += 1
        }
        return (latest, steps, gap)
    }
}
