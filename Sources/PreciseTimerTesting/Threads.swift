import Glibc
import PreciseTimerCore

/// Runs `body(index)` on `count` threads of its own (not Dispatch's pool, which would run the
/// bodies a few at a time on a 2-core machine) and returns once all of them have returned.
///
/// Blocks the calling thread: call it from a Dispatch queue, never from a Swift-concurrency task.
package func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { index in
        switch PosixThread.start(detached: false, { body(index) }) {
        case .success(let thread): return thread
        case .failure(let error): preconditionFailure("pthread_create failed: \(error.code)")
        }
    }
    for thread in threads {
        pthread_join(thread, nil)
    }
}

/// Runs `body` on a new detached thread of its own and returns at once.
///
/// For test orchestration that blocks (joins worker threads, waits on semaphores): on Linux,
/// Dispatch's global queues share their threads with Swift concurrency's cooperative pool, so
/// blocking one of them for seconds starves every `await` in the process.
package func detachThread(_ body: @escaping @Sendable () -> Void) {
    if case .failure(let error) = PosixThread.start(detached: true, body) {
        preconditionFailure("pthread_create failed: \(error.code)")
    }
}
