/// systemd's time spans (`systemd.time(7)`, "PARSING TIME SPANS"), read and written in whole
/// microseconds as systemd 252's `parse_time()` and `format_timespan()` do
/// (`src/basic/time-util.c`).
///
/// Ground rules: the reader works on the UTF-8 bytes, as the C code works on `char`s, so every
/// answer (whitespace, signs, a unit's prefix matching, digits past the microsecond) is the
/// one `systemd-analyze timespan` prints; `Fixtures/timespan.tsv` holds its answers and a test
/// compares every row.
enum SystemdTimeSpan {
    /// Why a span was refused, and the byte offset where.
    struct Failure: Error {
        /// systemd's errno: `invalid` is `EINVAL` (text that is not a span), `outOfRange` is
        /// `ERANGE` (a negative value, or one past 2^64 - 1 µs); the detail says "out of range"
        /// for the second, and the oracle test checks that it does where systemd does.
        enum Kind { case invalid, outOfRange }
        var kind: Kind
        var reason: String
        var offset: Int

        var detail: String {
            let what = self.kind == .outOfRange ? "out of range: " + self.reason : self.reason
            return "\(what) at offset \(self.offset)"
        }
    }

    /// systemd's `USEC_INFINITY`, what `infinity` reads as.
    static let infinity = UInt64.max

    private static let second: UInt64 = 1_000_000
    private static let minute: UInt64 = 60 * second
    private static let hour: UInt64 = 60 * minute
    private static let day: UInt64 = 24 * hour
    private static let week: UInt64 = 7 * day
    /// 30.44 days, systemd's `USEC_PER_MONTH`.
    private static let month: UInt64 = 2_629_800 * second
    /// 365.25 days, systemd's `USEC_PER_YEAR`.
    private static let year: UInt64 = 31_557_600 * second

    /// The suffixes in the order systemd tries them: the first that the text starts with wins,
    /// so `5mo` is five minutes followed by an `o` that is refused, and `5secs` leaves an `s`.
    private static let units: [(suffix: [UInt8], microseconds: UInt64)] = [
        ("seconds", second), ("second", second), ("sec", second), ("s", second),
        ("minutes", minute), ("minute", minute), ("min", minute),
        ("months", month), ("month", month), ("M", month),
        ("msec", 1_000), ("ms", 1_000), ("m", minute),
        ("hours", hour), ("hour", hour), ("hr", hour), ("h", hour),
        ("days", day), ("day", day), ("d", day),
        ("weeks", week), ("week", week), ("w", week),
        ("years", year), ("year", year), ("y", year),
        ("usec", 1), ("us", 1),
        ("\u{03BC}s", 1),  // GREEK SMALL LETTER MU
        ("\u{00B5}s", 1),  // MICRO SIGN
    ].map { (Array($0.0.utf8), $0.1) }

    /// The span in microseconds; ``infinity`` for `infinity`.
    ///
    /// Plain numbers are seconds. Digits past the unit's microsecond are dropped (`0.5us` is 0),
    /// as systemd drops them.
    static func microseconds(_ text: String) throws(Failure) -> UInt64 {
        let bytes = Array(text.utf8)
        if let nul = bytes.firstIndex(of: 0) {
            throw Failure(kind: .invalid, reason: "a NUL byte", offset: nul)
        }
        var index = Self.skipWhitespace(bytes, from: 0)
        if Self.hasPrefix(bytes, Array("infinity".utf8), at: index) {
            let rest = Self.skipWhitespace(bytes, from: index + 8)
            guard rest == bytes.count else {
                throw Failure(kind: .invalid, reason: "text after infinity", offset: rest)
            }
            return Self.infinity
        }
        var total: UInt64 = 0
        var something = false
        while true {
            index = Self.skipWhitespace(bytes, from: index)
            guard index < bytes.count else {
                guard something else { throw Failure(kind: .invalid, reason: "no number", offset: index) }
                return total
            }
            if bytes[index] == UInt8(ascii: "-") {
                throw Failure(kind: .outOfRange, reason: "a negative value", offset: index)
            }
            let (whole, end) = try Self.wholeNumber(bytes, at: index)
            let hasFraction = end < bytes.count && bytes[end] == UInt8(ascii: ".")
            var next = end
            if hasFraction {
                next = end + 1
                while next < bytes.count, Self.isDigit(bytes[next]) { next += 1 }
            } else if end == index {
                throw Failure(kind: .invalid, reason: "expected a number", offset: index)
            }
            // Whitespace may stand between a number and its unit; without a unit, seconds.
            let unitStart = Self.skipWhitespace(bytes, from: next)
            var multiplier = Self.second
            var afterUnit = unitStart
            if let unit = Self.units.first(where: { Self.hasPrefix(bytes, $0.suffix, at: unitStart) }) {
                multiplier = unit.microseconds
                afterUnit = unitStart + unit.suffix.count
            }
            if afterUnit == next && next < bytes.count {
                throw Failure(kind: .invalid, reason: "an unknown unit", offset: next)
            }
            guard whole < Self.infinity / multiplier else {
                throw Failure(kind: .outOfRange, reason: "the value", offset: index)
            }
            let product = whole * multiplier
            guard product < Self.infinity - total else {
                throw Failure(kind: .outOfRange, reason: "the sum", offset: index)
            }
            total += product
            something = true
            if hasFraction {
                var scale = multiplier / 10
                var digit = end + 1
                while digit < bytes.count, Self.isDigit(bytes[digit]) {
                    let part = UInt64(bytes[digit] - UInt8(ascii: "0")) * scale
                    guard part < Self.infinity - total else {
                        throw Failure(kind: .outOfRange, reason: "the sum", offset: digit)
                    }
                    total += part
                    digit += 1
                    scale /= 10
                }
                if digit == end + 1 {
                    throw Failure(kind: .invalid, reason: "no digit after the decimal point", offset: end)
                }
            }
            index = afterUnit
        }
    }

