import Glibc
import PreciseTimerCore

extension DirectoryTimerStateStore {
    /// Creates `path` and its missing parents (mode 0700) and returns it resolved by `realpath`.
    static func makeDirectory(_ path: String) throws(PreciseTimerError) -> String {
        guard !path.isEmpty else {
            throw PreciseTimerError(.invalidConfiguration, value: path, detail: "the store's directory path is empty")
        }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o700) != 0 {
                let error = errno
                // An existing entry (or one this process may not create but can pass): go on; a
                // non-directory is refused below, or by the next mkdir's ENOTDIR.
                var status = stat()
                guard error == EEXIST || stat(prefix, &status) == 0 else {
                    throw PreciseTimerError(
                        .systemFailure, value: prefix, function: "mkdir", returnCode: -1, errno: error)
                }
            }
            prefix += "/"
        }
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw PreciseTimerError(.systemFailure, value: path, function: "stat", returnCode: -1, errno: errno)
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw PreciseTimerError(.invalidConfiguration, value: path, detail: "not a directory")
        }
        guard let resolved = realpath(path, nil) else {
            throw PreciseTimerError(.systemFailure, value: path, function: "realpath", returnCode: -1, errno: errno)
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The part of a unit's file names that comes from its ID: the bytes of `[A-Za-z0-9._-]` as
    /// they are, every other byte `%XX` (an injective escape: `%` is escaped too); beyond 200 bytes,
    /// the first 100 and `~` and a 128-bit hash (`~` never appears in an escaped name).
    package static func fileName(for id: TimerID) -> String {
        var name: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in id.rawValue.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                name.append(byte)
            default:
                name += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        guard name.count > 200 else { return String(decoding: name, as: UTF8.self) }
        // Two FNV-1a 64 passes from different offset bases: 128 bits, stable across processes
        // (Swift's Hasher is seeded per process).
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in id.rawValue.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        func hexadecimal(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return String(decoding: name[0..<100], as: UTF8.self) + "~" + hexadecimal(first) + hexadecimal(second)
    }
}

/// The files of one unit in a store's directory, and the system calls on them. Every failure is a
/// `PreciseTimerError` naming the call and its errno.
struct StampFiles {
    let directory: String
    let id: TimerID
    let stampPath: String
    let lockPath: String
    let temporaryPath: String

    /// The largest stamp read: an occurrence and an escaped ID of any length fit.
    private static let maximumStampSize = 1 << 20

    init(directory: String, id: TimerID) {
        let name = DirectoryTimerStateStore.fileName(for: id)
        self.directory = directory
        self.id = id
        self.stampPath = directory + "/stamp-" + name
        self.lockPath = directory + "/lock-" + name
        self.temporaryPath = directory + "/tmp-" + name
    }

    /// The ID as a stamp stores it: its UTF-8 bytes in lowercase hexadecimal, whole (never cut).
    private var storedID: [UInt8] {
        let hex = Array("0123456789abcdef".utf8)
        return self.id.rawValue.utf8.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }
    }

    /// What a stamp holds: the occurrence's nanoseconds since the epoch, a newline, the stored ID,
    /// a newline.
    private func contents(of occurrence: WallClockInstant) -> [UInt8] {
        Array("\(occurrence.nanosecondsSinceEpoch)\n".utf8) + self.storedID + [UInt8(ascii: "\n")]
    }

    private func failure(_ function: String, _ path: String, _ error: Int32 = errno) -> PreciseTimerError {
        PreciseTimerError(.systemFailure, id: self.id, value: path, function: function, returnCode: -1, errno: error)
    }

    /// Opens the unit's lock file and takes an exclusive `flock` on it; closing the descriptor
    /// releases it.
    func lock() throws(PreciseTimerError) -> Int32 {
        let descriptor = open(self.lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw self.failure("open", self.lockPath) }
        while flock(descriptor, LOCK_EX) != 0 {
            let error = errno
            guard error == EINTR else {
                close(descriptor)
                throw self.failure("flock", self.lockPath, error)
            }
        }
        return descriptor
    }

    /// The stamp's occurrence, or nil when there is no stamp.
    func readStamp() throws(PreciseTimerError) -> WallClockInstant? {
        let descriptor = open(self.stampPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = errno
            if error == ENOENT { return nil }
            throw self.failure("open", self.stampPath, error)
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                throw self.failure("read", self.stampPath, error)
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            guard bytes.count <= Self.maximumStampSize else { throw self.notAStamp("too large") }
        }
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard lines.count == 3, lines[2].isEmpty,
            let nanoseconds = Int64(String(decoding: lines[0], as: UTF8.self))
        else { throw self.notAStamp("not an occurrence and an ID") }
        guard Array(lines[1]) == self.storedID else {
            throw self.notAStamp("another ID's stamp (the names' hashes collide)")
        }
        return WallClockInstant(nanosecondsSinceEpoch: nanoseconds)
    }

    private func notAStamp(_ why: String) -> PreciseTimerError {
        PreciseTimerError(
            .invalidConfiguration, id: self.id, value: self.stampPath, detail: "not a timer stamp: \(why)")
    }

    /// Writes the new stamp to the temporary file (truncating one a crash left) and syncs it.
    func writeTemporary(_ occurrence: WallClockInstant, durable: Bool) throws(PreciseTimerError) {
        let descriptor = open(self.temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw self.failure("open", self.temporaryPath) }
        defer { close(descriptor) }
        let bytes = self.contents(of: occurrence)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                throw self.failure("write", self.temporaryPath, error)
            }
            written += count
        }
        if durable && fsync(descriptor) != 0 { throw self.failure("fsync", self.temporaryPath) }
    }

    /// Renames the temporary file over the stamp, then syncs the directory so the rename survives
    /// a crash of the host.
    func replaceStamp(durable: Bool) throws(PreciseTimerError) {
        guard rename(self.temporaryPath, self.stampPath) == 0 else { throw self.failure("rename", self.stampPath) }
        guard durable else { return }
        let descriptor = open(self.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw self.failure("open", self.directory) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw self.failure("fsync", self.directory) }
    }
}
