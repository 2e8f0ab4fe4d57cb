#ifndef CLIMIT_MEASURE_H
#define CLIMIT_MEASURE_H

// The clock and CPU reads every C row of the cost and peers sections uses (not part of the
// module's interface: it lives beside the sources, not in include/).

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

/// CLOCK_MONOTONIC in nanoseconds (the clock every deadline of the benchmark is on).
static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/// User + system CPU time of the whole process (every thread), from getrusage, in nanoseconds.
static inline int64_t process_cpu_ns(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return ((int64_t)usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000
        + ((int64_t)usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
}

#endif
