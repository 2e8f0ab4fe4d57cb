import Glibc
import PreciseTimer
import PreciseTimerServiceLifecycle
import PreciseTimerTesting
import Synchronization
import Testing

/// Issue 21, defect 11: a daemon stopped by SIGTERM at any moment of its start stops gracefully.
///
/// Each run spawns `precise-daemon-probe` (a `ServiceGroup` of two `PreciseTimer` services and a
/// server stand-in in a nested group, as a Hummingbird daemon is), waits for its `started` line
/// (written once it holds its signals, first thing in `main`), sends SIGTERM after a random
/// 0–50 ms, and waits for it to exit. In a debug build about one signal in fifteen lands before
/// the group listens (more under sanitizers); the others find the group starting its services,
/// or running.
@Suite("SIGTERM at random moments of a daemon's start", .timeLimit(.minutes(5)))
struct SignalShutdownTests {
    /// How long a stopped probe may take to exit: its two timer services have a 2 s grace period
    /// each and no handler that runs long, so it exits in milliseconds (0.07 s at the median and
    /// 0.17 s at most over 200 runs under ThreadSanitizer, four at a time beside two busy loops).
    /// The bound is for a loaded machine: under a sanitizer the whole suite runs beside the probes
    /// and starves them (its other tests then wait tens of seconds for a thread), and one probe of
    /// 40 once took more than 15 s there; a probe that hangs still fails at 60.
    static let gracePeriod: Duration = Sanitizers.anyIsActive ? .seconds(60) : .seconds(15)

    @Test(
        "issue 21 defect 11: daemons stopped by SIGTERM 0–50 ms after they start all exit 0 (200; 40 under a sanitizer)"
    )
    func sigtermDuringStart() async throws {
        let probe = try #require(
            TestFiles.builtProduct("precise-daemon-probe"), "precise-daemon-probe is not built beside the tests")
        let seed = UInt64(truncatingIfNeeded: ContinuousClock.now.hashValue) | 1
        // Under a sanitizer every probe is an instrumented process whose start alone costs a
        // large part of a core: 200 of them, four at a time, took this 2-core machine from every
        // other test of the run for a minute (async tests waited 15-60 s for a thread). There the
        // race is run 40 times, two at a time; the plain run (the README's command) runs all 200.
        let runs = Sanitizers.anyIsActive ? 40 : 200
        let workers = Sanitizers.anyIsActive ? 2 : 4
        let outcomes = await withCheckedContinuation { (continuation: CheckedContinuation<[ProbeRun], Never>) in
            // Spawning and reaping block: threads of their own, never the cooperative pool.
            detachThread {
                let results = SemaphoreGuarded<[ProbeRun]>([])
                runOnThreads(workers) { worker in
                    var random = SplitMix(seed: seed &+ UInt64(worker))
                    for _ in stride(from: worker, to: runs, by: workers) {
                        let delay = Duration.microseconds(Int64(random.next() % 50_001))
                        let run = ProbeRun.run(probe, signalAfter: delay, gracePeriod: Self.gracePeriod)
                        results.withLock { $0.append(run) }
                    }
                }
                continuation.resume(returning: results.withLock { $0 })
            }
        }
        #expect(outcomes.count == runs)
        let failures = outcomes.filter { $0.outcome != .exited(0) }
        #expect(
            failures.isEmpty,
            """
            \(failures.count) of \(runs) did not exit 0 (seed \(seed)): \
            \(failures.prefix(10).map { "\($0.outcome) after \($0.delay)" })
            """)
    }
}

