import Glibc
// `timespec` here is the toolchain shims' (a dependency imports them): its fields need them imported
// (MemberImportVisibility; the optimized build resolves it there).
import SwiftOverlayShims

/// `--restart-loop N`: a runner killed with SIGKILL at random moments, N times, over one state
/// directory, and the run log checked afterwards.
///
/// The unit elapses every second (`*:*:0/1`) with `Persistent=true`; each child runs it for a
/// random span up to `maxRun` (from zero: some are killed while they start, some between a claim
/// and the run, some while a job runs), then the loop pauses up to `maxDown` (so seconds pass
/// with no runner, which the next one catches up). Each child appends a line to the run log
/// before it runs an occurrence. The checks: no occurrence appears twice, and no child ran more
/// than one catch-up (an occurrence before it started).
struct RestartLoop {
    let restarts: Int
    let maxRun: Duration
    let maxDown: Duration
    let logPath: String?

    /// What the log shows.
    struct Figures {
        var runs = 0
        var occurrences = 0
        var doubles = 0
        var catchUps = 0
        var maxCatchUpsPerStart = 0
        var startsThatRan = 0
        var startsWithCatchUp = 0
        /// Runs logged without an occurrence (`-`) or unreadable: each is a failure, since every
        /// run of a calendar unit answers one.
        var unidentified = 0
        /// Seconds between the first and last occurrence that no child ran (lost to a kill
        /// between the claim and the record, or during downtime not caught up: only the latest
        /// missed occurrence is caught up, as systemd does).
        var notRun = 0
    }

    /// Runs the loop on a thread of its own (it sleeps and waits for children) and prints the
    /// figures; true when both checks pass.
    func run(output: Output) async -> Bool {
        await withCheckedContinuation { continuation in
            startThread { continuation.resume(returning: self.runBlocking(output: output)) }
        }
    }

    private func runBlocking(output: Output) -> Bool {
        var template = Array("/tmp/example-cron-restart.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            output.line("restart-loop: mkdtemp failed: \(Errno(errno))")
            return false
        }
        let directory = String(cString: made)
        let units = directory + "/units"
        let state = directory + "/state"
        let log = self.logPath ?? directory + "/runs.log"
        mkdir(units, 0o755)
        do {
            try writeFile(
                units + "/tick.timer",
                "[Timer]\nOnCalendar=*:*:0/1\nPersistent=true\nAccuracySec=1ms\n")
            try writeFile(units + "/tick.command", "true\n")
        } catch {
            output.line("restart-loop: cannot write the unit: \(error)")
            return false
        }
        guard let executable = Self.ownExecutable() else {
            output.line("restart-loop: cannot read /proc/self/exe")
            return false
        }
        output.line(
            "restart-loop: \(self.restarts) restarts, each child killed after 0-\(Format.seconds(self.maxRun)), "
                + "0-\(Format.seconds(self.maxDown)) down; unit *:*:0/1 Persistent=true; state \(state); log \(log)")
        var random = SystemRandomNumberGenerator()
        let arguments = [executable, "--units", units, "--state", state, "--run-log", log]
        for restart in 1...self.restarts {
            var pid: pid_t = 0
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
            let cArguments = arguments.map { strdup($0) } + [nil]
            let spawned = posix_spawn(&pid, executable, &actions, &attributes, cArguments, environ)
            cArguments.forEach { free($0) }
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
            guard spawned == 0 else {
                output.line("restart-loop: posix_spawn failed: \(Errno(spawned))")
                return false
            }
            Self.sleep(microseconds: UInt64.random(in: 0...Self.microseconds(self.maxRun), using: &random))
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            if restart % 20 == 0 { output.line("restart-loop: \(restart) of \(self.restarts)") }
            if restart < self.restarts {
                Self.sleep(microseconds: UInt64.random(in: 0...Self.microseconds(self.maxDown), using: &random))
            }
        }
        let figures: Figures
        do {
            figures = try Self.check(readFile(log))
        } catch {
            output.line("restart-loop: cannot read the run log \(log): \(error)")
            return false
        }
        let passed = figures.doubles == 0 && figures.maxCatchUpsPerStart <= 1 && figures.unidentified == 0
        output.line(
            "restart-loop: restarts=\(self.restarts) starts-that-ran=\(figures.startsThatRan) runs=\(figures.runs) "
                + "occurrences=\(figures.occurrences) doubles=\(figures.doubles) catch-ups=\(figures.catchUps) "
                + "starts-with-catch-up=\(figures.startsWithCatchUp) "
                + "max-catch-ups-per-start=\(figures.maxCatchUpsPerStart) unidentified=\(figures.unidentified) "
                + "not-run=\(figures.notRun) "
                + (passed ? "PASS" : "FAIL"))
        return passed
    }

    /// The figures of a run log (`<unit> <occurrence-ns> <pid>@<start-ns> <catch-up> <run-start-ns>` lines).
    static func check(_ log: String) -> Figures {
        var figures = Figures()
        var seen: [Int64: Int] = [:]
        var catchUps: [Substring: Int] = [:]
        var starts: Set<Substring> = []
        for line in log.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 4, let occurrence = Int64(fields[1]) else {
                figures.unidentified += 1
                continue
            }
            figures.runs += 1
            seen[occurrence, default: 0] += 1
            starts.insert(fields[2])
            if fields[3] == "1" { catchUps[fields[2], default: 0] += 1 }
        }
        figures.occurrences = seen.count
        figures.doubles = seen.values.filter { $0 > 1 }.count
        figures.catchUps = catchUps.values.reduce(0, +)
        figures.maxCatchUpsPerStart = catchUps.values.max() ?? 0
        figures.startsThatRan = starts.count
        figures.startsWithCatchUp = catchUps.count
        if let first = seen.keys.min(), let last = seen.keys.max() {
            figures.notRun = Int((last - first) / 1_000_000_000) + 1 - seen.count
        }
        return figures
    }

    private static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000_000)
    }

    private static func sleep(microseconds: UInt64) {
        var request = timespec(tv_sec: Int(microseconds / 1_000_000), tv_nsec: Int(microseconds % 1_000_000) * 1000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }

    private static func ownExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

func writeFile(_ path: String, _ text: String) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw Errno(errno) }
    defer { close(descriptor) }
    let bytes = Array(text.utf8)
    guard write(descriptor, bytes, bytes.count) == bytes.count else { throw Errno(errno) }
}
