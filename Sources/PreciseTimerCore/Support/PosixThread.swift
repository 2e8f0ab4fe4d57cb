import Glibc

/// Threads of the package's own, outside Dispatch's pool (which Swift concurrency shares on
/// Linux): the libevent engine's loop thread, and the test helpers' worker threads.
package enum PosixThread {
    /// Starts `body` on a new thread: the one trampoline of the package.
    ///
    /// - Parameters:
    ///   - detached: Start it detached (nobody joins it), or joinable (join the returned thread).
    ///   - configure: Sets further attributes (scheduling policy, CPU affinity) before the start.
    ///   - body: What the thread runs; released by the thread once it returns.
    /// - Returns: The thread, or `pthread_create`'s error number.
    package static func start(
        detached: Bool, configure: (inout pthread_attr_t) -> Void = { _ in },
        _ body: @escaping @Sendable () -> Void
    ) -> Result<pthread_t, PosixError> {
        // Allocated rather than zero-initialized in Swift: `pthread_attr_init` initializes it.
        let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        defer { attributes.deallocate() }
        pthread_attr_init(attributes)
        defer { pthread_attr_destroy(attributes) }
        if detached { pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        configure(&attributes.pointee)
        // +1 handed to the thread with the box, taken back exactly once by the trampoline (or
        // here, when the thread could not start).
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, attributes,
            { context in
                Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            return .failure(PosixError(status))
        }
        return .success(thread)
    }

    /// An error number from a POSIX call that returns it (`pthread_create`).
    package struct PosixError: Error, Equatable {
        package let code: Int32
        package init(_ code: Int32) { self.code = code }
    }
}

private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
