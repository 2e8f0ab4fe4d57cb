import Dispatch
import Glibc
import PreciseTimer
import Synchronization

/// The fire storm of `precise-bench` (one-shots due at one instant, each scheduled for
/// `deadline − now`), repeated in one process, with the process's CPU time over the storm beside
/// its wall time: on a machine shared with other work the CPU figure moves far less than the wall
/// one, so a change to the loop's per-fire cost shows in it first.
struct StormRun {
    let timers: Int
    let rounds: Int

    /// Time the service gets to take in every one-shot before the deadline.
    private static let leadNanoseconds: Int64 = 1_000_000_000

    /// Counts the handler calls; the last one notes the time and wakes the waiting thread.
    private final class Counter: Sendable {
        let target: Int
        let fired = Atomic<Int>(0)
        let lastAt = Atomic<Int64>(0)
        let done = DispatchSemaphore(value: 0)

        init(target: Int) { self.target = target }

        func fire() {
            if self.fired.wrappingAdd(1, ordering: .relaxed).newValue == self.target {
                self.lastAt.store(MonotonicInstant.now().nanoseconds, ordering: .relaxed)
                self.done.signal()
            }
        }
    }

    func run() throws -> String {
        var lines: [String] = []
        var walls: [Duration] = []
        var cpus: [Duration] = []
        for round in 1...self.rounds {
            let service = try PreciseTimer()
            let counter = Counter(target: self.timers)
            let deadline = MonotonicInstant(nanoseconds: MonotonicInstant.now().nanoseconds + Self.leadNanoseconds)
            for _ in 0..<self.timers {
                try service.schedule(id: nil, after: MonotonicInstant.now().duration(to: deadline), options: .init()) {
                    _ in counter.fire()
                }
            }
            Self.sleep(until: deadline)
            let cpuBefore = processCPU()
            counter.done.wait()
            let cpu = processCPU() - cpuBefore
            let wall = MonotonicInstant(nanoseconds: counter.lastAt.load(ordering: .relaxed)) - deadline
            walls.append(wall)
            cpus.append(cpu)
            lines.append(
                "storm \(round): \(self.timers) one-shots done \(wall.summary) after their deadline, CPU \(cpu.summary)"
            )
            service.shutdown()
        }
        lines.append(
            "storm median of \(self.rounds): last \(Self.median(walls).summary) after the deadline, CPU \(Self.median(cpus).summary)"
        )
        return lines.joined(separator: "\n")
    }

    private static func median(_ values: [Duration]) -> Duration {
        values.sorted()[values.count / 2]
    }

    private static func sleep(until instant: MonotonicInstant) {
        let remaining = MonotonicInstant.now().duration(to: instant)
        guard remaining > .zero else { return }
        let (seconds, attoseconds) = remaining.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        _ = nanosleep(&request, nil)
    }

}
