/// When a timer fires: its first deadline and, for a repeating timer, its period. The one value
/// ``TimerService/scheduleTimer(_:id:options:_:)`` takes for every kind of timer.
///
/// ```swift
/// try timers.scheduleTimer(.after(.seconds(5))) { _ in … }                   // one-shot
/// try timers.scheduleTimer(.every(.milliseconds(10)), id: "tick") { _ in … }  // repeating
/// ```
public struct TimerTrigger: Sendable {
    private enum Kind: Sendable {
        case after(Duration)
        case at(MonotonicInstant)
        case every(Duration, startingAfter: Duration?)
        case everyFrom(Duration, start: MonotonicInstant)
    }
    private let kind: Kind

    /// A one-shot `delay` from now; `.zero` fires as soon as possible.
    public static func after(_ delay: Duration) -> TimerTrigger {
        TimerTrigger(kind: .after(delay))
    }

    /// A one-shot at an absolute deadline; one in the past fires as soon as possible.
    public static func at(_ deadline: MonotonicInstant) -> TimerTrigger {
        TimerTrigger(kind: .at(deadline))
    }

    /// A repeating timer at a fixed rate, first after `delay`, or after one `interval` when it
    /// is `nil`; deadlines are `first + k·interval`.
    public static func every(_ interval: Duration, startingAfter delay: Duration? = nil) -> TimerTrigger {
        TimerTrigger(kind: .every(interval, startingAfter: delay))
    }

    /// A repeating timer whose grid starts at `start`: deadlines are `start + k·interval`.
    public static func every(_ interval: Duration, startingAt start: MonotonicInstant) -> TimerTrigger {
        TimerTrigger(kind: .everyFrom(interval, start: start))
    }

    /// Whether the trigger repeats.
    public var repeats: Bool {
        switch self.kind {
        case .after, .at: false
        case .every, .everyFrom: true
        }
    }

    /// The request checked against the rules every service keeps, at `now`.
    package func request(now: Int64, id: TimerID?) throws(PreciseTimerError) -> TimerRequest {
        switch self.kind {
        case .after(let delay): try TimerRequest(after: delay, now: now, id: id)
        case .at(let deadline): try TimerRequest(at: deadline, now: now, id: id)
        case .every(let interval, let delay): try TimerRequest(every: interval, startingAfter: delay, now: now, id: id)
        case .everyFrom(let interval, let start): try TimerRequest(every: interval, startingAt: start, now: now, id: id)
        }
    }
}
