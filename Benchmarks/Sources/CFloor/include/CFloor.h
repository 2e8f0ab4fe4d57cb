#ifndef CFLOOR_H
#define CFLOOR_H

#include <stdint.h>

// The kernel floor: loops with nothing between the kernel and the measurement (no event loop,
// no queue, no allocation), each waking at start + k·interval on CLOCK_MONOTONIC for
// k = 1...count and writing (wake-up time − deadline) in nanoseconds to lateness_ns[k − 1].
// Each returns 0 on success, −1 with errno set on failure.

/// clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) with the thread's timer slack set to 1 ns for
/// the run (the default 50 µs would pad every sleep). The benchmark's reference floor.
int cfloor_nanosleep_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns);

/// A blocking read(2) of a timerfd armed at absolute deadlines (timerfds ignore timer slack).
int cfloor_timerfd_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns);

/// epoll_wait(2) on a timerfd armed at absolute deadlines: the sleep an epoll event loop built
/// with libevent's EVENT_BASE_FLAG_PRECISE_TIMER does, without the loop.
int cfloor_epoll_timerfd_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns);

#endif
