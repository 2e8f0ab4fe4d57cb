// Test helpers lock with the package's SemaphoreGuarded, not Synchronization.Mutex: ThreadSanitizer
// does not see the futex a Mutex waits on and reports races that are not there.
import PreciseTimer
import PreciseTimerTesting
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

    /// Waits until `condition` holds for the recorded values (``Polling/until(timeout:_:)``: at
    /// least 120 s, whatever `timeout` says).
    /// - Returns: `true` if it held in time.
    @discardableResult
    func wait(timeout: Duration = .zero, until condition: ([Value]) -> Bool) async -> Bool {
        await Polling.until(timeout: timeout) { self.storage.withLock { condition($0) } }
    }

    /// Waits until at least `count` values were recorded; records an issue if they never come.
    @discardableResult
    func wait(
        forCount count: Int, timeout: Duration = .zero,
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
