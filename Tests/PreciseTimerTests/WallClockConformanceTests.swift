import PreciseTimer
import Testing

/// Wall-clock and continuous timers on the real services: what must hold on real time. (Steps
/// and suspend are tested on virtual time, in `WallClockTests`, and on the engine through its seam.)
@Suite("Conformance: wall-clock and continuous timers")
struct WallClockConformanceTests {
    @Test("wallClockNow reads CLOCK_REALTIME", arguments: Implementation.allCases)
    func wallClockNow(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let before = wallClockNanoseconds()
        let now = timers.wallClockNow.nanosecondsSinceEpoch
        let after = wallClockNanoseconds()
        #expect(before <= now && now <= after)
    }

    @Test(
        "a wall-clock one-shot fires once the wall clock reached its instant, never before",
        arguments: Implementation.allCases)
    func atWallClock(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let instant = timers.wallClockNow.advanced(by: .milliseconds(50))
        let fired = Recorder<(Tick, Int64)>()
        try timers.schedule(id: "wall", atWallClock: instant) { tick in fired.append((tick, wallClockNanoseconds())) }
        let values = await fired.wait(forCount: 1)
        let (tick, wallAtCall) = try #require(values.first)
        #expect(wallAtCall >= instant.nanosecondsSinceEpoch, "never before the wall clock reached it")
        #expect(tick.wallClockDeadline == instant)
        #expect(tick.lateness < Bounds.lateness)
        #expect(timers.scheduledCount == 0)
    }

    @Test("a calendar timer fires at its occurrences on the wall clock", arguments: Implementation.allCases)
    func calendar(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let fired = Recorder<(Tick, Int64)>()
        try timers.scheduleRepeating(id: "every-200ms", on: EveryWallClockInterval(interval: 200_000_000)) { tick in
            fired.append((tick, wallClockNanoseconds()))
        }
        let values = await fired.wait(forCount: 3)
        for (tick, wallAtCall) in values {
            let occurrence = try #require(tick.wallClockDeadline).nanosecondsSinceEpoch
            #expect(occurrence % 200_000_000 == 0)
            #expect(wallAtCall >= occurrence)
        }
        let occurrences = values.compactMap { $0.0.wallClockDeadline?.nanosecondsSinceEpoch }
        #expect(zip(occurrences, occurrences.dropFirst()).allSatisfy { $1 - $0 >= 200_000_000 }, "each at most once")
    }

    @Test(
        "a continuous-clock timer fires like a monotonic one while the machine is awake",
        arguments: Implementation.allCases)
    func continuous(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let start = timers.now
        let fired = Recorder<Tick>()
        try timers.scheduleRepeating(every: .milliseconds(20), options: .init(clock: .continuous)) { fired.append($0) }
        let ticks = await fired.wait(forCount: 3)
        #expect(ticks.allSatisfy { $0.firedAt >= $0.scheduledAt })
        #expect(ticks.first.map { $0.scheduledAt >= start.advanced(by: .milliseconds(20)) } ?? false)
    }
}
