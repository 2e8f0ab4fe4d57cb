/// How big and how long each measurement is, for a full run or a `--quick` one.
struct BenchPlan: Sendable {
    /// Whether this is the short run.
    let quick: Bool

    /// The period of the periodic timers: 1 ms.
    let interval: Int64 = 1_000_000
    /// Ticks per lateness contestant, over all rounds.
    var ticks: Int { self.quick ? 1_000 : 5_000 }
    /// Interleaved rounds the ticks are split into.
    var rounds: Int { self.quick ? 2 : 5 }
    /// The spin-finish contestant's margin: it covers the floor's p99.9 on this VM.
    let spinMargin: Duration = .microseconds(200)
    /// SCHED_FIFO priority of the real-time contestant.
    let realtimePriority: Int32 = 50

    /// How many concurrent 1 ms timers.
    let concurrentCounts = [100, 10_000]
    /// Seconds each concurrent run records for.
    var concurrentSeconds: Double { self.quick ? 0.5 : 1 }
    /// Interleaved rounds of the concurrent runs.
    var concurrentRounds: Int { self.quick ? 1 : 2 }

    /// Pending timers during schedule + cancel.
    var pending: Int { self.quick ? 200_000 : 1_000_000 }
    /// Timed schedule + cancel pairs.
    var pairs: Int { self.quick ? 50_000 : 200_000 }
    /// Pending tasks for NIO, whose cancel scans its whole heap.
    let nioPending = [20_000, 100_000]
    /// Timed pairs for NIO.
    var nioPairs: Int { self.quick ? 1_000 : 5_000 }

    /// Pending timers when `scheduledCount` and `scheduledIDs.count` are compared.
    let countPending = 100_000
    /// Timed touches (reschedule, or cancel + schedule) of the control section.
    var controlOps: Int { self.quick ? 50_000 : 200_000 }

    /// Pending timers during the metrics section's schedule + cancel (in this process).
    var metricsPending: Int { self.quick ? 100_000 : 200_000 }
    /// Timed schedule + cancel pairs per round of the metrics section.
    var metricsPairs: Int { self.quick ? 100_000 : 200_000 }

    /// Pending timers whose RSS is measured.
    var memoryCount: Int { self.quick ? 200_000 : 1_000_000 }
    /// One-shots in the fire storm.
    let stormCount = 100_000
    /// Interleaved rounds of the peers section's cost and storm runs. Five, not three: Go's
    /// figures move with its collector by a fifth from run to run, and a median of three
    /// followed single runs.
    var peerRounds: Int { self.quick ? 2 : 5 }
    /// Ticks per contestant of the peers section's lateness rows, over all its rounds.
    ///
    /// A p99 over 5 000 ticks is the 50th-latest tick: on a shared VM, where a stall of the host
    /// makes a few dozen ticks in a row late, one stall decided the row, and which contestant it
    /// fell on was chance. Four times the ticks in short rounds spread the stalls over every
    /// contestant.
    var peerTicks: Int { self.quick ? 1_000 : 20_000 }
    /// Interleaved rounds the peers' lateness ticks are split into (500 ticks, half a second,
    /// each).
    var peerLatenessRounds: Int { self.quick ? 2 : 40 }

    /// Seconds a 1 s repeating timer idles while process CPU is measured.
    var idleSeconds: Int { self.quick ? 3 : 10 }
}
