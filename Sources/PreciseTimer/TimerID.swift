/// The name of a timer, unique among the timers a service has scheduled.
///
/// IDs are plain strings so a daemon can name its timers after what they do
/// (`"heartbeat"`, `"session-42.expiry"`). A service generates one when you pass `nil`;
/// generated IDs are never handed out twice for the life of that service, even after the
/// timer that had one ended, so a stale ID can never cancel a newer timer.
///
/// IDs compare as Swift strings do, by Unicode canonical equivalence: `"e\u{301}"` and `"\u{E9}"`
/// (two spellings of "é") are the same ID. Any non-empty string is valid, however long.
public struct TimerID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The string the ID was made from.
    public let rawValue: String

    /// Creates an ID from a string.
    ///
    /// - Parameter rawValue: Any string. An empty string is a valid `TimerID` value, but every
    ///   service rejects it with ``PreciseTimerError/Code/emptyID`` when you schedule with it.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates an ID from a string literal: `let id: TimerID = "heartbeat"`.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The raw string.
    public var description: String { self.rawValue }
}
