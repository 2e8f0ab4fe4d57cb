import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// The registry's lock knows its owner in debug builds, so the ground rules fail loudly.
@Suite("Lock owner")
struct LockOwnerTests {
    @Test("held and not held are told apart on the holding thread")
    func heldAndNotHeld() {
        let guarded = SemaphoreGuarded(0)
        guarded.assertNotHeld()
        guarded.withLock { value in
            guarded.assertHeld()
            value += 1
        }
        guarded.assertNotHeld()
        #expect(guarded.withLock { $0 } == 1)
    }

    #if DEBUG
        @Test(
            "taking the lock again on its own thread stops with a message instead of deadlocking",
            .disabled(if: Sanitizers.threadSanitizerIsActive, "exit tests fork: skipped under ThreadSanitizer"))
        func reentryStops() async {
            await #expect(processExitsWith: .failure) {
                let guarded = SemaphoreGuarded(0)
                guarded.withLock { _ in guarded.withLock { $0 += 1 } }
            }
        }

        @Test(
            "calling out with the lock held stops (no user code under a lock)",
            .disabled(if: Sanitizers.threadSanitizerIsActive, "exit tests fork: skipped under ThreadSanitizer"))
        func userCodeUnderLockStops() async {
            await #expect(processExitsWith: .failure) {
                let guarded = SemaphoreGuarded(0)
                guarded.withLock { _ in guarded.assertNotHeld() }
            }
        }
    #endif
}
