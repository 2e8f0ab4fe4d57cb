import Glibc
import PreciseTimerCore
import PreciseTimerTesting

/// The scenario and its checks; the scenario blocks its thread (it sleeps and reaps children).
enum FleetScenario {
    static let second: Int64 = 1_000_000_000

    /// One replica process: when it was spawned, first seen ready (its `list-timers` table
    /// printed, so its unit is scheduled) and killed, on the wall clock in ns.
    struct Replica {
        let pid: pid_t
        let output: String
        let spawned: Int64
        var ready: Int64?
        var killed: Int64?
    }

    struct Timeline {
        var replicas: [Replica] = []
        /// The full stop: every replica dead from `fullStop` until the restart at `restart`.
        var fullStop: Int64 = 0
        var restart: Int64 = 0
        var end: Int64 = 0
    }

    /// Three replicas; for `killPhase`, one replica SIGKILLed every 1–3 s and restarted 0–1.5 s
    /// later; then all three SIGKILLed, 5 s down, all three started again; 3 s after they are all
    /// ready, all stopped.
    static func scenario(runner: String, directory: String, table: String, killPhase: Int64) throws -> Timeline {
        try TestFiles.write(
            directory + "/units/tick.timer", "[Timer]\nOnCalendar=*:*:0/1\nPersistent=true\nAccuracySec=1ms\n")
        try TestFiles.write(directory + "/units/tick.command", "true\n")
        guard let url = PostgresServer.url else { throw ScenarioError(EINVAL) }
        let arguments = [
            "--units", directory + "/units", "--postgres", url, "--postgres-table", table,
            "--run-log", directory + "/runs.log", "--log-level", "notice",
        ]
        var timeline = Timeline()
        var live: [Int] = []  // Indexes into timeline.replicas, one per slot.
        var random = SystemRandomNumberGenerator()

        func spawn() throws -> Int {
            let output = directory + "/replica-\(timeline.replicas.count).out"
            let pid = try ChildProcess.spawn(runner, arguments, output: output).get()
            timeline.replicas.append(Replica(pid: pid, output: output, spawned: Self.now()))
            return timeline.replicas.count - 1
        }
        func kill(_ index: Int) {
            ChildProcess.kill(timeline.replicas[index].pid)
            timeline.replicas[index].killed = Self.now()
        }
        /// Sleeps `span` ns, noting every 20 ms which live replicas have become ready.
        func pause(_ span: Int64) {
            let until = Self.now() + span
            repeat {
                for index in live where timeline.replicas[index].ready == nil {
                    let text = (try? TestFiles.read(timeline.replicas[index].output)) ?? ""
                    if text.contains("timers listed.") || text.contains("timer listed.") {
                        timeline.replicas[index].ready = Self.now()
                    }
                }
                usleep(20_000)
            } while Self.now() < until
        }
        func waitUntilReady(within bound: Int64) {
            let until = Self.now() + bound
            while Self.now() < until, live.contains(where: { timeline.replicas[$0].ready == nil }) { pause(0) }
        }
        defer {
            for index in live where timeline.replicas[index].killed == nil { kill(index) }
        }

        for _ in 0..<3 { live.append(try spawn()) }
        waitUntilReady(within: 60 * Self.second)
        let killsEnd = Self.now() + killPhase
        while Self.now() < killsEnd {
            pause(Int64.random(in: Self.second...(3 * Self.second), using: &random))
            let slot = Int.random(in: 0..<3, using: &random)
            kill(live[slot])
            pause(Int64.random(in: 0...(Self.second * 3 / 2), using: &random))
            live[slot] = try spawn()
        }
        for index in live { kill(index) }
        timeline.fullStop = Self.now()
        live = []
        pause(5 * Self.second)
        timeline.restart = Self.now()
        for _ in 0..<3 { live.append(try spawn()) }
        waitUntilReady(within: 60 * Self.second)
        pause(3 * Self.second)
        for index in live { kill(index) }
        timeline.end = Self.now()
        return timeline
    }

    /// What the run log and the claims table show.
    struct Figures {
        var runs = 0
        /// Whole seconds a replica was up for: ready by the occurrence, killed at least a second after it.
        var required = 0
        var doubles = 0
        /// Required seconds not claimed by any replica.
        var lost = 0
        /// Required seconds claimed but not run: the claiming replica was SIGKILLed between its
        /// claim and its run (at most once: it is not handed to another replica), so a kill fell
        /// within a second after the occurrence.
        var lostToAKillInsideTheClaim = 0
        /// Required seconds no replica claimed because every replica was still waiting for the
        /// claim of an earlier second (a unit never overlaps itself, its claim included; the
        /// losers' inserts wait on the winner's uncommitted row): a run of an earlier occurrence
        /// started after this second. A database stall (an fsync on a loaded disk) does this;
        /// reported, not failed.
        var droppedBehindASlowClaim = 0
        /// Required seconds no replica claimed because every replica up for it was still running
        /// the unit's command for an earlier second (a unit never overlaps itself): the command
        /// itself was slow, as `true` is when the machine is starved. Reported, not failed.
        var droppedBehindASlowRun = 0
        var catchUpsAfterFullStop = 0
        /// Catch-ups a restarted replica ran while others were up: an occurrence it claimed at its
        /// start just before the others did (allowed: it still ran once).
        var catchUpsWhileOthersRan = 0
        /// Winning replica's handler start minus the occurrence, in ns, of runs that are not catch-ups.
        var lateness: [Int64] = []
        var problems: [String] = []

