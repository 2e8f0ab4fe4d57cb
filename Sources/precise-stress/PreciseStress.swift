import ArgumentParser
import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerReference
import PreciseTimerTesting
import Synchronization

/// The scale stress run: many threads schedule, reschedule, cancel and `cancelAll` at once on
/// each implementation while timers fire, then every timer is accounted for; then millions of
/// schedule/cancel cycles must leave the resident set flat. Prints one summary line per
/// implementation and exits 1 on any violation.
@main
struct PreciseStress: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "precise-stress",
        abstract: "Hammer PreciseTimer and DispatchReferenceTimer from many threads and account for every timer.")

    @Option(help: "Worker threads.")
    var threads = 8

    @Option(help: "Operations per thread.")
    var operations = 100_000

    @Option(help: "Schedule/cancel cycles for the memory check (0 skips it).")
    var cycles = 10_000_000

    @Option(help: "Implementations to run: libevent, dispatch or both.")
    var implementation: Contestant = .both

    @Option(help: "Instead of the stress run, time shutdown with this many pending timers.")
    var measureShutdown: Int?

    @Option(help: "Instead of the stress run, time storms of this many one-shots due at one instant.")
    var measureStorm: Int?

    @Option(help: "Storms to run with --measure-storm (the median is reported).")
    var rounds = 5

    @Option(
        help:
            "Instead of the stress run, measure this many idle sessions touched 1 000 times a second for 3 s, beside a 1 ms heartbeat, on .suspending and on .continuous."
    )
    var measureSessions: Int?

    @Flag(help: "Instead of the stress run, step the wall clock one year forward under a per-second calendar timer.")
    var measureStep = false

    enum Contestant: String, ExpressibleByArgument, CaseIterable {
        case libevent, dispatch, both
    }

    func validate() throws {
        guard self.threads > 0, self.operations > 0, self.cycles >= 0 else {
            throw ValidationError("--threads and --operations must be positive, --cycles not negative")
        }
        guard self.rounds > 0, (self.measureStorm ?? 1) > 0, (self.measureShutdown ?? 0) >= 0,
            (self.measureSessions ?? 1) > 0
        else {
            throw ValidationError(
                "--rounds, --measure-storm and --measure-sessions must be positive, --measure-shutdown not negative")
        }
    }

    func run() throws {
        if let timers = self.measureShutdown {
            print(try ShutdownRun(timers: timers).run())
            return
        }
        if let sessions = self.measureSessions {
            let kinds: [Contestant] = self.implementation == .both ? [.libevent, .dispatch] : [self.implementation]
            for kind in kinds {
                for clock in [TimerOptions.ClockKind.suspending, .continuous] {
                    let service: any TimerService = kind == .libevent ? try PreciseTimer() : DispatchReferenceTimer()
                    print(try SessionsRun(sessions: sessions, clock: clock).run(on: service, named: kind.rawValue))
                }
            }
            return
        }
        if self.measureStep {
            print(try StepRun(step: .seconds(365 * 86_400)).run())
            return
        }
        if let timers = self.measureStorm {
            print(try StormRun(timers: timers, rounds: self.rounds).run())
            return
        }
        var failed = false
        let kinds: [Contestant] = self.implementation == .both ? [.libevent, .dispatch] : [self.implementation]
        for kind in kinds {
            let make: () throws -> any TimerService =
                kind == .libevent ? { try PreciseTimer() } : { DispatchReferenceTimer() }
            let mixed = try MixedRun(threads: self.threads, operations: self.operations).run(on: make())
            let memory = try MemoryRun(cycles: self.cycles).run(on: make())
            print("stress[\(kind.rawValue)]: \(mixed.summary); \(memory.summary)")
            failed = failed || !mixed.violations.isEmpty || !memory.isFlat
            for violation in mixed.violations.prefix(10) { print("  violation: \(violation)") }
        }
        if failed { throw ExitCode.failure }
    }
}
