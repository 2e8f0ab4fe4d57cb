import Dispatch
import Glibc
import PreciseTimer

/// How long ending a service takes with many timers pending, and where the time goes.
///
/// Each timer's handler captures an object of its own, as real handlers do (a session, a
/// connection), so releasing it frees a closure context and an object, not just a pointer.
struct ShutdownRun {
    let timers: Int

    /// The object a handler captures.
    private final class Captured: Sendable {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    func run() throws -> String {
        var lines: [String] = []

        // The whole `shutdown()` of a running service, as a daemon calls it: deadlines in the
        // order the timers were scheduled (the heap's order is the nodes' allocation order), then
        // in random order (as idle timers pushed back by traffic end up).
        for randomOrder in [false, true] {
            let service = try PreciseTimer()
            try self.fill(service, randomOrder: randomOrder)
            let start = MonotonicInstant.now()
            service.shutdown()
            lines.append(
                "shutdown(): \(self.timers) pending timers, deadlines in \(randomOrder ? "random" : "scheduling") "
                    + "order, in \((MonotonicInstant.now() - start).summary)")
        }

        // The two halves of `shutdown()`, timed apart: ending the timers (the core's close, which
        // releases every handler on the calling thread), then stopping the loop thread.
        do {
            let service = try PreciseTimer()
            try self.fill(service)
            let start = MonotonicInstant.now()
            service.core.close(.shutDown)
            let closed = MonotonicInstant.now()
            service.shutdown()
            let stopped = MonotonicInstant.now()
            lines.append(
                "  split: close and release \((closed - start).summary), stop the loop thread \((stopped - closed).summary)"
            )
        }

        // The same steps on a bare registry, timed one by one.
        do {
            var registry = ShardState()
            for index in 0..<self.timers {
                let captured = Captured(index)
                let node = TimerNode(
                    generatedNumber: UInt64(index + 1), deadline: .max / 2, interval: 0, options: .init(),
                    handler: { _ in withExtendedLifetime(captured) {} })
                node.place(hash: node.hash)
                _ = try registry.add(node)
            }
            let start = MonotonicInstant.now()
            var swept = registry.close(.shutDown)
            let closed = MonotonicInstant.now()
            swept?.release()
            let released = MonotonicInstant.now()
            swept = nil
            let freed = MonotonicInstant.now()
            lines.append(
                "  one registry shard holding all: close (under the lock) \((closed - start).summary), "
                    + "release handlers \((released - closed).summary), free table and heap \((freed - released).summary)"
            )
        }

        // The asynchronous form, with nothing in flight.
        do {
            let service = try PreciseTimer()
            try self.fill(service)
            let result = Box()
            let done = DispatchSemaphore(value: 0)
            let start = MonotonicInstant.now()
            Task {
                let drained = await service.shutdown(gracePeriod: .seconds(10))
                result.set(MonotonicInstant.now() - start, drained)
                done.signal()
            }
            done.wait()
            let (elapsed, drained) = result.get()
            lines.append(
                "shutdown(gracePeriod:): \(self.timers) pending timers in \(elapsed.summary) (drained: \(drained))")
        }

        // The asynchronous form waiting for a `.queue` handler that runs 50 ms.
        do {
            let service = try PreciseTimer()
            let started = DispatchSemaphore(value: 0)
            let queue = DispatchQueue(label: "precise-stress.shutdown")
            let handlerReturned = Box()
            try service.schedule(id: "slow", after: .zero, options: .init(executor: .queue(queue))) { _ in
                started.signal()
                var request = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                _ = nanosleep(&request, nil)
                handlerReturned.instant = MonotonicInstant.now()
            }
            started.wait()
            let result = Box()
            let done = DispatchSemaphore(value: 0)
            let start = MonotonicInstant.now()
            Task {
                let drained = await service.shutdown(gracePeriod: .seconds(10))
                result.instant = MonotonicInstant.now()
                result.set(result.instant - start, drained)
                done.signal()
            }
            done.wait()
            let (elapsed, drained) = result.get()
            let latency = handlerReturned.instant.duration(to: result.instant)
            lines.append(
                "shutdown(gracePeriod:) with a 50 ms .queue handler running: \(elapsed.summary) (drained: \(drained)), "
                    + "returned \(latency.summary) after the handler did")
        }
        return lines.joined(separator: "\n")
    }

    private func fill(_ service: PreciseTimer, randomOrder: Bool = false) throws {
        for index in 0..<self.timers {
            let captured = Captured(index)
            let jitter: Duration = randomOrder ? .microseconds(Int64.random(in: 0..<3_600_000_000)) : .zero
            try service.schedule(id: nil, after: .seconds(3_600) + jitter, options: .init()) { _ in
                withExtendedLifetime(captured) {}
            }
        }
    }

    /// A result handed from a task to the thread that waits for it.
    private final class Box: @unchecked Sendable {
        // Invariant: written before `done.signal()` (the handler's, before the drain it waits for),
        // read after `done.wait()`.
        private var value: (Duration, Bool) = (.zero, false)
        var instant = MonotonicInstant(nanoseconds: 0)
        func set(_ elapsed: Duration, _ drained: Bool) { self.value = (elapsed, drained) }
        func get() -> (Duration, Bool) { self.value }
    }
}
