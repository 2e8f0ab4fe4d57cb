import Foundation
import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// Issue 21, defect 9: the classes of specifications, local zones (`TZ`) and zone directories
/// (`TZDIR`) where an outside differential found answers other than systemd 252's. Each row of
/// `Fixtures/oracle-classes.tsv` is `systemd-analyze calendar --base-time=@BASE --iterations=5
/// SPEC` on this machine under that environment (`scripts/calendar-oracle --classes-only`).
@Suite("systemd's answers, issue 21's classes")
struct SystemdClassTests {
    @Test(
        "every row of the class agrees with systemd",
        arguments: [
            "description", "slash-word", "at-sign", "right-zone", "abbreviation", "tz-names-nothing", "tz-dot-dot",
            "posix-lenient", "tzdir", "far-daylight",
        ])
    func systemdClass(_ group: String) throws {
        let rows = try OracleFixture.rows(file: "oracle-classes.tsv").filter { $0.group == group }
        #expect(rows.count >= 4)
        let mismatches = OracleFixture.mismatches(in: rows)
        #expect(
            mismatches.isEmpty,
            "\(group): \(mismatches.count) of \(rows.count) rows differ:\n\(mismatches.joined(separator: "\n"))")
    }

    /// systemd fails past its last base time, 9999-12-30 23:59:59 UTC (`systemd-analyze calendar
    /// --base-time=@253402214400 daily`: "Failed to determine next elapse for 'daily': Invalid
    /// argument"), which no `WallClockInstant` reaches (Int64 nanoseconds end in 2262); from
    /// 2199-12-31 23:59:59 (7258118399) to the last instant (9223372036) it answers "never",
    /// as `next(after:)` answers nil.
    @Test("after 2199, up to the last WallClockInstant, next(after:) is nil, as systemd's never")
    func afterTheLastYear() throws {
        for text in ["daily", "*:*:*", "@1800000000", "*-*-* 12:00 Europe/Berlin"] {
            let schedule = try CalendarSchedule(text, localTimeZone: "UTC")
            for seconds: Int64 in [7_258_118_399, 7_258_118_400, Int64.max / 1_000_000_000] {
                #expect(schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: seconds * 1_000_000_000)) == nil)
            }
            #expect(schedule.next(after: WallClockInstant(nanosecondsSinceEpoch: .max)) == nil)
        }
    }

    /// The differential behind the figures in issue 21's note, run on demand:
    /// `scripts/calendar-oracle --differential 21 --output /tmp/differential.tsv`, then
    /// `CALENDAR_DIFFERENTIAL=/tmp/differential.tsv swift test --filter differential`.
    @Test(
        "differential: a table from scripts/calendar-oracle --differential (CALENDAR_DIFFERENTIAL=path)",
        .enabled(if: ProcessInfo.processInfo.environment["CALENDAR_DIFFERENTIAL"] != nil))
    func differential() throws {
        let path = try #require(ProcessInfo.processInfo.environment["CALENDAR_DIFFERENTIAL"])
        let rows = try OracleFixture.rows(file: path)
        var disagreements: [String] = []
        for group in Set(rows.compactMap(\.group)).sorted() {
            let members = rows.filter { $0.group == group }
            let mismatches = OracleFixture.mismatches(in: members)
            let agreeing = members.count - mismatches.count
            print("differential \(group): \(agreeing) of \(members.count) rows agree")
            disagreements += mismatches.map { "\(group): \($0)" }
        }
        print("differential: \(rows.count - disagreements.count) of \(rows.count) rows agree")
        #expect(disagreements.isEmpty, "\(disagreements.prefix(40).joined(separator: "\n"))")
    }

    @Test("a description parses back to the same schedule: every fixture specification")
    func fixtureDescriptionsRoundTrip() throws {
        var checked = 0
        var failures: [String] = []
        for file in ["oracle.tsv", "oracle-local.tsv", "oracle-classes.tsv"] {
            var seen = Set<String>()
            for row in try OracleFixture.rows(file: file)
            where seen.insert((row.localZone ?? "") + "\t" + row.spec).inserted {
                guard
                    let schedule = try? CalendarSchedule(
                        row.spec, localTimeZone: row.localZone ?? "UTC", zoneDirectory: row.zoneDirectory)
                else { continue }
                checked += 1
                if let failure = Self.roundTripFailure(schedule, row.localZone ?? "UTC", row.zoneDirectory) {
                    failures.append(failure)
                }
            }
        }
        #expect(checked > 800)
        #expect(failures.isEmpty, "\(failures.count) of \(checked):\n\(failures.prefix(20).joined(separator: "\n"))")
    }

    @Test("a description parses back to the same schedule: 3 000 generated specifications")
    func generatedDescriptionsRoundTrip() {
        var generator = SpecificationGenerator(seed: 21)
        var checked = 0
        var failures: [String] = []
        for _ in 0..<3_000 {
            let text = generator.next()
            guard let schedule = try? CalendarSchedule(text, localTimeZone: "Europe/Berlin") else { continue }
            checked += 1
            if let failure = Self.roundTripFailure(schedule, "Europe/Berlin", nil) { failures.append(failure) }
        }
        #expect(checked > 400)
        #expect(failures.isEmpty, "\(failures.count) of \(checked):\n\(failures.prefix(20).joined(separator: "\n"))")
    }

    /// nil when `schedule.description`, parsed in the same environment, is an equal schedule
    /// with the same description.
    private static func roundTripFailure(_ schedule: CalendarSchedule, _ zone: String, _ directory: String?) -> String?
    {
        do {
            let again = try CalendarSchedule(schedule.description, localTimeZone: zone, zoneDirectory: directory)
            guard again == schedule, again.description == schedule.description else {
                return "\(schedule.specification) → \(schedule.description) → \(again.description) (another schedule)"
            }
            return nil
        } catch {
            return "\(schedule.specification) → \(schedule.description): refused (\(error))"
        }
    }
}