        mutating func add(_ other: Figures) {
            self.runs += other.runs
            self.required += other.required
            self.doubles += other.doubles
            self.lost += other.lost
            self.lostToAKillInsideTheClaim += other.lostToAKillInsideTheClaim
            self.droppedBehindASlowClaim += other.droppedBehindASlowClaim
            self.droppedBehindASlowRun += other.droppedBehindASlowRun
            self.catchUpsAfterFullStop += other.catchUpsAfterFullStop
            self.catchUpsWhileOthersRan += other.catchUpsWhileOthersRan
            self.lateness += other.lateness
        }

        var summary: String {
            let sorted = self.lateness.sorted()
            func percentile(_ p: Double) -> String {
                guard !sorted.isEmpty else { return "-" }
                let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
                let ns = sorted[max(0, index)]
                return "\(ns / 1_000_000).\(String(ns % 1_000_000 / 1000 + 1000).dropFirst())ms"
            }
            return "runs=\(self.runs) required=\(self.required) doubles=\(self.doubles) lost=\(self.lost) "
                + "lost-to-a-kill-inside-the-claim=\(self.lostToAKillInsideTheClaim) "
                + "dropped-behind-a-slow-claim=\(self.droppedBehindASlowClaim) "
                + "dropped-behind-a-slow-run=\(self.droppedBehindASlowRun) "
                + "catch-ups-after-full-stop=\(self.catchUpsAfterFullStop) "
                + "catch-ups-while-others-ran=\(self.catchUpsWhileOthersRan) "
                + "start-minus-occurrence p50=\(percentile(0.5)) p99=\(percentile(0.99)) "
                + "max=\(percentile(1)) over \(sorted.count) runs"
        }
    }

    /// The checks: no occurrence run twice; every second some replica was up for (ready at the
    /// occurrence, killed no sooner than a second after it) claimed, and run unless a kill fell
    /// inside its claim (or, unclaimed, dropped while every replica still waited for an earlier
    /// claim or ran an earlier second's command: see `droppedBehindASlowClaim` and
    /// `droppedBehindASlowRun`); after the full stop exactly one catch-up, of the latest missed
    /// second.
    ///
    /// The catch-up after the full stop is recognised by its occurrence, not by example-cron's
    /// `catch-up` mark (an occurrence before the runner's start, which a second boundary between
    /// that start and the store's read can move): a run of a second after the stop and not after
    /// the first restarted replica was seen ready. Exactly one, and not older than the restart's
    /// own second (only the latest missed second runs, as systemd's `Persistent=`).
    static func check(log: String, claimed: Set<Int64>, timeline: Timeline) -> Figures {
        var figures = Figures()
        var seen: [Int64: Int] = [:]
        var byReplica: [pid_t: Replica] = [:]
        for replica in timeline.replicas { byReplica[replica.pid] = replica }
        struct Run {
            let occurrence: Int64
            let replica: Replica
            let catchUp: Bool
            let start: Int64
        }
        var runs: [Run] = []
        for line in log.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 5, let occurrence = Int64(fields[1]),
                let pid = fields[2].split(separator: "@").first.flatMap({ pid_t($0) }),
                let start = Int64(fields[4]), let replica = byReplica[pid]
            else {
                figures.problems.append("an unreadable log line, or a replica not started here: '\(line)'")
                continue
            }
            if occurrence % Self.second != 0 { figures.problems.append("not a whole second: '\(line)'") }
            if !claimed.contains(occurrence) { figures.problems.append("run without a claim row: '\(line)'") }
            seen[occurrence, default: 0] += 1
            runs.append(Run(occurrence: occurrence, replica: replica, catchUp: fields[3] == "1", start: start))
        }
        figures.runs = runs.count
        figures.doubles = seen.values.filter { $0 > 1 }.count
        if figures.doubles > 0 {
            figures.problems.append("run twice: \(seen.filter { $0.value > 1 }.keys.sorted())")
        }

