import Glibc
import PreciseTimer
import PreciseTimerCalendar
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The job runner: schedules every unit on one `PreciseTimer`, runs each elapse's commands as
/// child processes, prints the `list-timers` table, and on graceful shutdown stops scheduling,
/// gives running jobs `grace` to finish, then stops what is left.
final class CronService: Service {
    let timers: PreciseTimer
    let store: any TimerStateStore
    let jobs: [Job]
    let output: Output
    let runLog: RunLog?
    let grace: Duration
    let listEvery: Duration?
    /// When the runner started, on the wall clock: a run of an occurrence before it is the
    /// `Persistent=` catch-up of a time the runner was down.
    let startedAt: WallClockInstant
    private let running = RunningJobs()

    init(
        timers: PreciseTimer, store: any TimerStateStore, jobs: [Job], output: Output, runLog: RunLog?,
        grace: Duration, listEvery: Duration?
    ) {
        self.timers = timers
        self.store = store
        self.jobs = jobs
        self.output = output
        self.runLog = runLog
        self.grace = grace
        self.listEvery = listEvery
        self.startedAt = timers.wallClockNow
    }

    func run() async throws {
        var handles: [TimerHandle] = []
        for job in self.jobs {
            handles.append(
                try self.timers.schedule(unit: job.unit, id: job.id, store: self.store) { [self] tick in
                    await self.run(job, tick)
                })
        }
        self.printTable()
        let usr1 = await UnixSignalsSequence(trapping: .sigusr1)
        // Until graceful shutdown: the table on SIGUSR1, and every --list-every.
        await cancelWhenGracefulShutdown { [self] in
            await withDiscardingTaskGroup { group in
                group.addTask {
                    for await _ in usr1 { self.printTable() }
                }
                if let every = self.listEvery {
                    group.addTask {
                        while (try? await Task.sleep(for: every)) != nil { self.printTable() }
                    }
                }
            }
        }

        // Stop scheduling first: no elapse starts a job from here on.
        for handle in handles { self.timers.cancel(handle) }
        let left = self.running.stop()
        guard left > 0 else {
            self.output.line("stopped: no job running")
            return
        }
        self.output.line("stopping: waiting up to \(self.grace.systemdTimeSpanDescription) for \(left) running job(s)")
        if await self.running.waitUntilIdle(within: self.grace) {
            self.output.line("stopped: every job finished")
            return
        }
        // Past the grace: SIGTERM to each job's process group, then SIGKILL a second later.
        for name in self.running.terminate(with: SIGTERM) {
            self.output.line("\(name): still running after \(self.grace.systemdTimeSpanDescription), sent SIGTERM")
        }
        if await !self.running.waitUntilIdle(within: .seconds(1)) {
            for name in self.running.terminate(with: SIGKILL) { self.output.line("\(name): sent SIGKILL") }
            _ = await self.running.waitUntilIdle(within: .seconds(5))
        }
        self.output.line("stopped")
    }

    /// One elapse: the commands one after another, the first failure ending the run.
    private func run(_ job: Job, _ tick: Tick) async {
        let occurrence = tick.wallClockDeadline
        let catchUp = occurrence.map { $0 < self.startedAt } ?? false
        let label = "\(job.name) occurrence=\(occurrence.map(Format.instant) ?? "-")\(catchUp ? " catch-up" : "")"
        guard self.running.begin(job.name) else {
            self.output.line("skip \(label): stopping")
            return
        }
        defer { self.running.end(job.name) }
        self.runLog?.record(unit: job.name, occurrence: occurrence?.nanosecondsSinceEpoch, catchUp: catchUp)
        self.output.line("run \(label) (\(job.source))")
        let started = ContinuousClock.now
        // From the elapse (its random delay included) to the start of the run: the claim in the
        // store (two fsyncs) and the task's start.
        let late = MonotonicInstant.now() - tick.scheduledAt
        var status = ChildProcess.Status.exited(0)
        for command in job.commands {
            guard self.running.mayContinue else { break }
            switch ChildProcess.spawn(
                command.arguments, environment: self.environment(job, tick), prefix: "\(job.name): ",
                output: self.output)
            {
            case .failure(let error):
                status = .notStarted(error.code)
            case .success(let (child, exit)):
                self.running.started(child, of: job.name)
                status = await exit()
                self.running.started(nil, of: job.name)
            }
            if !status.isSuccess && !command.ignoresFailure { break }
        }
        let duration = ContinuousClock.now - started
        self.output.line(
            "done \(label) status=\(status) duration=\(Format.seconds(duration)) late=\(Format.seconds(late))")
    }

    /// The runner's environment and, as systemd sets them for a service a timer started,
    /// `TRIGGER_UNIT`, `TRIGGER_TIMER_REALTIME_USEC` and `TRIGGER_TIMER_MONOTONIC_USEC`, here of
    /// the occurrence (systemd gives the elapse's actual time, best effort).
    private func environment(_ job: Job, _ tick: Tick) -> [String] {
        var variables: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !text.hasPrefix("TRIGGER_") { variables.append(text) }
            index += 1
        }
        variables.append("TRIGGER_UNIT=\(job.name).timer")
        let realtime = (tick.wallClockDeadline ?? self.timers.wallClockNow).nanosecondsSinceEpoch / 1000
        variables.append("TRIGGER_TIMER_REALTIME_USEC=\(realtime)")
        variables.append("TRIGGER_TIMER_MONOTONIC_USEC=\(tick.scheduledAt.nanoseconds / 1000)")
        return variables
    }

    /// `systemctl list-timers`' table, as the library writes it.
    private func printTable() {
        for line in TimerListing.table(self.timers.listTimers()).split(
            separator: "\n", omittingEmptySubsequences: false)
        {
            self.output.line(String(line))
        }
    }
}

/// The jobs running now, and whether the runner is stopping.
final class RunningJobs: Sendable {
    private struct State {
        var stopping = false
        var killed = false
        var running: [String: ChildProcess?] = [:]
    }

    private let state = Mutex(State())

    /// Registers a run; false once the runner is stopping.
    func begin(_ name: String) -> Bool {
        self.state.withLock { state in
            guard !state.stopping else { return false }
            state.running[name] = .some(nil)
            return true
        }
    }

    /// The child a run waits for now (nil between commands).
    func started(_ child: ChildProcess?, of name: String) {
        self.state.withLock { $0.running[name] = .some(child) }
    }

    func end(_ name: String) {
        _ = self.state.withLock { $0.running.removeValue(forKey: name) }
    }

    /// Whether a run may start its next command: not after the grace ran out.
    var mayContinue: Bool { self.state.withLock { !$0.killed } }

    /// No run begins from now on; returns how many are running.
    func stop() -> Int {
        self.state.withLock { state in
            state.stopping = true
            return state.running.count
        }
    }

    /// Signals every running child's process group; returns the jobs signalled.
    func terminate(with signal: Int32) -> [String] {
        let children = self.state.withLock { state in
            state.killed = true
            return state.running.compactMap { name, child in child.map { (name, $0) } }
        }
        for (_, child) in children { child.terminate(with: signal) }
        return children.map(\.0).sorted()
    }

    /// Waits until no run is left, polling every 10 ms; true if that happened within `bound`.
    func waitUntilIdle(within bound: Duration) async -> Bool {
        let deadline = ContinuousClock.now + bound
        while self.state.withLock({ !$0.running.isEmpty }) {
            guard ContinuousClock.now < deadline else { return false }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return false }  // Cancelled: stop waiting.
        }
        return true
    }
}
