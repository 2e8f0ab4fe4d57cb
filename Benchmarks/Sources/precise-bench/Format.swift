import Foundation

/// Number formatting for the table.
enum Format {
    /// Nanoseconds as microseconds: one decimal below 100 µs, whole above.
    static func micro(_ nanoseconds: Double) -> String {
        guard nanoseconds.isFinite else { return "–" }
        let micro = nanoseconds / 1_000
        return micro.magnitude < 100 ? String(format: "%.1f", micro) : String(format: "%.0f", micro)
    }

    /// Nanoseconds as milliseconds with two decimals.
    static func milli(_ nanoseconds: Double) -> String {
        nanoseconds.isFinite ? String(format: "%.2f", nanoseconds / 1_000_000) : "–"
    }

    /// A whole number (nanoseconds, bytes, counts).
    static func whole(_ value: Double) -> String {
        value.isFinite ? String(format: "%.0f", value) : "–"
    }

    /// A difference rounded to an integer, with its sign (`+12`, `-3`, `0`).
    static func signedWhole(_ value: Double) -> String {
        value.isFinite && value.rounded() > 0 ? "+" + whole(value) : whole(value)
    }

    /// A share as a percentage with one decimal.
    static func percent(_ share: Double) -> String {
        share.isFinite ? String(format: "%.1f %%", share * 100) : "–"
    }

    /// Seconds without a needless decimal: `"2 s"`, `"0.5 s"`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// A count, short when round: `"1M"`, `"200k"`; otherwise the exact number.
    static func count(_ value: Int) -> String {
        if value >= 1_000_000, value % 1_000_000 == 0 { return "\(value / 1_000_000)M" }
        if value >= 1_000, value % 1_000 == 0 { return "\(value / 1_000)k" }
        return "\(value)"
    }

    /// A ratio, e.g. `"1.45×"`.
    static func ratio(_ value: Double) -> String {
        value.isFinite ? String(format: "%.2f×", value) : "–"
    }
}
