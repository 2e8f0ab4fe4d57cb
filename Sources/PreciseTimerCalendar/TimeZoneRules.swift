/// One local time type of a zone: its offset east of UTC and whether it is daylight saving time.
struct LocalTimeType: Sendable {
    var utcOffset: Int
    var isDST: Bool
}

/// The rules of one time zone, read from a TZif file of the system's tzdata
/// (`/usr/share/zoneinfo`, RFC 8536) or from a POSIX `TZ` value: the same data glibc's
/// `localtime_r` and systemd read on this machine.
///
/// Immutable and shared: ``TimeZoneDirectory`` loads each named zone once.
final class TimeZoneRules: Sendable {
    /// The name the zone was asked for (`Europe/Berlin`), `UTC`, or where the local zone came from.
    let name: String
    /// Instants (seconds since the epoch) at which the local time type changes, ascending.
    private let transitions: [Int]
    /// The type in effect from each transition on.
    private let transitionTypes: [LocalTimeType]
    /// Before the first transition: the first standard-time type, as glibc chooses.
    private let initialType: LocalTimeType
    /// After the last transition: the file's footer, when it has one.
    private let footer: PosixTimeZoneRule?
    /// The abbreviations of standard and daylight time (glibc's `tzname`), for systemd's rule
    /// that a specification may end in the local zone's abbreviation.
    let abbreviations: (standard: String?, daylight: String?)
    /// The leap seconds of a `right/` zone: from each instant on (a count of seconds that
    /// includes the leap seconds, as the file's transitions do), the seconds to take off
    /// before reading the clock. Empty for every other zone.
    let leapSeconds: [(from: Int, correction: Int)]

    /// UTC: one type, no transitions.
    static let utc = TimeZoneRules(
        name: "UTC", transitions: [], transitionTypes: [], initialType: LocalTimeType(utcOffset: 0, isDST: false),
        footer: nil, abbreviations: ("UTC", nil))

    init(
        name: String, transitions: [Int], transitionTypes: [LocalTimeType], initialType: LocalTimeType,
        footer: PosixTimeZoneRule?, abbreviations: (standard: String?, daylight: String?),
        leapSeconds: [(from: Int, correction: Int)] = []
    ) {
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.initialType = initialType
        self.footer = footer
        self.abbreviations = abbreviations
        self.leapSeconds = leapSeconds
        // Etc/UTC, the usual /etc/localtime of a server, has a footer ("UTC0") but never moves.
        let footerIsUTC = footer.map { $0.daylight == nil && $0.standard.utcOffset == 0 } ?? true
        self.isUTC =
            transitions.isEmpty && footerIsUTC && initialType.utcOffset == 0 && !initialType.isDST
            && leapSeconds.isEmpty
    }

    /// A zone from a POSIX `TZ` value alone (`EST5EDT,M3.2.0,M11.1.0`).
    convenience init(name: String, rule: PosixTimeZoneRule) {
        self.init(
            name: name, transitions: [], transitionTypes: [],
            initialType: LocalTimeType(utcOffset: rule.standard.utcOffset, isDST: false), footer: rule,
            abbreviations: (rule.standard.name, rule.daylight?.offset.name))
    }

    /// UTC as glibc's `gmtime_r` and `timegm` compute it in a process whose local zone is
    /// `local`: with `local`'s leap seconds (a `right/` zone's), otherwise plain ``utc``.
    static func utc(in local: TimeZoneRules) -> TimeZoneRules {
        guard !local.leapSeconds.isEmpty else { return .utc }
        return TimeZoneRules(
            name: "UTC", transitions: [], transitionTypes: [], initialType: LocalTimeType(utcOffset: 0, isDST: false),
            footer: nil, abbreviations: ("UTC", nil), leapSeconds: local.leapSeconds)
    }

    /// No transitions, and a rule (if any) of offset 0 without DST: conversions are plain
    /// arithmetic (`mktime` there converges on its first probe, as `timegm` does).
    let isUTC: Bool

