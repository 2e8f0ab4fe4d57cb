import Glibc

/// Runs `body(index)` on `count` threads of its own (not Dispatch's pool, which would run the
/// bodies a few at a time on a 2-core machine) and returns once all of them have returned.
///
/// Blocks the calling thread: call it from a Dispatch queue, never from a Swift-concurrency task.
package func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { index in
        // +1 handed to the thread, taken back (released) by the thread itself.
        let context = Unmanaged.passRetained(ThreadBody { body(index) }).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
        return thread
    }
    for thread in threads {
        pthread_join(thread, nil)
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}

/// Runs `body` on a new detached thread of its own and returns at once.
///
/// For test orchestration that blocks (joins worker threads, waits on semaphores): on Linux,
/// Dispatch's global queues share their threads with Swift concurrency's cooperative pool, so
/// blocking one of them for seconds starves every `await` in the process.
package func detachThread(_ body: @escaping @Sendable () -> Void) {
    // +1 handed to the thread, taken back (released) by the thread itself.
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { context in
            Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
    pthread_detach(thread)
}
