import Glibc
// `timespec` here is the toolchain shims' (a dependency imports them): its fields need them imported
// (MemberImportVisibility; the optimized build resolves it there).
import SwiftOverlayShims

/// The runner's standard output: whole lines, each written with one `write(2)`, so the lines of
/// jobs running at once and of the runner never interleave within a line.
final class Output: Sendable {
    init() {}

    func line(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }
}

/// The `--run-log` file: one line per run, appended with `O_APPEND` before the command starts,
/// so a runner killed at any moment leaves whole lines of every run it began.
///
/// Line: `<unit> <occurrence ns since the epoch, or -> <start> <catch-up: 1 or 0> <now>`, where
/// `<start>` names this start of the runner: `<pid>@<wall-clock ns when the log was opened>` (a
/// pid alone is reused: a restart loop of a few hundred runners on a busy machine met its own
/// pids again), and `<now>` is the wall clock as the run starts (ns since the epoch), which gives
/// how late the run began.
final class RunLog: Sendable {
    private let descriptor: Int32
    private let start: String

    init(path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Errno(errno) }
        self.descriptor = descriptor
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        self.start = "\(getpid())@\(Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec))"
    }

    deinit { close(self.descriptor) }

    /// Appends one record; one `write(2)` of the whole line, which `O_APPEND` keeps whole.
    func record(unit: String, occurrence: WallClockNanoseconds?, catchUp: Bool) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let started = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        let line = "\(unit) \(occurrence.map(String.init) ?? "-") \(self.start) \(catchUp ? 1 : 0) \(started)\n"
        _ = line.utf8CString.withUnsafeBufferPointer { write(self.descriptor, $0.baseAddress!, $0.count - 1) }
    }
}

typealias WallClockNanoseconds = Int64
