import Dispatch
import Synchronization

/// One shard of the registry: its semaphore-guarded state, and what a caller reads of it
/// without the lock (the table's place for a prefetch, whether it holds bound timers).
///
/// Nothing here is written by an ordinary call: every caller thread reads this object for each
/// call, and a field written per call (as its timer count was) moves the line between their
/// cores. ``TimerCore/scheduledCount`` takes each shard's lock instead.
final class TimerShard: Sendable {
    private let registry: SemaphoreGuarded<ShardState>
    /// How many of its timers are bound to another clock, published as it changes: the core
    /// skips shards without any when it rebases or looks for the earliest bound deadline.
    let boundCount = Atomic<Int>(0)
    /// The ID table's slots (``TimerTable/slotLayout``), published like ``count`` for
    /// ``slotAddress(hash:)``: a hint only, never dereferenced, so a stale pair is harmless.
    private let slotBase = Atomic<UInt>(0)
    private let slotMask = Atomic<UInt>(0)
    /// The core's count of changes to bound timers (see ``TimerCore/boundVersion``).
    private let boundChanges: BoundChanges

    init(clocks: any TimerDriver, boundChanges: BoundChanges) {
        self.registry = SemaphoreGuarded(ShardState(clocks: clocks))
        self.boundChanges = boundChanges
    }

    /// The address of the table slot where a look-up of `hash` starts, read without the lock,
    /// for prefetching only (it may be stale or torn: never dereference it).
    @inline(__always)
    func slotAddress(hash: UInt64) -> UInt {
        TimerTable.slotAddress(
            hash: hash, in: (self.slotBase.load(ordering: .relaxed), self.slotMask.load(ordering: .relaxed)))
    }

    /// Debug builds: stops if the calling thread holds this shard's lock (see
    /// ``SemaphoreGuarded/assertNotHeld(file:line:)``); called before a handler or a schedule runs.
    @inline(__always)
    func assertNotHeld(file: StaticString = #fileID, line: UInt = #line) {
        self.registry.assertNotHeld(file: file, line: line)
    }

    /// Runs `body` under the shard's semaphore, then publishes what changed of the table's place
    /// and of the bound timers.
    @inline(__always)
    func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout ShardState) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try self.registry.withLock { (registry) throws(Failure) -> Result in
            let boundVersion = registry.boundVersion
            // Not a `defer`: one in this generic closure was emitted as a generic function of
            // its own, called on every registry call.
            let result: Result
            do throws(Failure) {
                result = try body(&registry)
            } catch {
                self.publish(registry, since: boundVersion)
                throw error
            }
            self.publish(registry, since: boundVersion)
            return result
        }
    }

    /// Publishes what a locked call changed: the table's place, and the count of bound timers
    /// if ``ShardState/boundVersion`` moved past `boundVersion`.
    @inline(__always)
    private func publish(_ registry: borrowing ShardState, since boundVersion: UInt64) {
        let slots = registry.timers.slotLayout
        if self.slotBase.load(ordering: .relaxed) != slots.base {
            self.slotBase.store(slots.base, ordering: .relaxed)
            self.slotMask.store(slots.mask, ordering: .relaxed)
        }
        if registry.boundVersion != boundVersion {
            self.boundCount.store(registry.boundCount, ordering: .relaxed)
            self.boundChanges.value.add(1, ordering: .releasing)
        }
    }
}

/// The count behind ``TimerCore/boundVersion``, shared by the shards.
final class BoundChanges: Sendable {
    let value = Atomic<UInt64>(0)
}
