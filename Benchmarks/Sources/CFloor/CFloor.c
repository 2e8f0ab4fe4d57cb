#define _GNU_SOURCE
#include "CFloor.h"

#include <stdint.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns) {
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    return ts;
}

int cfloor_nanosleep_run(int64_t interval_ns, int count, int64_t *lateness_ns) {
    // The default 50 µs timer slack would pad every sleep; a floor must not carry it.
    unsigned long slack = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int64_t start = now_ns();
    for (int k = 1; k <= count; k++) {
        int64_t deadline = start + (int64_t)k * interval_ns;
        struct timespec ts = to_timespec(deadline);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {}
        lateness_ns[k - 1] = now_ns() - deadline;
    }
    prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    return 0;
}

int cfloor_timerfd_run(int64_t interval_ns, int count, int64_t *lateness_ns) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0) return -1;
    int64_t start = now_ns();
    for (int k = 1; k <= count; k++) {
        int64_t deadline = start + (int64_t)k * interval_ns;
        struct itimerspec spec = {.it_interval = {0, 0}, .it_value = to_timespec(deadline)};
        if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL) != 0) { close(fd); return -1; }
        uint64_t expirations;
        if (read(fd, &expirations, sizeof expirations) != sizeof expirations) { close(fd); return -1; }
        lateness_ns[k - 1] = now_ns() - deadline;
    }
    close(fd);
    return 0;
}
