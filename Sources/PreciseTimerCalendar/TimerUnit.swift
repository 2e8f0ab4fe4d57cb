import PreciseTimerCore

/// The `[Timer]` section of a systemd timer unit (`systemd.timer(5)`), read as systemd 252 reads
/// it: paste a `.timer` file and get its triggers, delays and flags.
///
/// ```swift
/// let unit = try TimerUnit("""
///     [Unit]
///     Description=Daily apt download activities
///
///     [Timer]
///     OnCalendar=*-*-* 6,18:00
///     RandomizedDelaySec=12h
///     Persistent=true
///     """)
/// unit.onCalendar        // [*-*-* 06,18:00:00]
/// unit.randomizedDelay   // 43200 seconds
/// unit.persistent        // true
/// ```
///
/// The unit-file syntax is systemd's: `#` and `;` comment lines (also inside a continued line),
/// a trailing backslash continuing a line, whitespace around `=`, booleans as `yes`/`no`,
/// `true`/`false`, `on`/`off`, `1`/`0`, `y`/`n`, `t`/`f` in any case, keys in their exact case.
/// `[Unit]`, `[Install]` and `X-…` sections are skipped (their keys unchecked), and `X-…` keys
/// in `[Timer]` are listed in ``ignored``. Text without any section header is read as the body
/// of a `[Timer]` section.
///
/// Where systemd warns and ignores a line, this refuses it: a library refuses the typo
/// (`OnCalender=`) that would leave a job silently unscheduled. Refused: a key systemd.timer(5)
/// does not know, a value systemd would not parse, an empty value where no reset is defined
/// (`Persistent=`, `AccuracySec=`), a second `Unit=`, a section other than the three above, a
/// line without `=`, `%` specifiers other than `%%` (systemd fills them from the unit's name,
/// which a `TimerUnit` does not have), `infinity` as a span, and a unit without any trigger
/// (systemd's "lacks value setting"). The package's tests compare these verdicts with
/// `systemd-analyze verify` over hundreds of unit files, and read the `.timer` files of Debian
/// 12's packages.
public struct TimerUnit: Sendable, Hashable, CustomStringConvertible {
    /// `OnCalendar=`: the calendar triggers, one per line; the earliest next elapse of all
    /// triggers wins. Default: none.
    public var onCalendar: [CalendarSchedule] = []
    /// `OnActiveSec=`: spans after the timer is started (scheduled). Default: none.
    public var onActive: [Duration] = []
    /// `OnBootSec=`: spans after the machine booted (`CLOCK_BOOTTIME`'s zero). Default: none.
    public var onBoot: [Duration] = []
    /// `OnStartupSec=`: spans after the service that runs the timers started (in systemd,
    /// after the service manager started). Default: none.
    public var onStartup: [Duration] = []
    /// `OnUnitActiveSec=`: spans after the unit's handler last started. Default: none.
    public var onUnitActive: [Duration] = []
    /// `OnUnitInactiveSec=`: spans after the unit's handler last ended. Default: none.
    public var onUnitInactive: [Duration] = []
    /// `AccuracySec=`: how late an elapse may be, so that wake-ups coalesce (a timer's
    /// tolerance). Default: 1 minute, as in systemd.
    public var accuracy: Duration = .seconds(60)
    /// `RandomizedDelaySec=`: each elapse is delayed by a random span between zero and this.
    /// Default: zero (no delay).
    public var randomizedDelay: Duration = .zero
    /// `FixedRandomDelay=`: the random delay is the same at every elapse, stable for the
    /// machine and the unit (derived, as systemd derives it, from `/etc/machine-id` and the
    /// unit's name: here its ID). With a store shared by machines
    /// (``TimerStateStore/isSharedAcrossMachines``), stable for the unit alone, so that a fleet
    /// agrees on when each occurrence elapses. Default: false.
    public var fixedRandomDelay = false
    /// `Persistent=`: an `OnCalendar=` elapse missed while nothing ran is run once, when the
    /// timer starts. Default: false.
    public var persistent = false
    /// `WakeSystem=`: elapses wake the machine from suspend (an `_ALARM` clock where the
    /// process may use one). Default: false.
    public var wakeSystem = false
    /// The directives accepted but without meaning in a process, as `Key=value` lines in the
    /// order given: `Unit=` (the handler is the unit), `RemainAfterElapse=`, `OnClockChange=`,
    /// `OnTimezoneChange=`, and `X-…` keys (extensions systemd itself ignores). Reported, never
    /// silently dropped. Default: none.
    public var ignored: [String] = []

