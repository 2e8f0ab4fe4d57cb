import Dispatch
import Synchronization

/// Counts the fire storm's handler calls and notes when the first and the last ran.
final class StormCounter: Sendable {
    /// Calls after which the storm is over.
    let target: Int
    private let fired = Atomic<Int>(0)
    private let firstAt = Atomic<Int64>(0)
    private let lastAt = Atomic<Int64>(0)
    private let done = DispatchSemaphore(value: 0)

    /// Creates a counter for `target` calls.
    init(target: Int) {
        self.target = target
    }

    /// One handler call: a relaxed increment, and a clock read for the first and the last.
    func fire() {
        let count = self.fired.wrappingAdd(1, ordering: .relaxed).newValue
        if count == 1 { self.firstAt.store(Measure.now(), ordering: .relaxed) }
        if count == self.target {
            self.lastAt.store(Measure.now(), ordering: .relaxed)
            self.done.signal()
        }
    }

    /// Blocks until the last call, or `timeoutSeconds`.
    /// - Returns: When the first and the last handler ran, or `nil` on timeout.
    func wait(timeoutSeconds: Double) -> (first: Int64, last: Int64)? {
        guard self.done.wait(timeout: .now() + timeoutSeconds) == .success else { return nil }
        return (self.firstAt.load(ordering: .relaxed), self.lastAt.load(ordering: .relaxed))
    }
}