/// Issue 21, defect 11: the hold and the hand-over, in this process, on SIGUSR2 (which nothing
/// else here uses).
@Suite("EarlySignals")
struct EarlySignalsTests {
    @Test("a held signal waits while nobody listens, and reaches the handler that replaces the hold, once")
    func holdThenDeliver() async throws {
        EarlySignals.hold([SIGUSR2])
        // Process-directed, as a supervisor's signal is (this thread blocks every signal).
        kill(getpid(), SIGUSR2)  // Held: the default action would end the test process.
        for _ in 0..<20 {
            EarlySignals.deliverHeld()  // Nobody listens yet: it stays held.
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(usr2Received.load(ordering: .sequentiallyConsistent) == 0)

        var listener = sigaction()
        listener.__sigaction_handler.sa_handler = recordUSR2
        sigemptyset(&listener.sa_mask)
        sigaction(SIGUSR2, &listener, nil)
        defer { signal(SIGUSR2, SIG_DFL) }
        _ = await Polling.until {
            EarlySignals.deliverHeld()
            return usr2Received.load(ordering: .sequentiallyConsistent) != 0
        }
        #expect(usr2Received.load(ordering: .sequentiallyConsistent) == 1)
        for _ in 0..<20 {
            EarlySignals.deliverHeld()  // Delivered once only.
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(usr2Received.load(ordering: .sequentiallyConsistent) == 1)

        // A signal the program handles already is not taken over.
        EarlySignals.hold([SIGUSR2])
        kill(getpid(), SIGUSR2)
        _ = await Polling.until { usr2Received.load(ordering: .sequentiallyConsistent) != 1 }
        #expect(usr2Received.load(ordering: .sequentiallyConsistent) == 2)
    }
}

private let usr2Received = Atomic<Int>(0)

private let recordUSR2: @convention(c) (Int32) -> Void = { _ in
    usr2Received.add(1, ordering: .sequentiallyConsistent)
}

/// One spawn of the probe.
struct ProbeRun: Sendable {
    typealias Outcome = ChildProcess.Outcome

    let delay: Duration
    let outcome: Outcome

    /// Spawns the probe, waits for `started`, signals SIGTERM after `delay`, and waits for the exit.
    /// Blocks the calling thread.
    static func run(_ path: String, signalAfter delay: Duration, gracePeriod: Duration) -> ProbeRun {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            return ProbeRun(delay: delay, outcome: .notStarted("pipe: errno \(errno)"))
        }
        // (Another worker's child may inherit them before this; it only holds them until it ends.)
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(pipeEnds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)

        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
        defer { argv.forEach { free($0) } }
        let spawned = ChildProcess.withSupervisorSpawnAttributes { attributes in
            childEnvironment.withPointers { posix_spawn(&pid, path, &actions, &attributes, argv, $0) }
        }
        close(pipeEnds[1])
        guard spawned == 0 else {
            return ProbeRun(delay: delay, outcome: .notStarted("posix_spawn: \(spawned)"))
        }

        guard waitForStarted(pipeEnds[0], timeoutMilliseconds: 60_000) else {
            kill(pid, SIGKILL)
            let outcome = ChildProcess.reap(pid, within: .seconds(60)) ?? .hung
            return ProbeRun(delay: delay, outcome: .notStarted("no started line; then \(outcome)"))
        }
        usleep(UInt32(delay.components.attoseconds / 1_000_000_000_000 + delay.components.seconds * 1_000_000))
        kill(pid, SIGTERM)
        return ProbeRun(delay: delay, outcome: ChildProcess.reapOrKill(pid, within: gracePeriod))
    }

    /// This process's environment, with ThreadSanitizer's one-second sleep at exit turned off
    /// (it would make the test last 50 s under `--sanitize=thread`; races are still reported).
    private static let childEnvironment: Environment = {
        var variables: [String] = []
        var index = 0
        while let entry = environ[index] {
            variables.append(String(cString: entry))
            index += 1
        }
        let name = "TSAN_OPTIONS="
        let options = variables.first { $0.hasPrefix(name) }.map { String($0.dropFirst(name.count)) }
        variables.removeAll { $0.hasPrefix(name) }
        variables.append(name + [options, "atexit_sleep_ms=0"].compactMap { $0 }.joined(separator: ":"))
        return Environment(variables)
    }()

    /// Reads until the probe's `started` line, or end of file, or the timeout.
    private static func waitForStarted(_ descriptor: Int32, timeoutMilliseconds: Int32) -> Bool {
        var received: [UInt8] = []
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while !received.starts(with: Array("started\n".utf8)) {
            let ready = poll(&entry, 1, timeoutMilliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { return false }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { return false }
            received.append(byte)
        }
        return true
    }
}

/// `KEY=value` strings kept as C strings for the life of the process, for `posix_spawn`.
final class Environment: Sendable {
    // Written once in init, then only read.
    private nonisolated(unsafe) let pointers: [UnsafeMutablePointer<CChar>?]

    init(_ variables: [String]) {
        self.pointers = variables.map { strdup($0) } + [nil]
    }

    func withPointers<Result>(_ body: ([UnsafeMutablePointer<CChar>?]) -> Result) -> Result {
        body(self.pointers)
    }
}