    /// Reads a `.timer` file, or the body of its `[Timer]` section.
    ///
    /// - Parameter unitFile: The file's text. `[Unit]`, `[Install]` and `X-…` sections are
    ///   skipped; text without a section header is read as a `[Timer]` section's body. An empty
    ///   assignment to a trigger (`OnCalendar=`, `OnBootSec=`, …) removes every trigger given
    ///   before it, calendar and monotonic alike, as in systemd.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with code
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidSchedule``, `value` the offending
    ///   line (continuations joined), and `detail` starting with its line number ("line 7: …",
    ///   "lines 4-6: …" for a continued one) and saying what is wrong: an unknown key or section,
    ///   a calendar specification or time span that does not parse (with that parser's reason),
    ///   a bad boolean, a missing `=`. A unit without any trigger throws with `value` nil. Never
    ///   traps.
    public init(_ unitFile: String) throws(PreciseTimerError) {
        let lines = UnitFileReader.lines(unitFile)
        // Where assignments go: nil before any header (an error when the text has headers).
        var section: Section? = lines.contains { $0.text.hasPrefix("[") } ? nil : .timer
        var sawUnit = false
        // OnClockChange= and OnTimezoneChange=, as the last line set them.
        var clockTriggers: [String: Bool] = [:]
        for line in lines {
            let text = line.text
            func refuse(_ reason: String) -> PreciseTimerError {
                PreciseTimerError(.invalidSchedule, value: text, detail: "\(line.place): \(reason)")
            }
            if text.hasPrefix("[") {
                guard text.hasSuffix("]"), text.count >= 2 else { throw refuse("an invalid section header") }
                let name = String(text.dropFirst().dropLast())
                switch name {
                case "Timer": section = .timer
                case "Unit", "Install": section = .other
                case _ where name.hasPrefix("X-"): section = .extension
                default:
                    throw refuse("an unknown section [\(name)]; a timer unit has [Unit], [Timer] and [Install]")
                }
                continue
            }
            guard let current = section else { throw refuse("an assignment before any section header") }
            if current == .extension { continue }
            guard let equals = text.firstIndex(of: "=") else { throw refuse("no '=' in the line") }
            guard equals != text.startIndex else { throw refuse("no key before '='") }
            if current == .other { continue }
            let key = UnitFileReader.strip(text[..<equals])
            let value = UnitFileReader.strip(text[text.index(after: equals)...])
            do throws(Refusal) {
                switch key {
                case "OnCalendar", "OnActiveSec", "OnBootSec", "OnStartupSec", "OnUnitActiveSec", "OnUnitInactiveSec":
                    guard !value.isEmpty else {
                        self.removeTriggers()
                        continue
                    }
                    let expanded = try Self.expandSpecifiers(value)
                    switch key {
                    case "OnCalendar": self.onCalendar.append(try Self.calendar(expanded))
                    case "OnActiveSec": self.onActive.append(try Self.span(expanded))
                    case "OnBootSec": self.onBoot.append(try Self.span(expanded))
                    case "OnStartupSec": self.onStartup.append(try Self.span(expanded))
                    case "OnUnitActiveSec": self.onUnitActive.append(try Self.span(expanded))
                    default: self.onUnitInactive.append(try Self.span(expanded))
                    }
                case "AccuracySec": self.accuracy = try Self.span(value)
                case "RandomizedDelaySec": self.randomizedDelay = try Self.span(value)
                case "FixedRandomDelay": self.fixedRandomDelay = try Self.boolean(value)
                case "Persistent": self.persistent = try Self.boolean(value)
                case "WakeSystem": self.wakeSystem = try Self.boolean(value)
                case "OnClockChange", "OnTimezoneChange", "RemainAfterElapse":
                    // Checked as systemd checks it, then reported: a process sees no clock
                    // change, and has no unit state to remain in.
                    clockTriggers[key] = try Self.boolean(value)
                    self.ignored.append("\(key)=\(value)")
                case "Unit":
                    guard Self.isUnitName(try Self.expandSpecifiers(value)) else {
                        throw Refusal(
                            "'\(value)' is not a unit name with a valid type (name.service, name@instance.target, …)")
                    }
                    guard !sawUnit else { throw Refusal("a second Unit=; a timer triggers one unit") }
                    sawUnit = true
                    self.ignored.append("\(key)=\(value)")
                case _ where key.hasPrefix("X-"):
                    // systemd's extension keys: accepted without a word in systemd, reported here.
                    self.ignored.append("\(key)=\(value)")
                default:
                    let hint = Self.nearestDirective(to: key).map { "; did you mean \($0)=?" } ?? ""
                    throw Refusal("an unknown key '\(key)' in [Timer] (systemd.timer(5) has no such directive)\(hint)")
                }
            } catch {
                throw refuse("\(key)=: \(error.reason)")
            }
        }
        // systemd refuses to load such a unit ("lacks value setting"); OnClockChange= and
        // OnTimezoneChange= count there, so they count here, though they never elapse in process.
        if self.hasNoTrigger && clockTriggers["OnClockChange"] != true && clockTriggers["OnTimezoneChange"] != true {
            throw PreciseTimerError(
                .invalidSchedule,
                detail: "no trigger: a timer unit needs OnCalendar= or OnActiveSec=, OnBootSec=, OnStartupSec=, "
                    + "OnUnitActiveSec=, OnUnitInactiveSec=")
        }
    }

