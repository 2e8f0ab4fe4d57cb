import Glibc
import Synchronization

/// The CPU time (user + system) of one thread of this process, found by its name: a lane's loop
/// thread, which PreciseTimer names after `Configuration.threadName`.
///
/// The process's CPU (``CPUTime``) includes the touch driver, the heartbeat and the stats, so it
/// says little about what the sessions lane itself costs; this does. It reads
/// `/proc/self/task/TID/stat` once per call (the thread is looked up by its `comm` once, then
/// remembered), in clock ticks, so its resolution is `1 / sysconf(_SC_CLK_TCK)` (10 ms with the
/// usual 100 Hz): plenty for a per-second percentage.
final class ThreadCPUTime: Sendable {
    let threadName: String
    private let threadID = Mutex<Int32?>(nil)
    private static let ticksPerSecond = max(1, Int64(sysconf(Int32(_SC_CLK_TCK))))

    /// - Parameter threadName: The thread's name as `/proc/self/task/*/comm` shows it.
    init(threadName: String) {
        self.threadName = threadName
    }

    /// The thread's CPU time so far, or `nil` when no thread of the process has the name (or its
    /// `stat` could not be read).
    func now() -> Duration? {
        self.threadID.withLock { threadID in
            if let id = threadID, let ticks = Self.cpuTicks(ofThread: id) {
                return Self.duration(ticks)
            }
            // Not looked up yet, or gone since (then look again, in case another took the name).
            threadID = Self.findThread(named: self.threadName)
            return threadID.flatMap(Self.cpuTicks(ofThread:)).map(Self.duration)
        }
    }

    private static func duration(_ ticks: Int64) -> Duration {
        .nanoseconds(ticks * 1_000_000_000 / self.ticksPerSecond)
    }

    /// utime + stime from `/proc/self/task/TID/stat`: fields 14 and 15, counted after the `comm`
    /// field's closing parenthesis (a name may itself contain spaces and parentheses).
    private static func cpuTicks(ofThread id: Int32) -> Int64? {
        guard let stat = self.read("/proc/self/task/\(id)/stat"),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After ")": field 3 (state) is at index 0, so utime (14) is at 11 and stime (15) at 12.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]) else { return nil }
        return user + system
    }

    /// The ID of the first thread of this process whose `comm` is `name`.
    private static func findThread(named name: String) -> Int32? {
        guard let directory = opendir("/proc/self/task") else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let entryName = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: pointer.pointee)) {
                    String(cString: $0)
                }
            }
            guard let id = Int32(entryName) else { continue }  // "." and ".."
            if self.read("/proc/self/task/\(id)/comm") == name + "\n" {
                return id
            }
        }
        return nil
    }

    /// A small `/proc` file's contents (at most 1 KiB), or `nil`.
    private static func read(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}
