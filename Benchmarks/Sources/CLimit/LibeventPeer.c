#define _GNU_SOURCE
#include "CLimitLibevent.h"
#include "measure.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

// See CLimitLibevent.h. Plain libevent 2.1: nothing between the caller and event_add/event_del.

static struct timeval timeval_ns(int64_t ns) {
    if (ns < 0) ns = 0;
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000), .tv_usec = (suseconds_t)(ns % 1000000000 / 1000)};
    return tv;
}

static struct timeval timeval_ms(uint64_t ms) {
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000 * 1000)};
    return tv;
}

static int64_t resident_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "r");
    if (file == NULL) return 0;
    long size = 0, resident = 0;
    int fields = fscanf(file, "%ld %ld", &size, &resident);
    fclose(file);
    return fields == 2 ? (int64_t)resident * sysconf(_SC_PAGESIZE) : 0;
}

static struct event_base *precise_base(void) {
    struct event_config *config = event_config_new();
    if (config == NULL) return NULL;
    event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(config);
    event_config_free(config);
    return base;
}

/// A cost-run timer's callback: never called (every timer is an hour away and the loop never runs).
static void never_called(evutil_socket_t fd, short what, void *context) {
    (void)fd;
    (void)what;
    (void)context;
    abort();
}

int clibevent_cost_run(
    int pending, int pairs, const uint32_t *delays_ms, const int32_t *victims, int touches, const int32_t *touched,
    clibevent_cost_result *result) {
    if (pending <= 0 || pairs < 0 || pairs > pending || touches < 0 || (touches > 0 && touched == NULL)) return -1;
    struct event_base *base = precise_base();
    size_t total = (size_t)pending + (size_t)pairs;
    struct event **events = malloc(total * sizeof *events);
    if (base == NULL || events == NULL) {
        if (base != NULL) event_base_free(base);
        free(events);
        return -1;
    }
    // The caller's array is touched before the baseline: its pages are not libevent's.
    memset(events, 0, total * sizeof *events);
    int failures = 0;

    int64_t rss0 = resident_bytes(), cpu0 = process_cpu_ns(), t0 = now_ns();
    for (int i = 0; i < pending; i++) {
        struct timeval tv = timeval_ms(delays_ms[i]);
        events[i] = evtimer_new(base, never_called, NULL);
        if (events[i] == NULL || evtimer_add(events[i], &tv) != 0) failures++;
    }
    int64_t fill_wall = now_ns() - t0, fill_cpu = process_cpu_ns() - cpu0;
    int64_t growth = resident_bytes() - rss0;

    int64_t cpu1 = process_cpu_ns(), t1 = now_ns();
    for (int k = 0; k < pairs; k++) {
        struct timeval tv = timeval_ms(delays_ms[pending + k]);
        struct event *fresh = evtimer_new(base, never_called, NULL);
        if (fresh == NULL || evtimer_add(fresh, &tv) != 0) failures++;
        events[pending + k] = fresh;
        int32_t victim = victims[k];
        if (victim < 0 || victim >= pending || events[victim] == NULL) {
            failures++;
            continue;
        }
        if (event_del(events[victim]) != 0) failures++;
        event_free(events[victim]);
        events[victim] = NULL;
    }
    int64_t wall = now_ns() - t1, cpu = process_cpu_ns() - cpu1;

    int64_t touch_wall = 0, touch_cpu = 0;
    if (touches > 0) {
        int64_t cpu2 = process_cpu_ns(), t2 = now_ns();
        for (int k = 0; k < touches; k++) {
            int32_t index = touched[k];
            if (index < 0 || index >= pending || events[index] == NULL) {
                failures++;
                continue;
            }
            struct timeval tv = timeval_ms((uint64_t)delays_ms[index] + 3600000);
            if (evtimer_add(events[index], &tv) != 0) failures++;
        }
        touch_wall = now_ns() - t2;
        touch_cpu = process_cpu_ns() - cpu2;
    }
    int pending_count = 0;
    for (size_t i = 0; i < total; i++) {
        if (events[i] != NULL && evtimer_pending(events[i], NULL)) pending_count++;
    }
    if (pending_count != pending) failures++;
    // The run's process exits right after reporting: a million event_free calls measure nothing.
    if (failures != 0) return -1;
    *result = (clibevent_cost_result){
        .fill = (double)fill_wall / pending,
        .fill_cpu = (double)fill_cpu / pending,
        .bytes = (double)growth / pending,
        .wall = pairs > 0 ? (double)wall / pairs : 0,
        .cpu = pairs > 0 ? (double)cpu / pairs : 0,
        .touch_wall = touches > 0 ? (double)touch_wall / touches : 0,
        .touch_cpu = touches > 0 ? (double)touch_cpu / touches : 0,
    };
    return 0;
}

