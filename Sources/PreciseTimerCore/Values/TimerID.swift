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
    /// generated ID builds one, and so does every fire of such a timer (its node keeps the number,
    /// not the string). The digits are counted from the number's bit length and written two at a
    /// time.
    package init(generatedNumber number: UInt64) {
        let length = Self.generatedPrefixLength + Self.decimalDigitCount(number)
        let rawValue = String(unsafeUninitializedCapacity: length) { buffer in
            let prefix = Self.generatedPrefixBytes
            (buffer[0], buffer[1], buffer[2], buffer[3], buffer[4], buffer[5]) = prefix
            let zero = UInt8(ascii: "0")
            var digits = number
            var index = length
            while digits >= 100 {
                let pair = UInt8(truncatingIfNeeded: digits % 100)
                digits /= 100
                index -= 2
                buffer[index] = zero &+ pair / 10
                buffer[index + 1] = zero &+ pair % 10
            }
            if digits >= 10 {
                let pair = UInt8(truncatingIfNeeded: digits)
                buffer[index - 2] = zero &+ pair / 10
                buffer[index - 1] = zero &+ pair % 10
            } else {
                buffer[index - 1] = zero &+ UInt8(truncatingIfNeeded: digits)
            }
            return length
        }
        self.init(rawValue)
    }

    /// The number of decimal digits of `number` (1 for 0): from its bit length, `log10(2) ≈
    /// 1233 / 4096` gives the count or one less, which one comparison with a power of ten settles.
    @inline(__always)
    private static func decimalDigitCount(_ number: UInt64) -> Int {
        let bits = 64 - (number | 1).leadingZeroBitCount
        let guess = (bits &* 1233) >> 12  // ⌊log10(2^bits)⌋, from 0 to 19.
        return guess + (number | 1 >= Self.powerOfTen(guess) ? 1 : 0)
    }

    /// 10 to the power `exponent`, 0 to 19 (a switch the compiler makes a table).
    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> UInt64 {
        switch exponent {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        default: 10_000_000_000_000_000_000
        }
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