    /// The local time type at `instant`, and the range of instants `[validFrom, validUntil)`
    /// around it over which it holds (so a caller can skip the look-up for nearby instants).
    func localTime(at instant: Int) -> (type: LocalTimeType, validFrom: Int, validUntil: Int) {
        let answer = self.localTimeWithoutLeapSeconds(at: instant)
        guard !self.leapSeconds.isEmpty else { return answer }
        // glibc's `__tzfile_compute`: the correction of the last leap second at or before the
        // instant comes off the offset (the inserted second itself reads as second 60:
        // ``isInsertedLeapSecond(_:)``).
        var low = 0
        var high = self.leapSeconds.count
        while low < high {
            let middle = (low + high) / 2
            if self.leapSeconds[middle].from <= instant { low = middle + 1 } else { high = middle }
        }
        var type = answer.type
        var from = answer.validFrom
        var until = answer.validUntil
        if low > 0 {
            type.utcOffset -= self.leapSeconds[low - 1].correction
            from = max(from, self.leapSeconds[low - 1].from)
        }
        if low < self.leapSeconds.count { until = min(until, self.leapSeconds[low].from) }
        return (type, from, until)
    }

    /// Whether `instant` is an inserted leap second (the first instant of a leap-second record
    /// whose correction grows): glibc's `localtime_r` reads it as second 60 of its minute.
    func isInsertedLeapSecond(_ instant: Int) -> Bool {
        guard !self.leapSeconds.isEmpty else { return false }
        var low = 0
        var high = self.leapSeconds.count
        while low < high {
            let middle = (low + high) / 2
            if self.leapSeconds[middle].from < instant { low = middle + 1 } else { high = middle }
        }
        guard low < self.leapSeconds.count, self.leapSeconds[low].from == instant else { return false }
        return self.leapSeconds[low].correction > (low == 0 ? 0 : self.leapSeconds[low - 1].correction)
    }

    private func localTimeWithoutLeapSeconds(at instant: Int) -> (type: LocalTimeType, validFrom: Int, validUntil: Int)
    {
        let count = self.transitions.count
        if count == 0 || instant < self.transitions[0] {
            if count == 0, let footer = self.footer { return footer.localTime(at: instant) }
            return (self.initialType, .min, count == 0 ? .max : self.transitions[0])
        }
        if instant >= self.transitions[count - 1] {
            guard let footer = self.footer else {
                return (self.transitionTypes[count - 1], self.transitions[count - 1], .max)
            }
            let answer = footer.localTime(at: instant)
            return (answer.type, max(answer.validFrom, self.transitions[count - 1]), answer.validUntil)
        }
        // The last transition at or before the instant.
        var low = 0
        var high = count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if self.transitions[middle] <= instant { low = middle } else { high = middle - 1 }
        }
        return (self.transitionTypes[low], self.transitions[low], self.transitions[low + 1])
    }
}

extension TimeZoneRules {
    /// Reads a TZif file's contents (versions 1 to 4; the 64-bit body when there is one).
    /// nil when the bytes are not a TZif file.
    convenience init?(name: String, tzif bytes: [UInt8]) {
        guard let file = TZifContents(bytes) else { return nil }
        self.init(
            name: name, transitions: file.times, transitionTypes: file.indices.map { file.types[$0].type },
            initialType: file.initialType, footer: file.footer.map { PosixTimeZoneRule(leniently: $0) },
            abbreviations: file.timeZoneNames, leapSeconds: file.leapSeconds)
    }