        // Each replica's runs as spans from their start to their end: its output's `done` lines
        // give their durations, in the order of its runs in the log; a run without one was cut
        // short by the replica's kill.
        var spans: [pid_t: [(start: Int64, end: Int64)]] = [:]
        for replica in timeline.replicas {
            let durations = ((try? TestFiles.read(replica.output)) ?? "").split(separator: "\n")
                .filter { $0.hasPrefix("done ") }
                .compactMap { line in
                    line.split(separator: " ").first { $0.hasPrefix("duration=") }
                        .flatMap { Double($0.dropFirst("duration=".count).dropLast()) }
                }
            let starts = runs.filter { $0.replica.pid == replica.pid }.map(\.start)
            spans[replica.pid] = starts.enumerated().map { index, start in
                let end =
                    index < durations.count ? start + Int64(durations[index] * 1e9) : replica.killed ?? timeline.end
                return (start, end)
            }
        }

        // Required: whole seconds at which some replica was ready, and not killed for a second after.
        let readies = timeline.replicas.compactMap(\.ready)
        guard let first = readies.min() else {
            figures.problems.append("no replica became ready")
            return figures
        }
        var occurrence = (first / Self.second + 1) * Self.second
        var missing: [Int64] = []
        while occurrence < timeline.end {
            let covering = timeline.replicas.filter { replica in
                guard let ready = replica.ready, ready <= occurrence else { return false }
                return (replica.killed ?? timeline.end) >= occurrence + Self.second
            }
            if !covering.isEmpty {
                figures.required += 1
                if seen[occurrence] == nil {
                    let killedInside = timeline.replicas.contains { replica in
                        guard let killed = replica.killed else { return false }
                        return killed >= occurrence && killed < occurrence + Self.second
                    }
                    let behindASlowClaim = runs.contains { run in
                        !run.catchUp && run.occurrence < occurrence && run.start > occurrence
                    }
                    let behindASlowRun = covering.allSatisfy { replica in
                        spans[replica.pid, default: []].contains { $0.start <= occurrence && $0.end > occurrence }
                    }
                    if claimed.contains(occurrence) && killedInside {
                        figures.lostToAKillInsideTheClaim += 1
                    } else if !claimed.contains(occurrence) && behindASlowClaim {
                        figures.droppedBehindASlowClaim += 1
                    } else if !claimed.contains(occurrence) && behindASlowRun {
                        figures.droppedBehindASlowRun += 1
                    } else {
                        figures.lost += 1
                        missing.append(occurrence)
                        figures.problems.append(
                            "lost \(occurrence / Self.second): claimed=\(claimed.contains(occurrence)) "
                                + "replicas (spawned, ready, killed - occurrence, ms): "
                                + timeline.replicas.map { replica in
                                    "\(replica.pid):\((replica.spawned - occurrence) / 1_000_000),"
                                        + "\(((replica.ready ?? 0) - occurrence) / 1_000_000),"
                                        + "\(((replica.killed ?? 0) - occurrence) / 1_000_000)"
                                }.joined(separator: " "))
                    }
                }
            }
            occurrence += Self.second
        }
        if !missing.isEmpty {
            figures.problems.append(
                "lost while a replica was up (s since the epoch): \(missing.map { $0 / Self.second })")
        }

        // The catch-up after the full stop: the runs of seconds from the stop up to the moment the
        // first restarted replica was seen ready (its unit scheduled). One, except that the seconds
        // after the restart may also fall in that span and run on time (readiness is polled every
        // 20 ms, and seen later on a loaded machine): a trailing run example-cron did not mark as a
        // catch-up (its occurrence came after its runner started) is one of those.
        let firstReady =
            timeline.replicas.filter { $0.spawned >= timeline.restart }.compactMap(\.ready).min() ?? timeline.end
        var catchUps = runs.filter { $0.occurrence > timeline.fullStop && $0.occurrence <= firstReady }
            .sorted { $0.occurrence < $1.occurrence }
        while catchUps.count > 1, let last = catchUps.last, !last.catchUp {
            catchUps.removeLast()
        }
        figures.catchUpsAfterFullStop = catchUps.count
        if catchUps.count != 1 {
            figures.problems.append(
                "\(catchUps.count) catch-ups after the full stop (occurrences, ns): \(catchUps.map(\.occurrence)); "
                    + "stop \(timeline.fullStop), restart \(timeline.restart), first ready \(firstReady)")
        }
        // Only the latest missed second: none from before the restart's own second.
        if let catchUp = catchUps.first, catchUp.occurrence <= timeline.restart - Self.second {
            figures.problems.append(
                "the catch-up \(catchUp.occurrence) is not the latest missed second (restart \(timeline.restart))")
        }
        let catchUpOccurrences = Set(catchUps.map(\.occurrence))
        figures.catchUpsWhileOthersRan = runs.filter { $0.catchUp && $0.replica.spawned < timeline.restart }.count
        figures.lateness = runs.filter { !$0.catchUp && !catchUpOccurrences.contains($0.occurrence) }
            .map { $0.start - $0.occurrence }
        return figures
    }

    // MARK: - Processes and files

    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The wall clock in ns since the epoch.
    static func now() -> Int64 { wallClockNanoseconds() }

    struct ScenarioError: Error {
        let code: Int32
        init(_ code: Int32) { self.code = code }
    }
}
