#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs blocking work on a new, detached thread and awaits its end, so that no thread of Swift
/// concurrency's cooperative pool (one per core) blocks on it.
///
/// A Dispatch queue would do on Darwin, but on Linux the cooperative pool and Dispatch's global
/// queues share libdispatch's worker threads; a thread of our own is unambiguous, and shutting a
/// service down is rare enough that creating one costs nothing that matters.
enum DetachedThread {
    /// The work and the continuation it resumes, handed to the thread through `void *`.
    private final class Job: Sendable {
        let work: @Sendable () -> Void
        let done: CheckedContinuation<Void, Never>

        init(work: @escaping @Sendable () -> Void, done: CheckedContinuation<Void, Never>) {
            self.work = work
            self.done = done
        }
    }

    /// Runs `work` on a new thread and returns when it has returned. If no thread can be created
    /// (out of threads or memory), runs it on the calling thread instead: blocking one cooperative
    /// thread once is better than never shutting down.
    static func run(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // +1 handed to the thread, released by the thread (takeRetainedValue) exactly once;
            // on failure to create it, taken back here.
            let job = Unmanaged.passRetained(Job(work: work, done: done))
            var attributes = pthread_attr_t()
            pthread_attr_init(&attributes)
            pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
            defer { pthread_attr_destroy(&attributes) }
            var thread = pthread_t()
            let result = pthread_create(
                &thread, &attributes,
                { argument in
                    guard let argument else { return nil }
                    let job = Unmanaged<Job>.fromOpaque(argument).takeRetainedValue()
                    job.work()
                    job.done.resume()
                    return nil
                },
                job.toOpaque())
            if result != 0 {
                let job = job.takeRetainedValue()
                job.work()
                job.done.resume()
            }
        }
    }
}
