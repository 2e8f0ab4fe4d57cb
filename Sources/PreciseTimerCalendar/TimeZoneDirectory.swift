import Glibc
import Synchronization

/// Where time zones come from: the system's tzdata (`/usr/share/zoneinfo`), as glibc and
/// systemd read it, each zone loaded once and shared.
enum TimeZoneDirectory {
    static let root = "/usr/share/zoneinfo"
    /// Larger than any TZif file tzdata ships (the largest is about 4 KB).
    private static let maximumFileSize = 1 << 20

    private static let loaded = Mutex<[String: TimeZoneRules]>([:])

    /// The zone named `name` (`Europe/Berlin`), or nil when systemd would not accept the name:
    /// letters, digits, `-`, `_`, `+` and single `/`s between parts, naming a regular TZif
    /// file under ``root`` (systemd's `verify_timezone`). `UTC` is always valid.
    static func zone(named name: String) -> TimeZoneRules? {
        if name == "UTC" { return .utc }
        guard Self.isValidName(name) else { return nil }
        if let zone = Self.loaded.withLock({ $0[name] }) { return zone }
        guard let bytes = Self.contents(of: Self.root + "/" + name),
            let zone = TimeZoneRules(name: name, tzif: bytes)
        else { return nil }
        return Self.loaded.withLock { cache in
            if let existing = cache[name] { return existing }
            cache[name] = zone
            return zone
        }
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count < Int(PATH_MAX), bytes.first != UInt8(ascii: "/"),
            bytes.last != UInt8(ascii: "/")
        else { return false }
        var previousWasSlash = false
        for byte in bytes {
            let isSlash = byte == UInt8(ascii: "/")
            let allowed =
                (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "+") || isSlash
            guard allowed, !(isSlash && previousWasSlash) else { return false }
            previousWasSlash = isSlash
        }
        return true
    }

    /// The process's local zone, as glibc's `tzset` finds it: `TZ` (empty: UTC; `:name` or
    /// `name`: a file, absolute or under ``root``; otherwise a POSIX rule), else `/etc/localtime`,
    /// else UTC. Read each time a specification not ending in ` UTC` is parsed (its standard and
    /// daylight abbreviations may end one); a later change of `TZ` moves no existing schedule.
    static func localZone() -> TimeZoneRules {
        Self.localZone(tz: getenv("TZ").map { String(cString: $0) })
    }

    static func localZone(tz: String?) -> TimeZoneRules {
        guard let value = tz else {
            return Self.zoneFile(path: "/etc/localtime", name: "localtime") ?? .utc
        }
        if value.isEmpty { return .utc }
        let name = value.hasPrefix(":") ? String(value.dropFirst()) : value
        if name.isEmpty { return .utc }
        let path = name.hasPrefix("/") ? name : Self.root + "/" + name
        if !name.contains(".."), let zone = Self.zoneFile(path: path, name: name) { return zone }
        if !value.hasPrefix(":"), let rule = PosixTimeZoneRule(parsing: value) {
            return TimeZoneRules(name: value, rule: rule)
        }
        return .utc
    }

    private static func zoneFile(path: String, name: String) -> TimeZoneRules? {
        guard let bytes = Self.contents(of: path) else { return nil }
        return TimeZoneRules(name: name, tzif: bytes)
    }

    /// A regular file's bytes, or nil.
    private static func contents(of path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            status.st_size <= Self.maximumFileSize
        else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= Self.maximumFileSize {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return nil
    }
}
