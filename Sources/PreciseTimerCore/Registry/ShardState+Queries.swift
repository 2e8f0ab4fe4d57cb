extension ShardState {
    /// The next deadline of the timer under `id` (see ``TimerCore/deadline(of:)``), or `nil`
    /// when there is none to tell: no such timer, or a paused one.
    package func nextDeadline(of id: TimerID, hash: UInt64) -> Int64? {
        guard let node = self.node(id, hash: hash) else { return nil }
        switch node.state {
        case .pending, .taken:
            return node.deadline
        case .running:
            // The call answers `deadline`; unless moved meanwhile, the grid's next point follows.
            if node.isRescheduled { return node.deadline }
            return saturatingAdd(node.deadline, node.interval)
        case .paused, .ended:
            return nil
        }
    }
}
