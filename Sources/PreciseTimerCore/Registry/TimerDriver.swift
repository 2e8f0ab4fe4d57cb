/// What ``TimerCore`` needs from whatever drives it: a clock, and a doorbell to ring when the
/// loop must look at the heap again. The libevent engine's `eventfd` in production, a manual
/// clock in the virtual-time service and in tests.
package protocol TimerDriver: AnyObject, Sendable {
    /// The current time in nanoseconds on the driver's clock.
    func now() -> Int64
    /// Asks the loop to look at the earliest deadline again (it sleeps past a new one).
    /// Called without the registry lock held; must not block.
    func wake()
    /// The wall clock (`CLOCK_REALTIME`), nanoseconds since the Unix epoch. Read only for
    /// wall-clock timers; the real clock by default, a virtual one in the virtual-time service.
    func wallClockNow() -> Int64
    /// The continuous clock (`CLOCK_BOOTTIME`: `now()` plus the time spent suspended), in
    /// nanoseconds. Read only for ``TimerOptions/ClockKind/continuous`` timers.
    func continuousNow() -> Int64
}

extension TimerDriver {
    package func wallClockNow() -> Int64 { wallClockNanoseconds() }
    package func continuousNow() -> Int64 { continuousNanoseconds() }
}
