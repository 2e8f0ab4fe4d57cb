import Glibc

/// What the test process runs under (as `PreciseTimerTests`' helper of the same name).
enum Sanitizers {
    /// Whether ThreadSanitizer's runtime is in this process. A child forked from a multi-threaded
    /// process under ThreadSanitizer can hang inside the runtime's own locks, which says nothing
    /// about the code under test: the exit tests run in the plain and AddressSanitizer runs only.
    static let threadSanitizerIsActive: Bool = dlsym(nil, "__tsan_init") != nil
}
