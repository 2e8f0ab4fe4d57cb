import Dispatch
import PreciseTimerCore

extension TimerService {
    /// The classic GCD wrapper's API, for code ported from it: runs `task` after `start`
    /// seconds, then every `interval` seconds if `repeats`.
    ///
    /// Unlike the original, names are never reused (it named timers by its dictionary's count,
    /// so a new timer could overwrite a live one), and bad values schedule nothing.
    ///
    /// - Parameters:
    ///   - task: The work.
    ///   - start: Seconds to the first run; must be finite and not negative.
    ///   - interval: Seconds between runs when `repeats`; must be finite and at least
    ///     0.000001 (``TimerService/minimumInterval``, 1 µs) then, and is not read otherwise.
    ///   - repeats: Whether to run every `interval` after the first run.
    ///   - async: `true` runs `task` on a global queue, `false` on the service's own thread.
    /// - Returns: The timer's name for ``cancelTask(_:)``, or `nil` when a value is invalid (or
    ///   the service was shut down) and nothing was scheduled.
    public func execTask(
        _ task: @escaping @Sendable () -> Void, start: Double, interval: Double,
        repeats: Bool, async: Bool
    ) -> String? {
        self.execTask(start: start, interval: interval, repeats: repeats, async: async) { trigger, options in
            try self.scheduleTimer(trigger, id: nil, options: options) { _ in task() }
        }
    }

    /// ``execTask(_:start:interval:repeats:async:)`` with a target held weakly: `action` gets the
    /// target while it lives; once it is gone the timer cancels itself.
    ///
    /// - Returns: The timer's name, or `nil` when a value is invalid and nothing was scheduled.
    public func execTask<Target: AnyObject & Sendable>(
        target: Target, action: @escaping @Sendable (Target) -> Void, start: Double, interval: Double,
        repeats: Bool, async: Bool
    ) -> String? {
        self.execTask(start: start, interval: interval, repeats: repeats, async: async) { trigger, options in
            try self.scheduleTimer(trigger, id: nil, options: options, target: target) { target, _ in action(target) }
        }
    }

    /// Both forms: checks the seconds, then schedules through `schedule`. `interval` is read only
    /// when the task repeats.
    private func execTask(
        start: Double, interval: Double, repeats: Bool, async: Bool,
        schedule: (TimerTrigger, TimerOptions) throws -> TimerHandle
    ) -> String? {
        let options = TimerOptions(executor: async ? .queue(.global()) : .loop)
        do {
            let delay = try Duration.checkedSeconds(start)
            let trigger: TimerTrigger =
                repeats ? .every(try Duration.checkedSeconds(interval), startingAfter: delay) : .after(delay)
            // A generated ID: never reused, and of a form no explicit ID may take, so the name
            // names this task for the life of the service.
            return try schedule(trigger, options).id.rawValue
        } catch {
            return nil
        }
    }

    /// Cancels a task started with `execTask`. `nil` or an unknown name does nothing.
    public func cancelTask(_ name: String?) {
        guard let name, !name.isEmpty else { return }
        self.cancel(TimerID(name))
    }
}
