#ifndef CFLOOR_H
#define CFLOOR_H

#include <stdint.h>

/// The kernel floor: a thread that sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)
/// until start + k·interval and writes (wake-up time − deadline) in nanoseconds for k = 1...count.
/// Nothing between the kernel and the measurement: no event loop, no queue, and timer slack set
/// to 1 ns for the run (the default 50 µs would pad every sleep). Returns 0 on success.
int cfloor_nanosleep_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns);

/// The same with a timerfd armed at absolute deadlines (what an epoll loop with
/// EVENT_BASE_FLAG_PRECISE_TIMER sleeps on). Returns 0 on success.
int cfloor_timerfd_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns);

#endif
