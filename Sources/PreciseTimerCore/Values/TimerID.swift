/// The name of a timer, unique among the timers a service has scheduled.
///
/// IDs are plain strings so a daemon can name its timers after what they do
/// (`"heartbeat"`, `"session-42.expiry"`). A service generates one when you pass `nil`;
/// generated IDs are never handed out twice for the life of that service, even after the
/// timer that had one ended, so a stale ID can never cancel a newer timer.
///
/// Generated IDs have the form `timer-` followed by a number (`timer-1`, `timer-42`), and that form
/// is reserved: scheduling with an explicit ID of that form (exactly `timer-` and decimal digits)
/// throws ``PreciseTimerError/Code/reservedID``, so a stale generated name (a string kept from
/// `execTask`, say) can never cancel a timer someone else named.
///
/// IDs compare as Swift strings do, by Unicode canonical equivalence: `"e\u{301}"` and `"\u{E9}"`
/// (two spellings of "é") are the same ID. Any other non-empty string is valid, however long.
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

    /// Whether the ID has the reserved generated form: `timer-` followed by one or more decimal
    /// digits and nothing else.
    public var isGenerated: Bool {
        var utf8 = self.rawValue.utf8.makeIterator()
        for expected in Self.generatedPrefix.utf8 {
            guard utf8.next() == expected else { return false }
        }
        var digits = 0
        while let byte = utf8.next() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            digits += 1
        }
        return digits > 0
    }

    private static let generatedPrefix = "timer-"

    /// The number of a generated ID in its canonical form: `timer-`, then decimal digits without
    /// a leading zero, below 2⁶⁴; `nil` for any other string (`timer-007` is of the reserved form,
    /// yet no service generates it: it is hashed as a string and names no generated timer).
    @inline(__always)
    package var canonicalGeneratedNumber: UInt64? {
        var utf8 = self.rawValue.utf8.makeIterator()
        for expected in Self.generatedPrefix.utf8 {
            guard utf8.next() == expected else { return nil }
        }
        guard let first = utf8.next(), first >= UInt8(ascii: "1"), first <= UInt8(ascii: "9") else { return nil }
        var number = UInt64(first - UInt8(ascii: "0"))
        while let byte = utf8.next() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow) = number.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            number = sum
        }
        return number
    }

    /// `"timer-" + n` without string interpolation: up to `timer-999999999` the result is a small
    /// string stored inline, with no allocation (a million pending timers is a normal load).
    package init(generatedNumber number: UInt64) {
        let rawValue = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 26) { buffer in
            var length = 0
            for byte in Self.generatedPrefix.utf8 {
                buffer[length] = byte
                length += 1
            }
            let firstDigit = length
            var digits = number
            repeat {
                buffer[length] = UInt8(ascii: "0") + UInt8(digits % 10)
                digits /= 10
                length += 1
            } while digits > 0
            buffer[firstDigit..<length].reverse()
            return String(decoding: buffer[0..<length], as: UTF8.self)
        }
        self.init(rawValue)
    }
}
