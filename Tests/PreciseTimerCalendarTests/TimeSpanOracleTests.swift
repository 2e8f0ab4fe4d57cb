import Foundation
import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// Every row of `Fixtures/timespan.tsv` (written by `scripts/timespan-oracle` from
/// `systemd-analyze timespan -- SPAN`): the microseconds or the refusal, and the "Human" form,
/// checked against ``Duration/init(systemdTimeSpan:)``.
@Suite("systemd's time spans")
struct TimeSpanOracleTests {
    struct Row {
        var span: String
        /// nil: systemd refused the span.
        var microseconds: UInt64?
        /// systemd's message when it refused the span (`Invalid argument`, `Numerical result out of range`).
        var error: String?
        var human: String
    }

    static func rows() throws -> [Row] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/timespan.tsv")
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("# systemd-analyze") else { return nil }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else { return nil }
            let error = fields[1].hasPrefix("ERROR: ") ? String(fields[1].dropFirst(7)) : nil
            return Row(
                span: Self.unescape(fields[0]), microseconds: UInt64(fields[1]), error: error, human: fields[2])
        }
    }

    /// The first column's escapes: `\\`, `\t`, `\n`, `\r`, `\v`, `\f`, `\0`.
    static func unescape(_ text: String) -> String {
        var result = ""
        var escaped = false
        for scalar in text.unicodeScalars {
            if escaped {
                switch scalar {
                case "t": result.unicodeScalars.append("\t")
                case "n": result.unicodeScalars.append("\n")
                case "r": result.unicodeScalars.append("\r")
                case "v": result.unicodeScalars.append("\u{0B}")
                case "f": result.unicodeScalars.append("\u{0C}")
                case "0": result.unicodeScalars.append("\u{0}")
                default: result.unicodeScalars.append(scalar)
                }
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    @Test("every fixture row: microseconds, refusal, systemd's written form")
    func everyRow() throws {
        let rows = try Self.rows()
        #expect(rows.count > 3_000)
        #expect(rows.contains { $0.microseconds != nil } && rows.contains { $0.error != nil })
        var mismatches: [String] = []
        for row in rows {
            let context = "\(row.span.debugDescription)"
            let parsed = Result { () throws(PreciseTimerError) in try Duration(systemdTimeSpan: row.span) }
            switch (parsed, row.microseconds) {
            case (.success(let duration), .some(let microseconds)):
                let (seconds, attoseconds) = duration.components
                let value = UInt64(seconds) * 1_000_000 + UInt64(attoseconds / 1_000_000_000_000)
                if value != microseconds || attoseconds % 1_000_000_000_000 != 0 {
                    mismatches.append("\(context): \(duration), systemd \(microseconds) µs")
                } else if duration.systemdTimeSpanDescription != row.human {
                    mismatches.append(
                        "\(context): written \(duration.systemdTimeSpanDescription), systemd \(row.human)")
                }
            case (.failure(let error), .some(let microseconds)):
                // infinity: systemd's USEC_INFINITY, refused on purpose.
                if microseconds != UInt64.max || error.detail?.contains("infinity") != true {
                    mismatches.append("\(context): refused (\(error)), systemd \(microseconds) µs")
                }
            case (.success(let duration), .none):
                mismatches.append("\(context): accepted as \(duration), systemd: \(row.error ?? "?")")
            case (.failure(let error), .none):
                if error.code != .invalidDelay || error.value != row.span {
                    mismatches.append("\(context): wrong error \(error)")
                }
                // systemd's ERANGE (a minus, a value past 2^64 - 1 µs) reads "out of range" here too.
                let outOfRange = error.detail?.hasPrefix("out of range") == true
                if outOfRange != (row.error == "Numerical result out of range") {
                    mismatches.append("\(context): \(error.detail ?? ""), systemd: \(row.error ?? "?")")
                }
            }
        }
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) mismatches, first: \(mismatches.prefix(20).joined(separator: "\n"))")
    }

    @Test("the issue's examples, infinity, and what an error says")
    func examples() throws {
        #expect(try Duration(systemdTimeSpan: "1h 30min") == .seconds(5_400))
        #expect(try Duration(systemdTimeSpan: "2.5s") == .milliseconds(2_500))
        #expect(try Duration(systemdTimeSpan: "1d") == .seconds(86_400))
        #expect(try Duration(systemdTimeSpan: "5m 30s") == .seconds(330))
        #expect(try Duration(systemdTimeSpan: "1y") == .seconds(31_557_600))
        #expect(try Duration(systemdTimeSpan: "3µs") == .microseconds(3))
        #expect(try Duration(systemdTimeSpan: "3us") == .microseconds(3))
        #expect(try Duration(systemdTimeSpan: "90") == .seconds(90))
        #expect(try Duration(systemdTimeSpan: "0.5us") == .zero)
        do {
            _ = try Duration(systemdTimeSpan: "1h 5x")
            Issue.record("1h 5x was accepted")
        } catch {
            #expect(error.code == .invalidDelay)
            #expect(error.value == "1h 5x")
            #expect(error.detail == "an unknown unit at offset 4")
        }
        #expect(throws: PreciseTimerError.self) { try Duration(systemdTimeSpan: "infinity") }
        #expect(throws: PreciseTimerError.self) { try Duration(systemdTimeSpan: "1h\u{0}") }
        // Accepted as systemd accepts it; a service refuses to schedule it.
        #expect(try Duration(systemdTimeSpan: "500y") > TestLimits.maximumDuration)
    }
}

/// ``/PreciseTimerCore/TimerService/maximumDuration``, without a service.
enum TestLimits {
    static let maximumDuration = Duration.nanoseconds(Int64(1) << 62)
}
