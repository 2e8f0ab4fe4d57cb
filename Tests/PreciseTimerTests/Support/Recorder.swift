// Test helpers lock with the package's SemaphoreGuarded, not Synchronization.Mutex: ThreadSanitizer
// does not see the futex a Mutex waits on and reports races that are not there.
import PreciseTimer
import Testing

/// Collects values from handlers on any thread; tests await a condition with a deadline, so a
/// missing fire fails the test instead of hanging it (and no Swift-concurrency thread blocks).
final class Recorder<Value: Sendable>: Sendable {
    private let storage = SemaphoreGuarded<[Value]>([])

    init() {}

    func append(_ value: Value) {
        self.storage.withLock { $0.append(value) }
    }

    var values: [Value] { self.storage.withLock { $0 } }
    var count: Int { self.storage.withLock { $0.count } }

    /// Waits until `condition` holds for the recorded values, polling every millisecond.
    /// - Returns: `true` if it held before `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(10), until condition: ([Value]) -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if self.storage.withLock({ condition($0) }) { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return self.storage.withLock { condition($0) }
    }

    /// Waits until at least `count` values were recorded; records an issue if they never come.
    @discardableResult
    func wait(
        forCount count: Int, timeout: Duration = .seconds(10),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> [Value] {
        let reached = await self.wait(timeout: timeout) { $0.count >= count }
        #expect(reached, "expected \(count) values, got \(self.count)", sourceLocation: sourceLocation)
        return self.values
    }
}

/// Sleeps without blocking a Swift-concurrency thread.
func pause(_ duration: Duration) async {
    try? await Task.sleep(for: duration)
}