    /// glibc's `__tzfile_default`: a `TZ` that names a daylight time but no changes
    /// (`EST5EDT`) takes them from the TZif file `posixrules` (`bytes`; America/New_York
    /// here), each transition moved by the difference between the file's offsets and
    /// `standard`'s or `daylight`'s and pointed at one of the two. The file's footer stays as it
    /// is, offsets included: after its last transition (2037 in Debian's files) glibc reads the
    /// footer's rule. nil where glibc gives up on the file (fewer than two types).
    convenience init?(
        name: String, posixRules bytes: [UInt8], standard: PosixTimeZoneRule.Offset,
        daylight: PosixTimeZoneRule.Offset
    ) {
        guard let file = TZifContents(bytes), file.types.count >= 2 else { return nil }
        // The rule file's own offsets: those of the latest standard and daylight transitions.
        var ruleStandard: Int?
        var ruleDaylight: Int?
        for index in file.indices.reversed() {
            let type = file.types[index].type
            if type.isDST {
                ruleDaylight = ruleDaylight ?? type.utcOffset
            } else {
                ruleStandard = ruleStandard ?? type.utcOffset
            }
            if ruleStandard != nil && ruleDaylight != nil { break }
        }
        let fileStandard = file.indices.isEmpty ? file.types[0].type.utcOffset : (ruleStandard ?? 0)
        let fileDaylight = file.indices.isEmpty ? fileStandard : (ruleDaylight ?? fileStandard)
        var times = file.times
        var wasDST = false
        for (position, index) in file.indices.enumerated() {
            let type = file.types[index]
            if type.isUT {
                // Given in UTC: no correction.
            } else if wasDST && !type.isStandard {
                times[position] += daylight.utcOffset - fileDaylight
            } else {
                times[position] += standard.utcOffset - fileStandard
            }
            wasDST = type.type.isDST
        }
        let standardType = LocalTimeType(utcOffset: standard.utcOffset, isDST: false)
        let daylightType = LocalTimeType(utcOffset: daylight.utcOffset, isDST: true)
        self.init(
            name: name, transitions: times,
            transitionTypes: file.indices.map { file.types[$0].type.isDST ? daylightType : standardType },
            initialType: standardType, footer: file.footer.map { PosixTimeZoneRule(leniently: $0) },
            abbreviations: (standard.name, daylight.name), leapSeconds: file.leapSeconds)
    }
}

/// What ``TimeZoneRules`` takes from a TZif file, read as glibc's `__tzfile_read` reads it.
private struct TZifContents {
    struct TypeRecord {
        var type: LocalTimeType
        var abbreviationIndex: Int
        /// The transition times of this type were given in standard time (the file's `isstd`).
        var isStandard: Bool
        /// ... or in UTC (`isut`).
        var isUT: Bool
    }

    var times: [Int]
    var indices: [Int]
    var types: [TypeRecord]
    var characters: [UInt8]
    var leapSeconds: [(from: Int, correction: Int)]
    var footer: String?

    init?(_ bytes: [UInt8]) {
        var reader = TZifReader(bytes: bytes)
        guard let first = reader.header() else { return nil }
        var header = first
        var timeSize = 4
        if first.version >= 2 {
            // Skip the 32-bit body; the 64-bit one follows with its own header.
            guard reader.skip(first.bodySize(timeSize: 4)), let second = reader.header() else { return nil }
            header = second
            timeSize = 8
        }
        guard let times = reader.integers(count: header.transitionCount, size: timeSize),
            let indices = reader.take(header.transitionCount)
        else { return nil }
        var types: [TypeRecord] = []
        for _ in 0..<header.typeCount {
            guard let offset = reader.integers(count: 1, size: 4), let flags = reader.take(2) else { return nil }
            types.append(
                TypeRecord(
                    type: LocalTimeType(utcOffset: offset[0], isDST: flags[0] != 0), abbreviationIndex: Int(flags[1]),
                    isStandard: false, isUT: false))
        }
        guard !types.isEmpty, let characters = reader.take(header.characterCount),
            indices.allSatisfy({ Int($0) < types.count })
        else { return nil }
        var leapSeconds: [(from: Int, correction: Int)] = []
        for _ in 0..<header.leapCount {
            guard let occurrence = reader.integers(count: 1, size: timeSize),
                let correction = reader.integers(count: 1, size: 4)
            else { return nil }
            leapSeconds.append((occurrence[0], correction[0]))
        }
        guard let standardFlags = reader.take(header.standardWallCount),
            let universalFlags = reader.take(header.universalCount)
        else { return nil }
        for index in types.indices {
            types[index].isStandard = index < standardFlags.count && standardFlags[index] != 0
            types[index].isUT = index < universalFlags.count && universalFlags[index] != 0
        }
        self.times = times
        self.indices = indices.map(Int.init)
        self.types = types
        self.characters = characters
        self.leapSeconds = leapSeconds
        // glibc ignores an empty footer.
        self.footer = header.version >= 2 ? reader.footer().flatMap { $0.isEmpty ? nil : $0 } : nil
    }

