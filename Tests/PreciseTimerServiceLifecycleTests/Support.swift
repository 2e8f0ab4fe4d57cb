// Test helpers lock with the package's SemaphoreGuarded, not Synchronization.Mutex: ThreadSanitizer
// does not see the futex a Mutex waits on and reports races that are not there.
import PreciseTimer
import PreciseTimerTesting
import Testing

/// Collects values from any thread; tests await a condition with a deadline, so a missing value
/// fails the test instead of hanging it.
final class Events: Sendable {
    private let storage = SemaphoreGuarded<[String]>([])

    func append(_ value: String) {
        self.storage.withLock { $0.append(value) }
    }

    var values: [String] { self.storage.withLock { $0 } }

    /// Waits until `condition` holds (``Polling/until(timeout:_:)``); `true` if it held in time.
    @discardableResult
    func wait(timeout: Duration = .zero, until condition: ([String]) -> Bool) async -> Bool {
        await Polling.until(timeout: timeout) { self.storage.withLock { condition($0) } }
    }
}

/// Whether scheduling on `timers` now fails with `.shutDown`.
func schedulingFailsWithShutDown(_ timers: PreciseTimer) -> Bool {
    do {
        try timers.schedule(after: .seconds(1)) { _ in }
        return false
    } catch {
        return (error as? PreciseTimerError)?.code == .shutDown
    }
}

/// Awaits `task` for at most `timeout`; `true` if it finished in time. The lifecycle tests give
/// 180 s: under a sanitizer the start of the whole suite has kept both cooperative threads busy
/// for 30–50 s, and a real hang still fails.
func finishes(_ task: Task<Void, Never>, within timeout: Duration) async -> Bool {
    let done = Events()
    let waiter = Task {
        await task.value
        done.append("done")
    }
    let finished = await done.wait(timeout: timeout) { !$0.isEmpty }
    if !finished { waiter.cancel() }
    return finished
}
