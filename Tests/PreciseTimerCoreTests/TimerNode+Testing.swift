import PreciseTimerCore

extension TimerNode {
    /// A node named `id` and placed in its shard, built as a service builds it: named by its
    /// number (that number its sequence) for a generated ID in its canonical form, a
    /// ``NamedTimerNode`` storing the ID otherwise.
    static func make(
        id: TimerID, deadline: Int64, interval: Int64, options: TimerOptions, tolerance: Int64 = 0,
        handler: @escaping @Sendable (Tick) -> Void
    ) -> TimerNode {
        let node: TimerNode
        if let number = id.canonicalGeneratedNumber {
            node = TimerNode(
                generatedNumber: number, deadline: deadline, interval: interval, options: options,
                tolerance: tolerance, handler: handler)
        } else {
            node = NamedTimerNode(
                id: id, deadline: deadline, interval: interval, options: options, tolerance: tolerance,
                handler: handler)
        }
        node.place(hash: id.tableHash)
        return node
    }
}

extension TimerTable {
    /// Removes the node under `id` in the registry's two steps (``slot(of:hash:)``,
    /// ``remove(atSlot:)``); returns it (nil if there was none).
    func remove(_ id: TimerID, hash: UInt64) -> TimerNode? {
        self.slot(of: id, hash: hash).map { self.remove(atSlot: $0.index) }
    }
}
