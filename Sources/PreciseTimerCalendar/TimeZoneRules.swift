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

    /// UTC: one type, no transitions.
    static let utc = TimeZoneRules(
        name: "UTC", transitions: [], transitionTypes: [], initialType: LocalTimeType(utcOffset: 0, isDST: false),
        footer: nil, abbreviations: ("UTC", nil))

    init(
        name: String, transitions: [Int], transitionTypes: [LocalTimeType], initialType: LocalTimeType,
        footer: PosixTimeZoneRule?, abbreviations: (standard: String?, daylight: String?)
    ) {
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.initialType = initialType
        self.footer = footer
        self.abbreviations = abbreviations
        // Etc/UTC, the usual /etc/localtime of a server, has a footer ("UTC0") but never moves.
        let footerIsUTC = footer.map { $0.daylight == nil && $0.standard.utcOffset == 0 } ?? true
        self.isUTC = transitions.isEmpty && footerIsUTC && initialType.utcOffset == 0 && !initialType.isDST
    }

    /// A zone from a POSIX `TZ` value alone (`EST5EDT,M3.2.0,M11.1.0`).
    convenience init(name: String, rule: PosixTimeZoneRule) {
        self.init(
            name: name, transitions: [], transitionTypes: [],
            initialType: LocalTimeType(utcOffset: rule.standard.utcOffset, isDST: false), footer: rule,
            abbreviations: (rule.standard.name, rule.daylight?.offset.name))
    }

    /// No transitions, and a rule (if any) of offset 0 without DST: conversions are plain
    /// arithmetic (`mktime` there converges on its first probe, as `timegm` does).
    let isUTC: Bool

    /// The local time type at `instant`, and the range of instants `[validFrom, validUntil)`
    /// around it over which it holds (so a caller can skip the look-up for nearby instants).
    func localTime(at instant: Int) -> (type: LocalTimeType, validFrom: Int, validUntil: Int) {
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
        var types: [(type: LocalTimeType, abbreviationIndex: Int)] = []
        for _ in 0..<header.typeCount {
            guard let offset = reader.integers(count: 1, size: 4), let flags = reader.take(2) else { return nil }
            types.append((LocalTimeType(utcOffset: offset[0], isDST: flags[0] != 0), Int(flags[1])))
        }
        guard !types.isEmpty, let characters = reader.take(header.characterCount),
            reader.skip(header.leapCount * (timeSize + 4) + header.standardWallCount + header.universalCount),
            indices.allSatisfy({ Int($0) < types.count })
        else { return nil }
        var footer: PosixTimeZoneRule?
        if header.version >= 2, let text = reader.footer(), !text.isEmpty {
            footer = PosixTimeZoneRule(parsing: text)
        }
        func abbreviation(_ index: Int) -> String? {
            guard index < characters.count else { return nil }
            let end = characters[index...].firstIndex(of: 0) ?? characters.count
            return String(decoding: characters[index..<end], as: UTF8.self)
        }
        let initial = types.first(where: { !$0.type.isDST }) ?? types[0]
        // glibc's tzname: the latest standard and daylight abbreviations the file uses.
        var standardName: String?
        var daylightName: String?
        for index in indices.reversed() {
            let type = types[Int(index)]
            if type.type.isDST {
                daylightName = daylightName ?? abbreviation(type.abbreviationIndex)
            } else {
                standardName = standardName ?? abbreviation(type.abbreviationIndex)
            }
            if standardName != nil && daylightName != nil { break }
        }
        if let footer {
            standardName = footer.standard.name
            daylightName = footer.daylight?.offset.name
        }
        self.init(
            name: name, transitions: times, transitionTypes: indices.map { types[Int($0)].type },
            initialType: initial.type, footer: footer,
            abbreviations: (standardName ?? abbreviation(initial.abbreviationIndex), daylightName))
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
