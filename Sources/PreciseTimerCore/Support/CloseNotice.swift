/// Callbacks to run once, when a ``TimerCore`` closes: a shutdown, or an engine failure.
///
/// The service-lifecycle adapter uses it so that `run()` returns when the service is shut down
/// directly, not only when its group asks.
package final class CloseNotice: Sendable {
    /// The callbacks still waiting; `nil` once the notice has fired.
    private let waiting = SemaphoreGuarded<[@Sendable () -> Void]?>([])

    package init() {}

    /// Runs `body` when the core closes, on the thread that closes it (keep it short: resume a
    /// continuation), or right here if it already has.
    package func notify(_ body: @escaping @Sendable () -> Void) {
        let fired = self.waiting.withLock { waiting -> Bool in
            guard waiting != nil else { return true }
            waiting!.append(body)
            return false
        }
        if fired { body() }
    }

    /// Fires the notice; the callbacks run here, outside the lock. Later calls do nothing.
    func fire() {
        let callbacks = self.waiting.withLock { waiting -> [@Sendable () -> Void] in
            defer { waiting = nil }
            return waiting ?? []
        }
        for callback in callbacks { callback() }
    }
}
