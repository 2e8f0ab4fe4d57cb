/// What ``TimerCore`` needs from whatever drives it: a clock, and a doorbell to ring when the
/// loop must look at the heap again. The libevent engine's `eventfd` in production, a manual
/// clock in the virtual-time service and in tests.
package protocol TimerDoorbell: AnyObject, Sendable {
    /// The current time in nanoseconds on the driver's clock.
    func now() -> Int64
    /// Asks the loop to look at the earliest deadline again (it sleeps past a new one).
    /// Called without the registry lock held; must not block.
    func wake()
}
