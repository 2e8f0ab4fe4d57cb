import Dispatch

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
    ///   - interval: Seconds between runs when `repeats`; must be finite and positive then.
    ///   - repeats: Whether to run every `interval` after the first run.
    ///   - async: `true` runs `task` on a global queue, `false` on the service's own thread.
    /// - Returns: The timer's name for ``cancelTask(_:)``, or `nil` when a value is invalid (or
    ///   the service was shut down) and nothing was scheduled.
    public func execTask(
        _ task: @escaping @Sendable () -> Void, start: Double, interval: Double,
        repeats: Bool, async: Bool
    ) -> String? {
        let options = TimerOptions(executor: async ? .queue(.global()) : .loop)
        do {
            let delay = try Duration.checkedSeconds(start)
            let id: TimerID
            if repeats {
                id = try self.scheduleRepeating(
                    every: try Duration.checkedSeconds(interval), startingAfter: delay, options: options
                ) { _ in task() }
            } else {
                guard interval.isFinite else { return nil }
                id = try self.schedule(after: delay, options: options) { _ in task() }
            }
            return id.rawValue
        } catch {
            return nil
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
        let options = TimerOptions(executor: async ? .queue(.global()) : .loop)
        do {
            let delay = try Duration.checkedSeconds(start)
            let id: TimerID
            if repeats {
                id = try self.scheduleRepeating(
                    every: try Duration.checkedSeconds(interval), startingAfter: delay, options: options,
                    target: target
                ) { target, _ in action(target) }
            } else {
                guard interval.isFinite else { return nil }
                id = try self.schedule(after: delay, options: options, target: target) { target, _ in action(target) }
            }
            return id.rawValue
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