typedef struct {
    struct event_base *base;
    int count;
    int fired;
    int64_t first;
    int64_t last;
} storm_state;

static void storm_fire(evutil_socket_t fd, short what, void *context) {
    (void)fd;
    (void)what;
    storm_state *state = context;
    int64_t now = now_ns();
    if (++state->fired == 1) state->first = now;
    if (state->fired == state->count) {
        state->last = now;
        event_base_loopbreak(state->base);
    }
}

int clibevent_storm_run(int count, double *first, double *last, double *overrun) {
    if (count <= 0) return -1;
    storm_state state = {.base = precise_base(), .count = count};
    if (state.base == NULL) return -1;
    int64_t deadline = now_ns() + 2000000000;
    for (int i = 0; i < count; i++) {
        struct timeval tv = timeval_ns(deadline - now_ns());
        struct event *event = evtimer_new(state.base, storm_fire, &state);
        if (event == NULL || evtimer_add(event, &tv) != 0) return -1;
    }
    *overrun = (double)(now_ns() - deadline);
    if (event_base_dispatch(state.base) < 0 || state.fired != count) return -1;
    *first = (double)(state.first - deadline);
    *last = (double)(state.last - deadline);
    return 0;
}

typedef struct {
    struct event *event;
    int64_t start;
    int64_t interval;
    int count;
    int k;
    int64_t *lateness;
    int failed;
} lateness_state;

static void lateness_tick(evutil_socket_t fd, short what, void *context) {
    (void)fd;
    (void)what;
    lateness_state *state = context;
    int64_t deadline = state->start + (int64_t)state->k * state->interval;
    state->lateness[state->k - 1] = now_ns() - deadline;
    if (++state->k > state->count) return;  // No event pending: the loop returns.
    // Libevent adds a relative timeout to its cached time of this loop pass; refresh it so the
    // next deadline is start + k·interval, not earlier by this callback's delay.
    event_base_update_cache_time(event_get_base(state->event));
    struct timeval tv = timeval_ns(deadline + state->interval - now_ns());
    if (evtimer_add(state->event, &tv) != 0) state->failed = 1;
}

int clibevent_lateness_run(int64_t interval_ns, int count, int64_t *lateness_ns, int64_t *cpu_ns) {
    if (count <= 0 || interval_ns <= 0) return -1;
    struct event_base *base = precise_base();
    if (base == NULL) return -1;
    lateness_state state = {.interval = interval_ns, .count = count, .k = 1, .lateness = lateness_ns};
    state.event = evtimer_new(base, lateness_tick, &state);
    int64_t cpu0 = process_cpu_ns();
    state.start = now_ns();
    struct timeval tv = timeval_ns(interval_ns);
    int status = -1;
    if (state.event != NULL && evtimer_add(state.event, &tv) == 0 && event_base_dispatch(base) >= 0 && !state.failed
        && state.k > count) {
        status = 0;
    }
    *cpu_ns = process_cpu_ns() - cpu0;
    if (state.event != NULL) event_free(state.event);
    event_base_free(base);
    return status;
}
