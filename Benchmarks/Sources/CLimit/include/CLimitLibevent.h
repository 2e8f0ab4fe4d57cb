#ifndef CLIMIT_LIBEVENT_H
#define CLIMIT_LIBEVENT_H

#include <stdint.h>

// The raw-libevent peer of precise-bench's `peers` section: the work of the other peers done on
// libevent 2.1 directly, as a C daemon would: one event_base built with
// EVENT_BASE_FLAG_PRECISE_TIMER, one `struct event` per timer (evtimer_new + evtimer_add to
// schedule, event_del + event_free to cancel, evtimer_add again to push a pending deadline later),
// everything on the calling thread, no locks (libevent's thread support is not enabled). The
// draws (delays, victims, touched timers) come from the caller, so they are the very ones the
// other peers draw.

/// Figures of one schedule + cancel run, in nanoseconds (bytes for `bytes`).
typedef struct {
    /// Wall and process CPU time to schedule the pending timers, per timer.
    double fill;
    double fill_cpu;
    /// RSS growth (/proc/self/statm) over the fill, per pending timer.
    double bytes;
    /// Wall and process CPU per pair of (schedule a new timer, cancel a victim).
    double wall;
    double cpu;
    /// Wall and process CPU per touch (re-add of a pending timer at a later deadline); 0 without touches.
    double touch_wall;
    double touch_cpu;
} clibevent_cost_result;

/// Schedules `pending` timers at `delays_ms[i]` from now (read per call), then runs `pairs`
/// pairs: schedule timer `pending + k` at `delays_ms[pending + k]`, cancel timer `victims[k]`
/// (distinct, each < pending); then pushes each of the `touches` timers `touched[k]` (pending,
/// distinct) to `delays_ms[touched[k]] + 3 600 000` ms from now. No timer fires (they are an hour
/// away and the loop never runs). Returns 0, or -1 if a call failed or an argument was invalid.
int clibevent_cost_run(
    int pending, int pairs, const uint32_t *_Nonnull delays_ms, const int32_t *_Nonnull victims, int touches,
    const int32_t *_Nullable touched, clibevent_cost_result *_Nonnull result);

/// `count` timers due at one instant 2 s from now (each added with `deadline − now`), then the
/// loop on this thread until the last has run. `first` and `last`: nanoseconds from the deadline
/// to the first and the last callback; `overrun`: how far past the deadline scheduling finished.
int clibevent_storm_run(int count, double *_Nonnull first, double *_Nonnull last, double *_Nonnull overrun);

/// One timer re-armed from its callback at start + k·interval (k = 1...count), `start` read
/// before the first add; lateness_ns[k − 1] = a fresh CLOCK_MONOTONIC read in the callback minus
/// that deadline. `cpu_ns` gets the process CPU time over the run.
int clibevent_lateness_run(int64_t interval_ns, int count, int64_t *_Nonnull lateness_ns, int64_t *_Nonnull cpu_ns);

#endif