    /// The `[Timer]` section, normalized: a `[Timer]` header, then one line per trigger
    /// (`OnCalendar=` in systemd's normalized form, spans as systemd writes them: `1h 30min`),
    /// then the settings that differ from their defaults, then the ``ignored`` lines. Reading it
    /// back gives an equal unit, but for each calendar schedule's ``CalendarSchedule/specification``,
    /// which becomes the normalized form.
    public var description: String {
        var lines = ["[Timer]"]
        lines += self.onCalendar.map { "OnCalendar=\($0.description)" }
        let spans: [(String, [Duration])] = [
            ("OnActiveSec", self.onActive), ("OnBootSec", self.onBoot), ("OnStartupSec", self.onStartup),
            ("OnUnitActiveSec", self.onUnitActive), ("OnUnitInactiveSec", self.onUnitInactive),
        ]
        for (key, values) in spans {
            lines += values.map { "\(key)=\($0.systemdTimeSpanDescription)" }
        }
        if self.accuracy != .seconds(60) { lines.append("AccuracySec=\(self.accuracy.systemdTimeSpanDescription)") }
        if self.randomizedDelay != .zero {
            lines.append("RandomizedDelaySec=\(self.randomizedDelay.systemdTimeSpanDescription)")
        }
        if self.fixedRandomDelay { lines.append("FixedRandomDelay=yes") }
        if self.persistent { lines.append("Persistent=yes") }
        if self.wakeSystem { lines.append("WakeSystem=yes") }
        lines += self.ignored
        return lines.joined(separator: "\n")
    }

    private enum Section { case timer, other, `extension` }

    /// The directives of systemd.timer(5) in systemd 252 (`systemd --dump-configuration-items`).
    private static let directives = [
        "OnCalendar", "OnActiveSec", "OnBootSec", "OnStartupSec", "OnUnitActiveSec", "OnUnitInactiveSec",
        "OnClockChange", "OnTimezoneChange", "Persistent", "WakeSystem", "RemainAfterElapse", "FixedRandomDelay",
        "AccuracySec", "RandomizedDelaySec", "Unit",
    ]

