import Glibc

/// What the test process runs under.
enum Sanitizers {
    /// Whether ThreadSanitizer's runtime is in this process. A child forked from a multi-threaded
    /// process under ThreadSanitizer can hang inside the runtime's own locks (seen: the defect-5
    /// fork test's child killed by its watchdog in 1 of 4 whole-suite TSan runs with a build
    /// beside it), which says nothing about the code under test: the fork tests run in the plain
    /// and the AddressSanitizer runs, and are skipped under this one.
    static let threadSanitizerIsActive: Bool = dlsym(nil, "__tsan_init") != nil
}
