import Glibc

/// What the test process runs under, for tests that must adapt to a sanitizer.
package enum Sanitizers {
    /// Whether ThreadSanitizer's runtime is in this process. A child forked from a multi-threaded
    /// process under ThreadSanitizer can hang inside the runtime's own locks (seen: the defect-5
    /// fork test's child killed by its watchdog in 1 of 4 whole-suite TSan runs with a build
    /// beside it), which says nothing about the code under test: fork and exit tests run in the
    /// plain and the AddressSanitizer runs, and are skipped under this one.
    package static let threadSanitizerIsActive: Bool = dlsym(nil, "__tsan_init") != nil

    /// Whether ThreadSanitizer's or AddressSanitizer's runtime is in this process: every process
    /// a test spawns from this build is instrumented too, and costs far more to start.
    package static let anyIsActive: Bool = threadSanitizerIsActive || dlsym(nil, "__asan_init") != nil
}
