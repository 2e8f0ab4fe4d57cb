import PreciseTimer
import PreciseTimerTesting

/// Drives the scheduling logic by hand on a ``TestTimerService`` (virtual time): nothing fires
/// until ``advance(by:)``, which moves the clock from deadline to deadline and runs what is due
/// at each, on the calling thread.
final class ManualTimerDriver: Sendable {
    let service = TestTimerService()

    /// The service under test.
    var timers: any TimerService { self.service }

    var now: Int64 { self.service.now.nanoseconds }

    /// Loop wake-ups the service asked for so far.
    var wakes: Int { self.service.wakeUps }

    /// Moves time forward by `duration`, firing every timer at its exact deadline on the way.
    func advance(by duration: Duration) {
        try! self.service.advance(by: duration)
    }

    /// Moves time forward without running anything, as if the loop thread had been blocked,
    /// then lets the loop catch up at that instant.
    func stall(for duration: Duration) {
        self.service.moveClock(to: self.service.now.advanced(byNanoseconds: duration.timerNanoseconds!))
        try! self.service.advance(by: .zero)
    }

    /// From a handler: as if the handler ran until `now + nanoseconds`.
    func runHandler(forNanoseconds nanoseconds: Int64) {
        self.service.moveClock(to: self.service.now.advanced(byNanoseconds: nanoseconds))
    }
}

extension MonotonicInstant {
    func advanced(byNanoseconds nanoseconds: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: self.nanoseconds + nanoseconds)
    }
}
