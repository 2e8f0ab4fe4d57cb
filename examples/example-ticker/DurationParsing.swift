import PreciseTimer

/// Reads and writes durations the way people type them on a command line: `250us`, `1ms`, `0.5s`.
///
/// Values are parsed as exact decimals (no binary floating point), so `1ms` is exactly
/// 1 000 000 ns; digits below a nanosecond round up, as deadlines do. Every bad input throws an
/// ``InvalidValue`` whose description says what is wrong; ArgumentParser prints it
/// after the offending flag and value.
enum DurationParsing {
    /// The accepted units, smallest first; two-letter suffixes come before `s`, so `ms` is not read as `s`.
    private static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
    ]

    private static let example = "write a number and a unit, e.g. 250us, 1ms or 0.5s (units: ns, us, ms, s)"

    /// Parses a duration with a unit (`ns`, `us` or `µs`, `ms`, `s`); a bare `0` is accepted too.
    ///
    /// - Parameter text: The command-line value.
    /// - Returns: The duration, at least zero and at most ``PreciseTimer/maximumDuration``.
    /// - Throws: ``InvalidValue`` for a missing or unknown unit, a malformed or negative number, or a
    ///   value beyond ``PreciseTimer/maximumDuration``.
    static func parse(_ text: String) throws(InvalidValue) -> Duration {
        if text.hasPrefix("-") {
            throw InvalidValue(description: "a duration cannot be negative")
        }
        if text == "0" {
            return .zero  // Zero needs no unit.
        }
        guard let unit = self.units.first(where: { text.hasSuffix($0.suffix) }) else {
            throw InvalidValue(description: "missing or unknown unit; \(self.example)")
        }
        let nanoseconds = try self.nanoseconds(of: text.dropLast(unit.suffix.count), scale: unit.nanoseconds)
        return .nanoseconds(nanoseconds)
    }

    /// Parses a timer period: like ``parse(_:)``, and greater than zero.
    static func parseInterval(_ text: String) throws(InvalidValue) -> Duration {
        let interval = try self.parse(text)
        guard interval > .zero else {
            throw InvalidValue(description: "an interval must be greater than zero")
        }
        return interval
    }

    /// Parses a run length: like ``parseInterval(_:)``, and a bare number (`3`, `0.5`) is seconds.
    static func parseLength(_ text: String) throws(InvalidValue) -> Duration {
        let isBareNumber = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
        return try self.parseInterval(isBareNumber ? text + "s" : text)
    }

    /// Formats a duration with the largest unit that keeps it short: `1ms`, `250us`, `1.5s`.
    static func format(_ duration: Duration) -> String {
        let nanoseconds = duration.wholeNanoseconds
        let unit = self.units.last { $0.suffix != "µs" && nanoseconds >= $0.nanoseconds } ?? self.units[0]
        if nanoseconds % unit.nanoseconds == 0 {
            return "\(nanoseconds / unit.nanoseconds)\(unit.suffix)"
        }
        return "\(Double(nanoseconds) / Double(unit.nanoseconds))\(unit.suffix)"
    }

    /// `digits[.digits]` times `scale` nanoseconds, rounded up to a whole nanosecond.
    ///
    /// - Throws: ``InvalidValue`` when `number` is not a plain decimal or the result is longer
    ///   than ``PreciseTimer/maximumDuration``.
    private static func nanoseconds(of number: Substring, scale: Int64) throws(InvalidValue) -> Int64 {
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        let isDigits = { (part: Substring) in part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard !(whole.isEmpty && fraction.isEmpty), isDigits(whole), isDigits(fraction) else {
            throw InvalidValue(description: "'\(number)' is not a plain decimal number; \(self.example)")
        }
        let limit = PreciseTimer.maximumDuration.wholeNanoseconds
        let tooLong = InvalidValue(description: "too long; timers accept at most \(limit / 1_000_000_000)s (146 years)")
        var total: Int64 = 0
        for digit in whole {
            let (shifted, overflow) = total.multipliedReportingOverflow(by: 10)
            guard !overflow, shifted <= limit else { throw tooLong }
            total = shifted + Int64(digit.wholeNumberValue ?? 0)
        }
        let (scaled, overflow) = total.multipliedReportingOverflow(by: scale)
        guard !overflow, scaled <= limit else { throw tooLong }
        // Each fraction digit is worth a tenth of the one before; below a nanosecond, round up.
        var place = scale
        var fractional: Int64 = 0
        for digit in fraction {
            let value = Int64(digit.wholeNumberValue ?? 0)
            if place >= 10 {
                place /= 10
                fractional += value * place
            } else if value != 0 {
                fractional += 1
                break
            }
        }
        guard scaled <= limit - fractional else { throw tooLong }
        return scaled + fractional
    }
}
