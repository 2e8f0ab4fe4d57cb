import PreciseTimerCore
import PreciseTimerTesting
import Synchronization
import Testing

/// A handle carries its node's address (``TimerHandle/location``), so a cancel, reschedule or
/// pause by handle finds the node by identity. The address is a hint: identity is still the ID and
/// the generation, and a location at which another timer now lives (its node at a reused address)
/// ends, moves or pauses nothing.
@Suite("A handle's location")
struct HandleLocationTests {
    @Test("a scheduled timer's handle has a location; equality and hashing ignore it")
    func locationIsNotIdentity() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let named = try timers.scheduleTimer(.after(.seconds(1)), id: "job") { _ in }
        let generated = try timers.scheduleTimer(.after(.seconds(1))) { _ in }
        for handle in [named, generated] {
            #expect(handle.location != 0 && handle.location % 16 == 0, "\(handle)")
            let plain = TimerHandle(id: handle.id, generation: handle.generation)
            #expect(plain.location == 0)
            #expect(plain == handle && plain.hashValue == handle.hashValue)
            #expect(Set([plain, handle]).count == 1)
        }
        #expect(named != generated)
    }

    @Test("a generated ID is built from the generation when read; equality and hashing still compare IDs")
    func generatedIDNotStored() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        let ticks = Mutex<[TimerHandle]>([])
        let handle = try timers.scheduleTimer(.after(.seconds(1))) { tick in ticks.withLock { $0.append(tick.handle) } }
        let generation = handle.generation
        #expect(handle.id.rawValue == "timer-\(generation)" && handle.id.isGenerated)
        #expect(handle.description == "timer-\(generation)#\(generation)")
        let spelled = TimerHandle(id: TimerID("timer-\(generation)"), generation: generation)
        #expect(spelled == handle && spelled.hashValue == handle.hashValue)
        #expect(spelled.id == handle.id)
        // Not the generated ID of this generation: kept as given, and a different timer.
        for other in [TimerID("timer-0\(generation)"), TimerID("timer-\(generation + 1)"), TimerID("job")] {
            let handleOfOther = TimerHandle(id: other, generation: generation)
            #expect(handleOfOther.id == other)
            #expect(handleOfOther != handle, "\(other)")
        }
        #expect(TimerHandle(id: "timer-0", generation: 0).id == "timer-0")
        try timers.advance(by: .seconds(1))
        let fired = ticks.withLock { $0 }
        #expect(fired == [handle])
        #expect(fired.first?.id == handle.id)
    }

    @Test("a tick's handle carries its timer's location, so a handler that cancels itself needs no look-up")
    func tickHandleHasLocation() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        for id: TimerID? in ["job", nil] {
            let seen = Mutex<[TimerHandle]>([])
            let handle = try timers.scheduleTimer(.every(.seconds(1)), id: id) { tick in
                seen.withLock { $0.append(tick.handle) }
                #expect(timers.cancel(tick.handle))
            }
            try timers.advance(by: .seconds(3))
            let handles = seen.withLock { $0 }
            #expect(handles == [handle], "\(String(describing: id))")
            #expect(handles.first?.location == handle.location)
            #expect(timers.scheduledCount == 0)
        }
        // A tick made with the public initializer has no location: its handle is looked up by ID.
        let zero = MonotonicInstant(nanoseconds: 0)
        let made = Tick(id: "job", count: 1, missed: 0, scheduledAt: zero, firedAt: zero, generation: 7)
        #expect(made.handle.location == 0 && made.handle == TimerHandle(id: "job", generation: 7))
    }

    /// The address of a cancelled timer's node is reused by the next one (as malloc does), under
    /// the same chosen ID or a new generated one: made here by giving the old handle the new
    /// node's address.
    @Test("a handle whose location now holds a newer timer under its ID leaves that timer alone")
    func reusedAddress() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        for id: TimerID? in ["job", nil] {
            let old = try timers.scheduleTimer(.after(.seconds(1)), id: id) { _ in }
            #expect(timers.cancel(old))
            // A chosen ID is taken again; a generated one never is, so the stale handle keeps its own.
            let current = try timers.scheduleTimer(.after(.seconds(2)), id: id) { _ in }
            let stale = TimerHandle(id: old.id, generation: old.generation, location: current.location)
            let deadline = try #require(timers.deadline(of: current.id))

            #expect(!timers.cancel(stale))
            #expect(try !timers.core.reschedule(stale, at: timers.now.advanced(by: .seconds(9))))
            #expect(!timers.core.pause(stale))
            #expect(timers.deadline(of: current.id) == deadline)
            #expect(!timers.isPaused(current.id))
            #expect(timers.core.invariantViolations().isEmpty)
            #expect(timers.cancel(current))
            #expect(!timers.cancel(current))
        }
    }

    @Test("a location at which no timer of this service lives ends nothing, and the ID path still works")
    func foreignLocation() throws {
        let timers = TestTimerService()
        let other = TestTimerService()
        defer {
            timers.shutdown()
            other.shutdown()
        }
        let mine = try timers.scheduleTimer(.after(.seconds(1)), id: "job") { _ in }
        let theirs = try other.scheduleTimer(.after(.seconds(1)), id: "job") { _ in }
        #expect(mine.generation == theirs.generation)  // Both services' first timer.
        // Another service's handle names another timer, even with the same ID and generation.
        #expect(!timers.cancel(theirs))
        #expect(timers.isScheduled("job"))
        // A handle without a location (built from its ID and generation) is looked up by ID.
        #expect(timers.cancel(TimerHandle(id: mine.id, generation: mine.generation)))
        #expect(!timers.isScheduled("job"))
        #expect(other.cancel(theirs))
    }

    /// Many timers, chosen and generated IDs, cancelled by handle in random order while the
    /// shards' tables grow and shrink: each cancel by handle ends its timer exactly once.
    @Test("cancels by handle in random order end each timer once, through growth and shrinking")
    func randomCancels() throws {
        let timers = TestTimerService()
        defer { timers.shutdown() }
        var random = SplitMix(seed: 0x10CA7E)
        var handles: [TimerHandle] = []
        for index in 0..<20_000 {
            let id: TimerID? = index % 3 == 0 ? TimerID("session-\(index)") : nil
            let delay = Duration.milliseconds(Int.random(in: 1...60_000, using: &random))
            handles.append(try timers.scheduleTimer(.after(delay), id: id) { _ in })
        }
        handles.shuffle(using: &random)
        for (index, handle) in handles.enumerated() {
            #expect(timers.cancel(handle), "\(handle)")
            #expect(!timers.cancel(handle), "\(handle)")
            if index % 4_000 == 0 { #expect(timers.core.invariantViolations().isEmpty) }
        }
        #expect(timers.scheduledCount == 0)
        #expect(timers.core.invariantViolations().isEmpty)
    }
}