    func abbreviation(_ index: Int) -> String? {
        guard index < self.characters.count else { return nil }
        let end = self.characters[index...].firstIndex(of: 0) ?? self.characters.count
        return String(decoding: self.characters[index..<end], as: UTF8.self)
    }

    /// Before the first transition glibc reads the first standard-time type (or the first type).
    var initialType: LocalTimeType {
        (self.types.first(where: { !$0.type.isDST }) ?? self.types[0]).type
    }

    /// glibc's `tzname` after `tzset`: the abbreviations of the latest standard and daylight
    /// transitions, not the footer's (Europe/Minsk's footer `<+03>-3` has no daylight name,
    /// `tzname[1]` is EEST, its DST until 2010); the daylight one is the standard one when the
    /// file has no daylight transition; without transitions, the first type's.
    var timeZoneNames: (standard: String?, daylight: String?) {
        var standard: String?
        var daylight: String?
        for index in self.indices.reversed() {
            let type = self.types[index]
            if type.type.isDST {
                daylight = daylight ?? self.abbreviation(type.abbreviationIndex)
            } else {
                standard = standard ?? self.abbreviation(type.abbreviationIndex)
            }
            if standard != nil && daylight != nil { break }
        }
        standard = standard ?? self.abbreviation(self.types[0].abbreviationIndex)
        return (standard, daylight ?? standard)
    }
}

/// The reader behind ``TimeZoneRules/init(name:tzif:)``: bounds-checked, never traps.
private struct TZifReader {
    struct Header {
        var version: Int
        var universalCount: Int
        var standardWallCount: Int
        var leapCount: Int
        var transitionCount: Int
        var typeCount: Int
        var characterCount: Int

        func bodySize(timeSize: Int) -> Int {
            self.transitionCount * (timeSize + 1) + self.typeCount * 6 + self.characterCount
                + self.leapCount * (timeSize + 4) + self.standardWallCount + self.universalCount
        }
    }

    let bytes: [UInt8]
    var index = 0

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, self.bytes.count - self.index >= count else { return false }
        self.index += count
        return true
    }

    mutating func take(_ count: Int) -> [UInt8]? {
        guard count >= 0, self.bytes.count - self.index >= count else { return nil }
        defer { self.index += count }
        return Array(self.bytes[self.index..<self.index + count])
    }

    /// Big-endian signed integers of `size` bytes (4 or 8).
    mutating func integers(count: Int, size: Int) -> [Int]? {
        guard count >= 0, count <= (self.bytes.count - self.index) / size else { return nil }
        var values: [Int] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            var value: UInt64 = 0
            for offset in 0..<size { value = value << 8 | UInt64(self.bytes[self.index + offset]) }
            self.index += size
            values.append(size == 4 ? Int(Int32(truncatingIfNeeded: value)) : Int(Int64(bitPattern: value)))
        }
        return values
    }

    mutating func header() -> Header? {
        guard let magic = self.take(5), magic[0...3].elementsEqual("TZif".utf8),
            self.skip(15), let counts = self.integers(count: 6, size: 4), counts.allSatisfy({ $0 >= 0 })
        else { return nil }
        let version = magic[4] == 0 ? 1 : Int(magic[4]) - Int(UInt8(ascii: "0"))
        guard version >= 1 else { return nil }
        return Header(
            version: version, universalCount: counts[0], standardWallCount: counts[1], leapCount: counts[2],
            transitionCount: counts[3], typeCount: counts[4], characterCount: counts[5])
    }

    /// The footer's `TZ` string, between two newlines.
    mutating func footer() -> String? {
        guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\n") else { return nil }
        let start = self.index + 1
        guard let end = self.bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        return String(decoding: self.bytes[start..<end], as: UTF8.self)
    }
}
