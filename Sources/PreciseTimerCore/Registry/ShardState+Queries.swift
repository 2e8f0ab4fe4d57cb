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

    /// The next wall-clock occurrence of the timer under `id` (see
    /// ``TimerCore/wallClockDeadline(of:)``): a wall-clock one-shot's instant, a calendar timer's
    /// next occurrence when it is known.
    package func nextWallClockDeadline(of id: TimerID, hash: UInt64) -> Int64? {
        guard let node = self.node(id, hash: hash), let clock = node.clock, clock.kind == .wall else { return nil }
        switch node.state {
        case .pending, .taken:
            guard clock.isCalendar else { return clock.anchor }
            switch clock.phase {
            case .occurrence, .stepped: return clock.anchor
            case .moved, .resumed: return nil  // Asked of the schedule when the timer comes due.
            }
        case .running, .paused, .ended:
            return nil
        }
    }
}
