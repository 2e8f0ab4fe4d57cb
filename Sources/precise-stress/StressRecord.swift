import PreciseTimer
import Synchronization

/// One timer's history, written with atomics by its handler and by every thread that touches it.
final class StressRecord: Sendable {
    let repeating: Bool
    /// The global sequence number taken just before `schedule` was called.
    let scheduledAt: Int
    let calls = Atomic<Int>(0)
    let cancelsReturningTrue = Atomic<Int>(0)
    let running = Atomic<Int>(0)
    let overlapped = Atomic<Bool>(false)
    let released = Atomic<Bool>(false)

    init(repeating: Bool, scheduledAt: Int) {
        self.repeating = repeating
        self.scheduledAt = scheduledAt
    }

    /// Wraps a handler call: counts it and catches a call overlapping another of the same timer.
    func call(_ body: () -> Void) {
        if self.running.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
            self.overlapped.store(true, ordering: .relaxed)
        }
        self.calls.add(1, ordering: .relaxed)
        body()
        self.running.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// What is wrong with this timer's history, if anything. `strict`: no `cancelAll` can have
    /// swept it, so it must have ended by its own fire or by a `cancel` that returned `true`.
    func problem(strict: Bool) -> String? {
        let calls = self.calls.load(ordering: .sequentiallyConsistent)
        let cancels = self.cancelsReturningTrue.load(ordering: .sequentiallyConsistent)
        if !self.released.load(ordering: .sequentiallyConsistent) { return "handler never released" }
        if self.overlapped.load(ordering: .relaxed) { return "handler overlapped itself" }
        if cancels > 1 { return "cancel returned true \(cancels) times" }
        guard !self.repeating else { return nil }
        if calls > 1 { return "one-shot fired \(calls) times" }
        if calls == 1 && cancels == 1 { return "one-shot both fired and cancelled" }
        if strict && calls + cancels == 0 { return "one-shot neither fired nor cancelled" }
        return nil
    }
}

/// Captured by a handler; its deinit proves the service let go of the handler.
final class ReleaseProbe: Sendable {
    let record: StressRecord
    init(_ record: StressRecord) { self.record = record }
    deinit { self.record.released.store(true, ordering: .sequentiallyConsistent) }
}
