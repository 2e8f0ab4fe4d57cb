import Glibc
import PreciseTimerTesting
import Testing

/// Issue 24: the example job runner, `example-cron`, run as a user runs it: a process started
/// on a units directory, stopped by SIGTERM, or killed with SIGKILL over and over.
@Suite("example-cron, the job runner", .timeLimit(.minutes(5)))
struct ExampleCronTests {
    @Test(
        "a *:*:0/1 Persistent=true unit runs every second, each second once; a .service ExecStart= runs, its output prefixed; SIGTERM exits 0",
        .disabled(
            if: Sanitizers.threadSanitizerIsActive,
            "the example keeps its state in Synchronization.Mutex, whose futex ThreadSanitizer does not see on Linux: the instrumented runner reports races that are not there and exits 66; AddressSanitizer runs it"
        ))
    func runsEverySecondAndStops() async throws {
        let runner = try #require(TestFiles.builtProduct("example-cron"), "example-cron is not built beside the tests")
        let directory = try TestFiles.temporaryDirectory(prefix: "example-cron-test")
        defer { TestFiles.remove(directory) }
        let file = directory + "/runs.txt"
        try TestFiles.write(
            directory + "/units/every.timer", "[Timer]\nOnCalendar=*:*:0/1\nPersistent=true\nAccuracySec=1ms\n")
        // The occurrence (µs since the epoch) and the time of the run, appended by the job itself.
        try TestFiles.write(
            directory + "/units/every.command",
            "echo \"$TRIGGER_TIMER_REALTIME_USEC $(date +%s%N)\" >> '\(file)'\n")
        // A second unit runs a .service's ExecStart=: split as systemd splits it (quotes, escapes),
        // its output passed through behind the unit's name.
        try TestFiles.write(directory + "/units/echo.timer", "[Timer]\nOnCalendar=*:*:0/1\nAccuracySec=1ms\n")
        try TestFiles.write(
            directory + "/units/echo.service", "[Service]\nType=oneshot\nExecStart=/bin/echo \"hello  world\" it\\'s\n")
        let stdout = directory + "/stdout.txt"
        // SIGTERM once three runs are on file and echo.service has printed (an instrumented runner
        // on a loaded machine can take seconds to start), or after Polling's bound at the latest.
        let run = await ChildProcess.blocking {
            CronRun.run(
                runner, ["--units", directory + "/units", "--state", directory + "/state"],
                signal: SIGTERM, after: Polling.minimumWait, output: stdout
            ) {
                let runs = ((try? TestFiles.read(file)) ?? "").split(separator: "\n").count
                return runs >= 3 && ((try? TestFiles.read(stdout)) ?? "").contains("echo: hello")
            }
        }
        let output = (try? TestFiles.read(stdout)) ?? ""
        #expect(run == .exited(0), "\(output)")
        #expect(output.contains("NEXT"), "no list-timers table:\n\(output)")
        #expect(output.contains("every.timer"), "no list-timers table:\n\(output)")
        #expect(output.contains("\necho: hello  world it's\n"), "no output of echo.service:\n\(output)")

        let lines = ((try? TestFiles.read(file)) ?? "").split(separator: "\n")
        let occurrences = lines.compactMap { line in line.split(separator: " ").first.flatMap { Int64($0) } }
        #expect(occurrences.count == lines.count, "unreadable lines: \(lines)")
        #expect(occurrences.count >= 3, "runs: \(lines)")
        #expect(Set(occurrences).count == occurrences.count, "an occurrence ran twice: \(lines)")
        #expect(occurrences.allSatisfy { $0 % 1_000_000 == 0 }, "occurrences on whole seconds: \(lines)")
        #expect(output.contains("done every occurrence="), "no run logged:\n\(output)")
    }

    @Test(
        "issue 24: SIGKILL at random moments, 20 restarts: no occurrence runs twice, one catch-up per start at most",
        .disabled(
            if: Sanitizers.anyIsActive,
            "a SIGKILLed child reports nothing to its sanitizer, and restarting instrumented runners back to back for half a minute starved the rest of the suite (a 100 ms grace period took 61 s); the plain run has it"
        ))
    func restartLoop() async throws {
        let runner = try #require(TestFiles.builtProduct("example-cron"), "example-cron is not built beside the tests")
        let directory = try TestFiles.temporaryDirectory(prefix: "example-cron-test")
        defer { TestFiles.remove(directory) }
        let log = directory + "/runs.log"
        let restarts = 20
        let maxRun = "1500ms"
        let run = await ChildProcess.blocking {
            CronRun.run(
                runner,
                [
                    "--restart-loop", "\(restarts)", "--restart-max-run", maxRun, "--restart-max-down", "700ms",
                    "--restart-log", log,
                ],
                signal: nil, after: .seconds(150), output: directory + "/stdout.txt")
        }
        let output = (try? TestFiles.read(directory + "/stdout.txt")) ?? ""
        #expect(run == .exited(0), "\(output)")

        // Checked here from the log, not from the tool's own verdict.
        var seen: [Int64: Int] = [:]
        var catchUps: [Substring: Int] = [:]
        let lines = ((try? TestFiles.read(log)) ?? "").split(separator: "\n")
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count >= 4, let occurrence = Int64(fields[1]) else {
                Issue.record("a torn or unreadable log line: '\(line)'")
                continue
            }
            seen[occurrence, default: 0] += 1
            if fields[3] == "1" { catchUps[fields[2], default: 0] += 1 }
        }
        #expect(!lines.isEmpty, "no run in \(restarts) starts:\n\(output)")
        let doubles = seen.filter { $0.value > 1 }.keys.sorted()
        #expect(doubles.isEmpty, "occurrences run twice (ns since the epoch): \(doubles)")
        let many = catchUps.filter { $0.value > 1 }
        #expect(many.isEmpty, "starts with more than one catch-up (pid@start: count): \(many)")
        // Not vacuous: with up to 0.7 s down between a kill and the next start, nearly every
        // start finds a missed second (6 of the 7 starts that ran, in a sample run).
        #expect(!catchUps.isEmpty, "no start caught up in \(restarts) restarts:\n\(output)")
    }
}

/// Running `example-cron` (``ChildProcess``); blocks its thread.
enum CronRun {
    /// Starts `path` with `arguments` (stdout and stderr to `output`); with a `signal`, sends it
    /// once `ready` answers true (polled every 10 ms) or after `delay` at the latest, and gives the
    /// process 15 s to exit; without, waits up to `delay` for it.
    static func run(
        _ path: String, _ arguments: [String], signal: Int32?, after delay: Duration, output: String,
        when ready: () -> Bool = { false }
    ) -> ChildProcess.Outcome {
        let pid: pid_t
        switch ChildProcess.spawn(path, arguments, output: output) {
        case .success(let spawned): pid = spawned
        case .failure(let error): return .notStarted("posix_spawn: \(error.code)")
        }
        guard let signal else { return ChildProcess.reapOrKill(pid, within: delay) }
        let deadline = ContinuousClock.now + delay
        while ContinuousClock.now < deadline, !ready() {
            // An early exit is the outcome: nothing left to signal.
            if let outcome = ChildProcess.reap(pid, within: .zero) { return outcome }
            usleep(10_000)
        }
        kill(pid, signal)
        return ChildProcess.reapOrKill(pid, within: .seconds(15))
    }
}
