import PreciseTimerCore

/// One row of ``/PreciseTimerCalendar/PreciseTimerCore/TimerService/listTimers()``: a scheduled timer, as
/// `systemctl list-timers` shows a timer unit.
public struct TimerListing: Sendable, Hashable {
    /// The timer's ID (UNIT).
    public let id: TimerID
    /// Its next elapse on the wall clock (NEXT); `nil` when it is not known (paused, a handler
    /// running, no elapse left).
    public let next: WallClockInstant?
    /// How long until ``next`` (LEFT), from the wall clock when listed; `nil` with it.
    public let left: Duration?
    /// When it last elapsed (LAST): for a unit, the occurrence (the schedule's instant, without
    /// the random delay) it last ran in this process or its store's last trigger, whichever is
    /// later; `nil` for a plain timer (the service keeps no history).
    public let last: WallClockInstant?
    /// How long ago ``last`` was (PASSED); `nil` with it.
    public let passed: Duration?

    /// Creates a row. ``/PreciseTimerCalendar/PreciseTimerCore/TimerService/listTimers()`` makes these; tests may too.
    public init(id: TimerID, next: WallClockInstant?, left: Duration?, last: WallClockInstant?, passed: Duration?) {
        self.id = id
        self.next = next
        self.left = left
        self.last = last
        self.passed = passed
    }

    /// The rows as `systemctl list-timers` prints them: a header (`NEXT LEFT LAST PASSED UNIT`),
    /// one line per row in the given order, columns padded to their widest cell, instants in UTC
    /// (`Thu 2026-01-01 06:00:00 UTC`), spans as systemd writes them (`1h 30min left`, `5s ago`),
    /// `-` for what is not known, and a last line with the count (`3 timers listed.`).
    ///
    /// - Parameter rows: The rows, usually ``/PreciseTimerCalendar/PreciseTimerCore/TimerService/listTimers()``'s.
    /// - Returns: The table, lines separated by `\n`, without a final newline.
    public static func table(_ rows: [TimerListing]) -> String {
        let header = ["NEXT", "LEFT", "LAST", "PASSED", "UNIT"]
        let cells = rows.map { row in
            [
                row.next.map(Self.format) ?? "-", row.left.map { "\(Self.span($0)) left" } ?? "-",
                row.last.map(Self.format) ?? "-", row.passed.map { "\(Self.span($0)) ago" } ?? "-", "\(row.id)",
            ]
        }
        let widths = (0..<header.count).map { column in
            ([header] + cells).map { $0[column].count }.max() ?? 0
        }
        func line(_ cells: [String]) -> String {
            var text = ""
            for (column, cell) in cells.enumerated() {
                if column == cells.count - 1 {
                    text += cell
                } else {
                    text += cell + String(repeating: " ", count: widths[column] - cell.count + 1)
                }
            }
            return text
        }
        let count = rows.count == 1 ? "1 timer listed." : "\(rows.count) timers listed."
        return ([line(header)] + cells.map(line) + ["", count]).joined(separator: "\n")
    }

    /// `Thu 2026-01-01 06:00:00 UTC`, as systemd prints a timestamp.
    private static func format(_ instant: WallClockInstant) -> String {
        let iso = instant.description  // 2026-01-01T06:00:00.000000000Z
        guard let t = iso.firstIndex(of: "T"), let dot = iso.firstIndex(of: ".") else { return iso }
        let seconds = CivilTime.floorDivide(Int(instant.nanosecondsSinceEpoch), 1_000_000_000).quotient
        let weekday = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"][
            BrokenDownTime(localSeconds: seconds, isDST: false).weekday]
        return "\(weekday) \(iso[..<t]) \(iso[iso.index(after: t)..<dot]) UTC"
    }

    /// A span as systemd writes it, to the second (`1h 30min`, `5s`, `0s`).
    private static func span(_ duration: Duration) -> String {
        let seconds = max(0, duration.components.seconds)
        return Duration.seconds(seconds).systemdTimeSpanDescription
    }
}

extension TimerService {
    /// Every scheduled timer, as `systemctl list-timers` lists timer units: units scheduled with
    /// ``schedule(unit:id:store:_:)`` and plain timers alike, sorted by ``TimerListing/next``
    /// (earliest first, then the timers without a next elapse, each group by ID).
    ///
    /// A unit's NEXT is its planned elapse with its random delay, and its LAST the later of its
    /// last run here and its store's last trigger. A plain timer's NEXT is its
    /// ``/PreciseTimerCore/TimerService/wallClockDeadline(of:)``, or its
    /// ``/PreciseTimerCore/TimerService/deadline(of:)`` mapped to the wall clock now; the service
    /// keeps no history of plain timers, so their LAST is `nil`. A snapshot: timers may fire or be
    /// cancelled while it is taken.
    ///
    /// - Returns: One row per scheduled timer; print them with ``TimerListing/table(_:)``.
    public func listTimers() -> [TimerListing] {
        let now = self.now
        let wall = self.wallClockNow
        let host = self as? any TimerUnitHost
        var rows: [TimerListing] = []
        for id in self.scheduledIDs {
            let next: WallClockInstant?
            var last: WallClockInstant?
            if let record = host?.units.record(for: id), host?.isCurrent(record.handle) == true {
                next = self.isPaused(id) ? nil : record.nextElapse
                last = record.lastTrigger
            } else if let deadline = self.wallClockDeadline(of: id) {
                next = deadline
            } else if let deadline = self.deadline(of: id) {
                next = wall.advanced(by: deadline - now)
            } else {
                next = nil
            }
            rows.append(
                TimerListing(
                    id: id, next: next, left: next.map { max(.zero, wall.duration(to: $0)) }, last: last,
                    passed: last.map { max(.zero, $0.duration(to: wall)) }))
        }
        return rows.sorted { a, b in
            switch (a.next, b.next) {
            case (let x?, let y?) where x != y: x < y
            case (.some, nil): true
            case (nil, .some): false
            default: a.id.description < b.id.description
            }
        }
    }
}
