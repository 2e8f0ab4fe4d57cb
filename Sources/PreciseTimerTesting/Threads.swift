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
