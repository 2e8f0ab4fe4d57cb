import Glibc
import PreciseTimerCore

/// Where time zones come from: the system's tzdata (`/usr/share/zoneinfo`), as glibc and
/// systemd read it, each zone file loaded once and shared.
///
/// systemd checks a zone suffix against ``root`` (`timezone_is_valid`), then computes in a child
/// whose `TZ` is `:name`, which glibc reads from `$TZDIR` when that is set: both are kept here.
enum TimeZoneDirectory {
    /// Where systemd looks a zone name up, and glibc's directory when `TZDIR` is unset or empty.
    static let root = "/usr/share/zoneinfo"
    /// glibc's `TZDEFAULT`.
    static let localTimeFile = "/etc/localtime"
    /// Larger than any TZif file tzdata ships (the largest is about 4 KB).
    private static let maximumFileSize = 1 << 20

    /// Parsed zone files by path: tzdata does not change under a running process (glibc
    /// rereads a file only when `TZ` changes). A `SemaphoreGuarded`, not a `Mutex`: ThreadSanitizer
    /// does not see a `Mutex`'s futex on Linux and reported races that are not there.
    private static let loaded = SemaphoreGuarded<[String: TimeZoneRules]>([:])

    /// Whether systemd 252 takes `name` as a zone suffix (`timezone_is_valid`): letters,
    /// digits, `-`, `_`, `+` and single `/`s between parts, naming a TZif file under ``root``.
    /// `UTC` is always one.
    static func isZone(_ name: String) -> Bool {
        name == "UTC" || (Self.isValidName(name) && Self.file(at: Self.root + "/" + name) != nil)
    }

    /// The zone `name` (one ``isZone(_:)`` accepts) as systemd's child computes in it: glibc
    /// with `TZ=:name` and `TZDIR` = `directory` (nil: unset).
    static func zone(named name: String, directory: String? = nil) -> TimeZoneRules {
        if name == "UTC" && directory == nil { return .utc }
        return Self.glibcZone(tz: ":" + name, directory: directory, name: name, cached: true)
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

    /// The process's local zone, as glibc's `tzset` finds it from `TZ` and `TZDIR`.
    static func localZone() -> TimeZoneRules {
        Self.localZone(
            tz: getenv("TZ").map { String(cString: $0) }, directory: getenv("TZDIR").map { String(cString: $0) })
    }

    /// glibc 2.36's `tzset_internal` for `TZ` = `tz` (nil: unset) and `TZDIR` = `directory`:
    /// empty is `Universal`; a leading `:` is dropped; the value names a TZif file (absolute,
    /// or under `TZDIR`, else ``root``; `..` allowed, as glibc allows it outside setuid
    /// programs); unset reads `/etc/localtime`. Without such a file: UTC when `TZ` was unset,
    /// empty or `:`; otherwise the value read as a POSIX rule, leniently, which never fails
    /// (`TZ=Nowhere` is UTC named "Nowhere", as in glibc).
    static func localZone(tz: String?, directory: String?) -> TimeZoneRules {
        // An empty TZ is glibc's `Universal`: named UTC here, as it always was.
        Self.glibcZone(
            tz: tz, directory: directory, name: tz.map { $0.isEmpty ? "UTC" : $0 } ?? "localtime", cached: false)
    }

    /// `cached`: a named zone, loaded once; the local zone is read afresh each time (an admin
    /// may point `/etc/localtime` at another zone while the process runs).
    private static func glibcZone(tz: String?, directory: String?, name: String, cached: Bool) -> TimeZoneRules {
        var value = tz
        if value == "" { value = "Universal" }
        if value?.first == ":" { value?.removeFirst() }
        let file = value ?? Self.localTimeFile
        if !file.isEmpty {
            let base = directory.flatMap { $0.isEmpty ? nil : $0 } ?? Self.root
            let path = file.hasPrefix("/") ? file : base + "/" + file
            if cached, let zone = Self.file(at: path, name: name) { return zone }
            if !cached, let bytes = Self.contents(of: path), let zone = TimeZoneRules(name: name, tzif: bytes) {
                return zone
            }
        }
        guard let value, !value.isEmpty, value != Self.localTimeFile else { return .utc }
        var fromRuleFile: TimeZoneRules?
        let rule = PosixTimeZoneRule(leniently: value) { standard, daylight in
            let base = directory.flatMap { $0.isEmpty ? nil : $0 } ?? Self.root
            guard let bytes = Self.contents(of: base + "/posixrules") else { return false }
            fromRuleFile = TimeZoneRules(name: name, posixRules: bytes, standard: standard, daylight: daylight)
            return fromRuleFile != nil
        }
        return fromRuleFile ?? TimeZoneRules(name: name, rule: rule)
    }

    /// The TZif file at `path`, parsed once per path; named `name` (default: the path).
    private static func file(at path: String, name: String? = nil) -> TimeZoneRules? {
        let key = (name ?? "") + "\u{0}" + path
        if let zone = Self.loaded.withLock({ $0[key] }) { return zone }
        guard let bytes = Self.contents(of: path), let zone = TimeZoneRules(name: name ?? path, tzif: bytes) else {
            return nil
        }
        return Self.loaded.withLock { cache in
            if let existing = cache[key] { return existing }
            cache[key] = zone
            return zone
        }
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
