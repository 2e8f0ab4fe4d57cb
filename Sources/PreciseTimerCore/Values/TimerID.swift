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
        self.withUTF8 { Self.generatedDigits(of: $0) != nil }
    }

    /// The number of a generated ID in its canonical form: `timer-`, then decimal digits without
    /// a leading zero, below 2⁶⁴; `nil` for any other string (`timer-007` is of the reserved form,
    /// yet no service generates it: it is hashed as a string and names no generated timer).
    @inline(__always)
    package var canonicalGeneratedNumber: UInt64? {
        self.withUTF8 { bytes -> UInt64? in
            guard let digits = Self.generatedDigits(of: bytes), digits.first != UInt8(ascii: "0") else { return nil }
            var number: UInt64 = 0
            for byte in digits {
                let (times10, overflow) = number.multipliedReportingOverflow(by: 10)
                let (sum, carry) = times10.addingReportingOverflow(UInt64(byte &- UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                number = sum
            }
            return number
        }
    }

    /// The digits of an ID of the generated form (`timer-` and one or more decimal digits), or
    /// `nil` for any other string.
    @inline(__always)
    private static func generatedDigits(of bytes: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>>? {
        let prefix = Self.generatedPrefixBytes
        guard bytes.count > Self.generatedPrefixLength, bytes[0] == prefix.0, bytes[1] == prefix.1,
            bytes[2] == prefix.2, bytes[3] == prefix.3, bytes[4] == prefix.4, bytes[5] == prefix.5
        else { return nil }
        let digits = bytes[Self.generatedPrefixLength...]
        return digits.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) ? digits : nil
    }

    /// `"timer-" + n`, written straight into the string's storage: up to `timer-999999999` the
    /// result is a small string stored inline, with no allocation (a million pending timers is a
    /// normal load), with no temporary buffer and no decoding copy: every schedule with a
    /// generated ID builds one.
    package init(generatedNumber number: UInt64) {
        var digitCount = 1
        var rest = number / 10
        while rest > 0 {
            digitCount += 1
            rest /= 10
        }
        let length = Self.generatedPrefixLength + digitCount
        let rawValue = String(unsafeUninitializedCapacity: length) { buffer in
            let prefix = Self.generatedPrefixBytes
            (buffer[0], buffer[1], buffer[2], buffer[3], buffer[4], buffer[5]) = prefix
            var digits = number
            var index = length
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digits % 10)
                digits /= 10
            } while digits > 0
            return length
        }
        self.init(rawValue)
    }

    /// `timer-`, the generated form's prefix, as bytes.
    private static var generatedPrefixBytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
        (
            UInt8(ascii: "t"), UInt8(ascii: "i"), UInt8(ascii: "m"), UInt8(ascii: "e"), UInt8(ascii: "r"),
            UInt8(ascii: "-")
        )
    }
    private static var generatedPrefixLength: Int { 6 }

    /// Calls `body` with the ID's UTF-8 bytes, in place (a native string's are contiguous; any
    /// other is copied once).
    @inline(__always)
    private func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = self.rawValue.utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self.rawValue
        return copy.withUTF8(body)
    }
}
