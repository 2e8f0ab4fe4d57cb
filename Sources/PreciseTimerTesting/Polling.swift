#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Waiting in real time for something another thread does, in tests.
///
/// Every wait of the suites polls through here, so they share one bound: at least
/// ``minimumWait``. A test that passes returns as soon as its condition holds; the bound only
/// decides how long a failing one takes to say so. It is long because the suite runs all at
/// once on two shared cores: under ThreadSanitizer beside a build a task waited 74 s for a
/// cooperative thread (and the threads it waits on for the CPU), and under AddressSanitizer
/// beside a build the whole suite took 146 s, a task created at its start first running after
/// 120 s. Below the 5-minute time limit of every suite that waits on real time.
package enum Polling {
    /// The least any wait allows: 240 s.
    package static let minimumWait: Duration = .seconds(240)

    /// Polls `condition` every millisecond until it holds; `true` if it did within
    /// `max(timeout, minimumWait)` (it is asked once more at the end, so a waiter resumed late
    /// still sees what happened meanwhile).
    package static func until(timeout: Duration = .zero, _ condition: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + max(timeout, Self.minimumWait)
        while clock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition()
    }

    /// ``until(timeout:_:)`` for a thread that may not suspend (a forked child, an exit test's
    /// body): sleeps the thread a millisecond between asks.
    package static func blockingUntil(timeout: Duration = .zero, _ condition: () -> Bool) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + max(timeout, Self.minimumWait)
        while clock.now < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return condition()
    }
}
