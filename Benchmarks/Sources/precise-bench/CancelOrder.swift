/// Which pending timer each schedule + cancel pair cancels.
enum CancelOrder: String, CaseIterable, Sendable {
    /// The oldest pending one (it also has the earliest deadline).
    case fifo = "FIFO"
    /// A pending one drawn from a seeded shuffle, so each cancel hits a random heap position.
    case random

    /// How the peers section names this order's figures (`fifo.cpu`, `random.handle.wall`).
    var figurePrefix: String {
        switch self {
        case .fifo: "fifo"
        case .random: "random"
        }
    }

    /// The slots to cancel, in order: `count` of `0..<pending`. Drawn before the timed loop.
    func victims(count: Int, pending: Int, seed: UInt64) -> [Int] {
        precondition(count <= pending, "more cancels than pending timers")
        switch self {
        case .fifo:
            return Array(0..<count)
        case .random:
            var generator = SeededGenerator(seed: seed)
            return Array((0..<pending).shuffled(using: &generator).prefix(count))
        }
    }
}
