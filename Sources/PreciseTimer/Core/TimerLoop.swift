/// The seam between the scheduling logic (``TimerCore``) and whatever drives it: the libevent
/// engine in production, a manual driver with `advance(by:)` in tests.
package protocol TimerLoop: AnyObject, Sendable {
    /// The current time in nanoseconds on the loop's clock.
    func now() -> Int64
    /// Asks the loop to look at the earliest deadline again (it sleeps past a new one).
    /// Called without the registry lock held; must not block.
    func wake()
}
