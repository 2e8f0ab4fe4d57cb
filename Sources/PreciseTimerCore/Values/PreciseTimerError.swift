/// Every error this package throws: a ``Code`` saying what went wrong, plus the context to find
/// it (the timer ID, the offending value, or the C function and what it returned).
///
/// Match on the code, not the message:
/// ```swift
/// do { try timers.schedule(id: "x", after: delay) { _ in } }
/// catch let error as PreciseTimerError where error.code == .duplicateID { … }
/// ```
public struct PreciseTimerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong. Compare with the static members; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case invalidDelay, invalidInterval, emptyID, reservedID, duplicateID, shutDown, libeventFailure
            case systemFailure, invalidConfiguration, invalidEventBase, invalidSchedule, timedOut
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// A delay was negative, not finite, or beyond what the clock can represent
        /// (``TimerService/maximumDuration``).
        public static let invalidDelay = Code(.invalidDelay)
        /// A repeating interval was shorter than ``TimerService/minimumInterval`` (1 µs; zero
        /// and negative included), not finite, or beyond ``TimerService/maximumDuration``.
        public static let invalidInterval = Code(.invalidInterval)
        /// The ID was the empty string.
        public static let emptyID = Code(.emptyID)
        /// An explicit ID has the form reserved for generated IDs (`timer-` and digits, see
        /// ``TimerID/isGenerated``); nothing was scheduled.
        public static let reservedID = Code(.reservedID)
        /// A timer with this ID is already scheduled; nothing was changed.
        public static let duplicateID = Code(.duplicateID)
        /// The service was shut down; it schedules nothing any more.
        public static let shutDown = Code(.shutDown)
        /// A libevent function failed; ``PreciseTimerError/function`` and
        /// ``PreciseTimerError/returnCode`` say which and how.
        public static let libeventFailure = Code(.libeventFailure)
        /// A system call the engine needs failed (thread, eventfd, scheduling policy);
        /// ``PreciseTimerError/function`` and ``PreciseTimerError/errno`` say which and why.
        public static let systemFailure = Code(.systemFailure)
        /// A `PreciseTimer.Configuration` value is out of range.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The `event_base` given to `PreciseTimer.init(eventBase:configuration:)` is `nil` or
        /// cannot keep the service's precision (not epoll, or built without
        /// `EVENT_BASE_FLAG_PRECISE_TIMER`); ``PreciseTimerError/value`` says why.
        public static let invalidEventBase = Code(.invalidEventBase)

        /// A wall-clock schedule cannot be used: a calendar specification that does not parse or
        /// names an unknown time zone, or a schedule with no occurrence after now;
        /// ``PreciseTimerError/value`` holds the specification as given, and
        /// ``PreciseTimerError/detail`` what is wrong with it and where. Scheduling a schedule
        /// with no occurrence left after now throws it too: `value` is then the schedule's
        /// description, `detail` says after which instant.
        public static let invalidSchedule = Code(.invalidSchedule)

        /// ``TimerService/withTimeout(_:tolerance:_:)`` or ``TimerService/withDeadline(_:tolerance:_:)``:
        /// the deadline passed before the operation returned. The operation's task was cancelled,
        /// and this was thrown once the operation had returned.
        public static let timedOut = Code(.timedOut)

        /// The code's name, e.g. `"duplicateID"`.
        public var description: String { String(describing: self.value) }
    }

    /// What went wrong.
    public let code: Code
    /// The timer the call was about, when there was one.
    public let id: TimerID?
    /// The offending value, as text (a delay, an interval, a configuration field).
    public let value: String?
    /// The C function that failed, for ``Code/libeventFailure`` and ``Code/systemFailure``.
    public let function: String?
    /// What that function returned.
    public let returnCode: Int32?
    /// `errno` after the failure, when the function sets it.
    public let errno: Int32?
    /// What exactly is wrong, in words, when the code and value alone do not say it (for
    /// ``Code/invalidSchedule``: the part of the specification refused, and where).
    public let detail: String?

    /// Creates an error. Services create these; adapters and tests may too.
    public init(
        _ code: Code, id: TimerID? = nil, value: String? = nil, function: String? = nil,
        returnCode: Int32? = nil, errno: Int32? = nil, detail: String? = nil
    ) {
        self.code = code
        self.id = id
        self.value = value
        self.function = function
        self.returnCode = returnCode
        self.errno = errno
        self.detail = detail
    }

    /// A one-line message naming the code and every piece of context present.
    public var description: String {
        var parts = ["PreciseTimerError.\(self.code)"]
        if let id = self.id { parts.append("id: \"\(id)\"") }
        if let value = self.value { parts.append("value: \(value)") }
        if let function = self.function { parts.append("function: \(function)") }
        if let returnCode = self.returnCode { parts.append("returned: \(returnCode)") }
        if let errno = self.errno { parts.append("errno: \(errno)") }
        if let detail = self.detail { parts.append("detail: \(detail)") }
        return parts.joined(separator: ", ")
    }
}
