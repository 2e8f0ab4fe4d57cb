import PreciseTimer
import PreciseTimerTesting
import Testing

/// Collects values from handlers on any thread; tests await a count with a deadline, so a
/// missing fire fails the test instead of hanging it. (Locks with the package's
/// SemaphoreGuarded: ThreadSanitizer does not see the futex a Mutex waits on.)
final class Recorder<Value: Sendable>: Sendable {
    private let storage = SemaphoreGuarded<[Value]>([])

    func append(_ value: Value) {
        self.storage.withLock { $0.append(value) }
    }

    var values: [Value] { self.storage.withLock { $0 } }
    var count: Int { self.storage.withLock { $0.count } }

    /// Waits until at least `count` values were recorded (``Polling/until(timeout:_:)``); records
    /// an issue if they never come.
    func wait(forCount count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        _ = await Polling.until { self.count >= count }
        #expect(self.count >= count, "expected \(count) values, got \(self.count)", sourceLocation: sourceLocation)
    }
}
