import PreciseTimer
import PreciseTimerTesting
import Testing

/// `withTimeout` and `withDeadline` on both real services: the value before the deadline, the
/// operation's task cancelled at it (never before), `.timedOut` only once the operation returned,
/// one timer per call, and the caller's cancellation passed on.
@Suite("Async: withTimeout and withDeadline")
struct TimeoutTests {
    private struct Failure: Error, Equatable {}

    @Test(
        "an operation that returns in time gives its value, and its timer is gone", arguments: Implementation.allCases)
    func returnsInTime(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        // A limit no run reaches, however starved the cooperative pool (the operation is a task).
        let value = try await timers.withTimeout(.seconds(600)) { 42 }
        #expect(value == 42)
        #expect(timers.scheduledCount == 0, "the limit's timer is cancelled with the operation's end")
    }

    @Test("an operation's own error comes through as it is", arguments: Implementation.allCases)
    func passesErrorsOn(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        await #expect(throws: Failure.self) {
            try await timers.withTimeout(.seconds(600)) { () async throws -> Int in throw Failure() }
        }
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "a slow operation is cancelled at the deadline, never before, and the call throws .timedOut",
        arguments: Implementation.allCases)
    func timesOut(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let start = timers.now
        let cancelledAt = Box<Int64>(0)
        let wasCancelled = Box(false)
        let error = await #expect(throws: PreciseTimerError.self) {
            try await timers.withTimeout(.milliseconds(50)) { () async throws -> Int in
                try? await Task.sleep(for: .seconds(600))
                cancelledAt.value = timers.now.nanoseconds
                wasCancelled.value = Task.isCancelled
                try Task.checkCancellation()
                return 1
            }
        }
        #expect(error?.code == .timedOut)
        // The sleep ended because the timeout cancelled it, not by itself (600 s away).
        #expect(wasCancelled.value)
        let cancelled = Duration.nanoseconds(cancelledAt.value - start.nanoseconds)
        #expect(cancelled >= .milliseconds(50), "cancelled \(cancelled) after the start: early")
        // The time also counts waits for a cooperative thread: under ThreadSanitizer beside a
        // build, with the whole suite started at once on two cores, 74 s. Checked far below 600 s.
        #expect(cancelled < .seconds(300))
        #expect(timers.scheduledCount == 0)
    }

    @Test(
        "an operation that ignores cancellation runs to its end; .timedOut comes after it, never before",
        arguments: Implementation.allCases)
    func waitsForTheOperation(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let returned = Box(false)
        let error = await #expect(throws: PreciseTimerError.self) {
            try await timers.withTimeout(.milliseconds(10)) { () async -> Int in
                // Not cancellable: a spin on the clock, well past the deadline.
                let end = timers.now.nanoseconds + 200_000_000
                while timers.now.nanoseconds < end { await Task.yield() }
                returned.value = true
                return 7
            }
        }
        #expect(error?.code == .timedOut)
        #expect(returned.value, ".timedOut was thrown before the operation returned")
    }

    @Test(
        "withDeadline: a deadline already past cancels the operation as it starts", arguments: Implementation.allCases)
    func pastDeadline(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let error = await #expect(throws: PreciseTimerError.self) {
            try await timers.withDeadline(timers.now.advanced(by: .seconds(-1))) { () async throws -> Int in
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        #expect(error?.code == .timedOut)
    }

    @Test(
        "cancelling the caller cancels the operation, which ends before any deadline",
        arguments: Implementation.allCases)
    func callerCancellation(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let started = Recorder<Bool>()
        let caller = Task {
            try await timers.withTimeout(.seconds(600)) { () async throws -> Int in
                started.append(true)
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        await started.wait(forCount: 1, timeout: .seconds(120))
        caller.cancel()
        let outcome = await caller.result
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(timers.scheduledCount == 0)
    }

    @Test("a bad limit throws before the operation runs", arguments: Implementation.untimed)
    func badInput(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ran = Box(false)
        let error = await #expect(throws: PreciseTimerError.self) {
            try await timers.withTimeout(.seconds(-1)) { ran.value = true }
        }
        #expect(error?.code == .invalidDelay)
        #expect(!ran.value)
        timers.shutdown()
        let closed = await #expect(throws: PreciseTimerError.self) {
            try await timers.withTimeout(.seconds(1)) { ran.value = true }
        }
        #expect(closed?.code == .shutDown)
        #expect(!ran.value)
    }
}

/// A value shared between a test and the operation it bounds.
private final class Box<Value: Sendable>: Sendable {
    private let storage: SemaphoreGuarded<Value>

    init(_ value: Value) { self.storage = SemaphoreGuarded(value) }

    var value: Value {
        get { self.storage.withLock { $0 } }
        set { self.storage.withLock { $0 = newValue } }
    }
}
