#define _GNU_SOURCE
#include "CFloor.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
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

static int arm_absolute(int fd, int64_t deadline) {
    struct itimerspec spec = {.it_interval = {0, 0}, .it_value = to_timespec(deadline)};
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

int cfloor_nanosleep_run(int64_t interval_ns, int count, int64_t *lateness_ns) {
    unsigned long slack = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    int64_t start = now_ns();
    for (int k = 1; k <= count; k++) {
        int64_t deadline = start + (int64_t)k * interval_ns;
        struct timespec ts = to_timespec(deadline);
        // clock_nanosleep returns the error number itself; EINTR means "sleep again".
        int rc;
        while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR) {}
        if (rc != 0) {
            prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
            errno = rc;
            return -1;
        }
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
        uint64_t expirations;
        if (arm_absolute(fd, deadline) != 0 || read(fd, &expirations, sizeof expirations) != sizeof expirations) {
            close(fd);
            return -1;
        }
        lateness_ns[k - 1] = now_ns() - deadline;
    }
    close(fd);
    return 0;
}

int cfloor_epoll_timerfd_run(int64_t interval_ns, int count, int64_t *lateness_ns) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd < 0) return -1;
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event interest = {.events = EPOLLIN, .data = {.fd = fd}};
    if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &interest) != 0) {
        if (epfd >= 0) close(epfd);
        close(fd);
        return -1;
    }
    int64_t start = now_ns();
    int result = 0;
    for (int k = 1; k <= count && result == 0; k++) {
        int64_t deadline = start + (int64_t)k * interval_ns;
        if (arm_absolute(fd, deadline) != 0) {
            result = -1;
            break;
        }
        struct epoll_event ready;
        int n;
        while ((n = epoll_wait(epfd, &ready, 1, -1)) < 0 && errno == EINTR) {}
        uint64_t expirations;
        if (n != 1 || read(fd, &expirations, sizeof expirations) != sizeof expirations) {
            result = -1;
            break;
        }
        lateness_ns[k - 1] = now_ns() - deadline;
    }
    close(epfd);
    close(fd);
    return result;
}
