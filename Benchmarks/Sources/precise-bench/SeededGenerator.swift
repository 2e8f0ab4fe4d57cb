/// SplitMix64: a seeded generator, so that "random order" is the same order in every run and
/// costs nothing inside the timed loops (orders are drawn before timing starts).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    /// Creates a generator whose sequence depends only on `seed`.
    init(seed: UInt64) {
        self.state = seed
    }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
