import Foundation

/// The rows of `Fixtures/oracle.tsv`: spec, base (epoch seconds), normalized form or
/// `ERROR: …`, and the next elapses in epoch seconds ("never" when there are none).
struct OracleFixture {
    struct Row {
        /// The process's local zone (`TZ`) when systemd computed the row; nil: UTC.
        var localZone: String?
        var spec: String
        var base: Int64
        /// nil: systemd refused the specification; "GAVE-UP": it accepted it but gave up on its
        /// first elapse (the row's elapses are then "never").
        var normalized: String?
        /// Whole seconds; systemd stops at the first "never".
        var elapses: [String]
    }

    static func rows(file: String = "oracle.tsv") throws -> [Row] {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: true).compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            var fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            // oracle-local.tsv starts each row with the local zone.
            let localZone = fields.count == 5 ? fields.removeFirst() : nil
            guard fields.count == 4, let base = Int64(fields[1]) else { return nil }
            let normalized = fields[2].hasPrefix("ERROR:") ? nil : fields[2]
            let elapses =
                fields[3].isEmpty
                ? []
                : fields[3].split(separator: ",").map { value in
                    // Fractional elapses are compared at whole seconds.
                    String(value.split(separator: ".")[0])
                }
            return Row(localZone: localZone, spec: fields[0], base: base, normalized: normalized, elapses: elapses)
        }
    }
}
