/// A small, fast, seedable generator (SplitMix64) for the package's tests and stress tools, so a
/// failing run can be replayed from its seed.
package struct SplitMix: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) { self.state = seed }

    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value drawn evenly enough from `range` for tests (a modulo: a slight bias toward the low
    /// values, which no test here depends on).
    package mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(self.next() % UInt64(range.count))
    }
}
