import PreciseTimerCore
import PreciseTimerTesting
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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

    @Test("contended, callers that spin and callers that sleep still enter one at a time")
    func contendedCallersEnterOneAtATime() async {
        // Each section reads, yields and writes back: a second caller inside at the same time
        // would lose an increment. Every 64th section outlasts the spin (a few hundred
        // microseconds), so waiters also reach the semaphore's sleep and are woken from it.
        let guarded = SemaphoreGuarded((total: 0, inside: 0, overlaps: 0))
        let threads = 4
        let sections = 2_000
        let finished = SemaphoreGuarded(false)
        // Threads of their own, joined off the cooperative pool (see `runOnThreads`).
        detachThread {
            runOnThreads(threads) { _ in
                for index in 0..<sections {
                    guarded.withLock { state in
                        state.inside += 1
                        if state.inside != 1 { state.overlaps += 1 }
                        let total = state.total
                        if index % 64 == 0 { usleep(300) } else { sched_yield() }
                        state.total = total + 1
                        state.inside -= 1
                    }
                }
            }
            finished.withLock { $0 = true }
        }
        #expect(await Polling.until { finished.withLock { $0 } })
        let state = guarded.withLock { $0 }
        #expect(state.total == threads * sections)
        #expect(state.overlaps == 0)
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
