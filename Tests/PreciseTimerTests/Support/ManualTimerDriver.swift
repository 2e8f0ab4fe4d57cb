import PreciseTimer

/// A ``TimerLoop`` whose clock only moves when a test says so.
final class ManualLoop: TimerLoop {
    private let state = SemaphoreGuarded((now: Int64(1_000_000_000), wakes: 0))

    func now() -> Int64 { self.state.withLock { $0.now } }
    func wake() { self.state.withLock { $0.wakes += 1 } }

    var wakes: Int { self.state.withLock { $0.wakes } }

    func set(_ now: Int64) {
        self.state.withLock { $0.now = max($0.now, now) }
    }
}

/// Drives a ``TimerCore`` by hand, like NIO's EmbeddedEventLoop or swift-clocks' TestClock:
/// nothing fires until ``advance(by:)``, which moves the clock from deadline to deadline and
/// runs what is due at each, on the calling thread.
final class ManualTimerDriver: Sendable {
    let loop = ManualLoop()
    let core: TimerCore

    init() {
        self.core = TimerCore(loop: self.loop)
    }

    /// The service under test.
    var timers: any TimerService { self.core }

    var now: Int64 { self.loop.now() }

    /// Moves time forward by `duration`, firing every timer at its exact deadline on the way.
    func advance(by duration: Duration) {
        let target = self.now + duration.timerNanoseconds!
        while let next = self.core.runDue(), next <= target {
            self.loop.set(next)  // .min (batch limit) leaves the clock where it is
        }
        self.loop.set(target)
        _ = self.core.runDue()
    }

    /// Moves time forward without running anything, as if the loop thread had been blocked,
    /// then lets the loop catch up at that instant.
    func stall(for duration: Duration) {
        self.loop.set(self.now + duration.timerNanoseconds!)
        while self.core.runDue() == .min {}
    }
}
