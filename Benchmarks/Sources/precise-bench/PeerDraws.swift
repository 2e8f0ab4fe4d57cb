/// The seeded draws of the peers section, made identically in Swift, Go and Rust (and handed to
/// the C rows as arrays), so every peer schedules the same delays and cancels and touches the same
/// timers in the same order.
///
/// From one ``SeededGenerator`` (SplitMix64): first every timer's delay, an hour plus
/// `next() % 60 000` ms (the `pending` timers of the fill, then one per pair), then a Fisher–Yates
/// permutation of `0..<pending` (for `i` from `pending − 1` down to 1, swap `i` with
/// `next() % (i + 1)`). FIFO victims are `0..<pairs` (oldest first); random victims are the
/// permutation's first `pairs`; the touched timers are its next `touches` (never a victim).
/// ``check`` folds everything (`h = h·31 + x`, wrapping, then mod 1 000 000 007), and every peer
/// reports its own: the section says so when they differ.
struct PeerDraws: Sendable {
    /// Each timer's delay in milliseconds: the fill's, then one per pair.
    let delaysMs: [UInt32]
    /// Which fill timer each pair cancels.
    let victims: [Int32]
    /// Which fill timers the touch pushes later (to their delay plus an hour).
    let touched: [Int32]
    /// The fold of every draw.
    let check: UInt64

    /// Draws for `pending` timers, `pairs` pairs in `order` and `touches` touches.
    init(order: CancelOrder, pending: Int, pairs: Int, touches: Int, seed: UInt64) {
        precondition(pairs + touches <= pending, "more victims and touches than pending timers")
        var generator = SeededGenerator(seed: seed)
        let delaysMs = (0..<(pending + pairs)).map { _ in UInt32(3_600_000 + generator.next() % 60_000) }
        var permutation = Array(Int32(0)..<Int32(pending))
        var i = pending - 1
        while i >= 1 {
            let j = Int(generator.next() % UInt64(i + 1))
            permutation.swapAt(i, j)
            i -= 1
        }
        let victims = order == .fifo ? Array(Int32(0)..<Int32(pairs)) : Array(permutation[0..<pairs])
        let touched = Array(permutation[pairs..<(pairs + touches)])
        var check: UInt64 = 0
        for value in delaysMs { check = check &* 31 &+ UInt64(value) }
        for value in victims + touched { check = check &* 31 &+ UInt64(value) }
        self.delaysMs = delaysMs
        self.victims = victims
        self.touched = touched
        self.check = check % 1_000_000_007
    }
}
