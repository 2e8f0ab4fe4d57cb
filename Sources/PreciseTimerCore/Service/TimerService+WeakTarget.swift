/// Holds a target without keeping it alive.
private final class WeakTarget<Target: AnyObject & Sendable>: Sendable {
    weak let value: Target?
    init(_ value: Target) { self.value = value }
}

extension TimerService {
    /// Schedules a one-shot timer that holds `target` weakly and passes it to `action`, so the
    /// action never needs to capture it. If the target is gone by the deadline, `action` is not
    /// called.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one.
    ///   - delay: Time from now to the deadline.
    ///   - options: Executor.
    ///   - target: The object the action works on; held weakly.
    ///   - action: Called with the target and the ``Tick`` while the target lives.
    /// - Returns: The timer's ID.
    /// - Throws: What ``TimerService/schedule(id:after:options:_:)`` throws.
    @discardableResult
    public func schedule<Target: AnyObject & Sendable>(
        id: TimerID? = nil, after delay: Duration, options: TimerOptions = .init(), target: Target,
        _ action: @escaping @Sendable (Target, Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(.after(delay), id: id, options: options, target: target, action).id
    }

    /// Schedules a repeating timer that holds `target` weakly and passes it to `action`. Once the
    /// target is gone the timer cancels itself at its next fire and `action` is not called again,
    /// so an owner that schedules on itself this way always deallocates.
    ///
    /// - Parameters:
    ///   - id: The timer's name, or `nil` for a generated one.
    ///   - interval: The period; at least ``TimerService/minimumInterval``.
    ///   - delay: Time to the first fire, or `nil` for one interval.
    ///   - options: Executor and missed-tick policy.
    ///   - target: The object the action works on; held weakly.
    ///   - action: Called with the target and the ``Tick`` while the target lives.
    /// - Returns: The timer's ID.
    /// - Throws: What ``TimerService/scheduleRepeating(id:every:startingAfter:options:_:)`` throws.
    @discardableResult
    public func scheduleRepeating<Target: AnyObject & Sendable>(
        id: TimerID? = nil, every interval: Duration, startingAfter delay: Duration? = nil,
        options: TimerOptions = .init(), target: Target,
        _ action: @escaping @Sendable (Target, Tick) -> Void
    ) throws -> TimerID {
        try self.scheduleTimer(
            .every(interval, startingAfter: delay), id: id, options: options, target: target, action
        ).id
    }

    /// Schedules a timer that holds `target` weakly and passes it to `action`, and returns its
    /// identity. Once the target is gone, a one-shot does not call `action`, and a repeating
    /// timer cancels itself at its next fire (exactly this timer: a newer one that reused an
    /// explicit ID is left alone), so an owner that schedules on itself this way always
    /// deallocates.
    ///
    /// - Parameters:
    ///   - trigger: When it fires.
    ///   - id: The timer's name, or `nil` for a generated one.
    ///   - options: Executor and missed-tick policy.
    ///   - target: The object the action works on; held weakly.
    ///   - action: Called with the target and the ``Tick`` while the target lives.
    /// - Returns: The timer's ``TimerHandle``.
    /// - Throws: What ``TimerService/scheduleTimer(_:id:options:_:)`` throws.
    @discardableResult
    public func scheduleTimer<Target: AnyObject & Sendable>(
        _ trigger: TimerTrigger, id: TimerID? = nil, options: TimerOptions = .init(), target: Target,
        _ action: @escaping @Sendable (Target, Tick) -> Void
    ) throws -> TimerHandle {
        let weakTarget = WeakTarget(target)
        // The handler holds the service weakly: a strong reference would keep the service alive
        // through its own registry until the target died.
        return try self.scheduleTimer(trigger, id: id, options: options) { [weak self] tick in
            guard let target = weakTarget.value else {
                self?.cancel(tick.handle)
                return
            }
            action(target, tick)
        }
    }
}