    /// systemd's `format_timespan(…, accuracy: 1)`, what `systemd-analyze timespan` prints as
    /// "Human": `1h 30min`, `2.500000s` (below a minute, a remainder is written as a fraction of
    /// the largest unit), `0`, `infinity`. systemd reads it back as the same span.
    static func format(_ microseconds: UInt64) -> String {
        if microseconds == Self.infinity { return "infinity" }
        if microseconds == 0 { return "0" }
        let table: [(String, UInt64)] = [
            ("y", Self.year), ("month", Self.month), ("w", Self.week), ("d", Self.day), ("h", Self.hour),
            ("min", Self.minute), ("s", Self.second), ("ms", 1_000), ("us", 1),
        ]
        var parts: [String] = []
        var left = microseconds
        for (suffix, unit) in table where left > 0 && left >= unit {
            let whole = left / unit
            let remainder = left % unit
            if left < Self.minute && remainder > 0 {
                // As many fraction digits as the unit has below it (6 for seconds, 3 for ms).
                var digits = 0
                var scale = unit
                while scale > 1 {
                    digits += 1
                    scale /= 10
                }
                if digits > 0 {
                    let fraction = String(remainder)
                    let padding = String(repeating: "0", count: max(0, digits - fraction.count))
                    parts.append("\(whole).\(padding)\(fraction)\(suffix)")
                    left = 0
                    continue
                }
            }
            parts.append("\(whole)\(suffix)")
            left = remainder
        }
        return parts.joined(separator: " ")
    }

    /// `strtoll(p, &e, 10)` as glibc reads it: C whitespace, then one sign, then decimal digits.
    /// Returns the value and the offset after it, the start when no digit was read (as `e == p`).
    private static func wholeNumber(_ bytes: [UInt8], at start: Int) throws(Failure) -> (UInt64, Int) {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || (0x09...0x0D).contains(bytes[index]) { index += 1 }
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        let digitsStart = index
        var value: UInt64 = 0
        // strtoll's range: up to 2^63 - 1, or 2^63 for a negative number.
        let limit: UInt64 = negative ? 1 << 63 : UInt64(Int64.max)
        var overflow = false
        while index < bytes.count, Self.isDigit(bytes[index]) {
            let digit = UInt64(bytes[index] - UInt8(ascii: "0"))
            if !overflow {
                if value > (limit - digit) / 10 { overflow = true } else { value = value * 10 + digit }
            }
            index += 1
        }
        guard index > digitsStart else { return (0, start) }
        if overflow { throw Failure(kind: .outOfRange, reason: "a number past 2^63 - 1", offset: start) }
        // "-0" after C whitespace reads as 0, as strtoll reads it; any other negative is refused.
        if negative && value != 0 { throw Failure(kind: .outOfRange, reason: "a negative value", offset: start) }
        return (value, index)
    }

    /// systemd's `WHITESPACE`: space, tab, newline, carriage return (not `\v` or `\f`).
    private static func skipWhitespace(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func hasPrefix(_ bytes: [UInt8], _ prefix: [UInt8], at start: Int) -> Bool {
        guard bytes.count - start >= prefix.count else { return false }
        return bytes[start..<(start + prefix.count)].elementsEqual(prefix)
    }
}