    /// The directive a mistyped key most likely meant: the same letters in another case, or at
    /// most two edits away (`OnCalender`, `RandomisedDelaySec`); nil when none is that close.
    private static func nearestDirective(to key: String) -> String? {
        let typed = Array(key.lowercased().unicodeScalars)
        guard typed.count < 64 else { return nil }
        var best: (name: String, distance: Int)?
        for name in Self.directives {
            let target = Array(name.lowercased().unicodeScalars)
            // Levenshtein distance, one row at a time.
            var previous = Array(0...target.count)
            for (i, a) in typed.enumerated() {
                var current = [i + 1] + Array(repeating: 0, count: target.count)
                for (j, b) in target.enumerated() {
                    current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
                }
                previous = current
            }
            let distance = previous[target.count]
            if distance <= 2, distance < (best?.distance ?? .max) { best = (name, distance) }
        }
        return best?.name
    }

    /// The suffixes systemd's `unit_name_to_type()` knows.
    private static let unitTypes: Set<Substring> = [
        "service", "mount", "swap", "socket", "target", "device", "automount", "timer", "path", "slice", "scope",
    ]

    /// `unit_name_is_valid(name, UNIT_NAME_ANY)`: `name.type`, `name@instance.type` or the
    /// template `name@.type`, of ASCII letters, digits and `:-_.\` (and `@` after the name), at
    /// most 255 bytes.
    private static func isUnitName(_ name: String) -> Bool {
        guard name.utf8.count <= 255, let dot = name.lastIndex(of: "."),
            Self.unitTypes.contains(name[name.index(after: dot)...])
        else { return false }
        let stem = name[..<dot]
        guard let first = stem.first, first != "@" else { return false }
        return stem.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || ":-_.\\@".unicodeScalars.contains(scalar)
        }
    }

    /// Why a directive's value was refused; the caller adds the line.
    private struct Refusal: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    private var hasNoTrigger: Bool {
        self.onCalendar.isEmpty && self.onActive.isEmpty && self.onBoot.isEmpty && self.onStartup.isEmpty
            && self.onUnitActive.isEmpty && self.onUnitInactive.isEmpty
    }

    /// An empty trigger assignment: systemd keeps every trigger in one list and empties it.
    private mutating func removeTriggers() {
        self.onCalendar = []
        self.onActive = []
        self.onBoot = []
        self.onStartup = []
        self.onUnitActive = []
        self.onUnitInactive = []
    }

    private static func calendar(_ value: String) throws(Refusal) -> CalendarSchedule {
        do {
            return try CalendarSchedule(value)
        } catch {
            throw Refusal("'\(value)' is not a calendar specification: \(Self.reason(error))")
        }
    }

    /// The parser's own words: a ``/PreciseTimerCore/PreciseTimerError``'s detail.
    private static func reason(_ error: any Error) -> String {
        (error as? PreciseTimerError)?.detail ?? "\(error)"
    }

    private static func span(_ value: String) throws(Refusal) -> Duration {
        do {
            return try Duration(systemdTimeSpan: value)
        } catch {
            throw Refusal("'\(value)' is not a time span: \(error.detail ?? "\(error)")")
        }
    }

    /// `parse_boolean()`: systemd's words, in any case.
    private static func boolean(_ value: String) throws(Refusal) -> Bool {
        switch value.lowercased() {
        case "1", "yes", "y", "true", "t", "on": return true
        case "0", "no", "n", "false", "f", "off": return false
        case "": throw Refusal("an empty value; a boolean is expected (yes, no, true, false, on, off, 1, 0)")
        default: throw Refusal("'\(value)' is not a boolean (yes, no, true, false, on, off, 1, 0)")
        }
    }

    /// `%%` is `%`; any other specifier (`%i`, `%n`, …) is systemd's text from a unit name.
    private static func expandSpecifiers(_ value: String) throws(Refusal) -> String {
        guard value.contains("%") else { return value }
        var result = ""
        var iterator = value.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            let next = iterator.next()
            guard next == "%" else {
                let specifier = next.map { "%\($0)" } ?? "a trailing %"
                throw Refusal(
                    "the specifier \(specifier): systemd fills it from the unit's name, which a TimerUnit does not have"
                )
            }
            result.append("%")
        }
        return result
    }
}
