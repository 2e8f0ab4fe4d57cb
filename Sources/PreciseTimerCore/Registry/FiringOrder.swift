/// The firing order of the whole package, written once: earlier deadlines first, and at equal
/// deadlines the earlier scheduled (lower sequence) first. The heap's entries and the loop's
/// view of the shards' heads both compare with it.
enum FiringOrder {
    @inline(__always)
    static func precedes(_ lhs: (deadline: Int64, sequence: UInt64), _ rhs: (deadline: Int64, sequence: UInt64)) -> Bool
    {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.sequence < rhs.sequence
    }
}
