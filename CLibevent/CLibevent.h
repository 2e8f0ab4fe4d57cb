#ifndef CLIBEVENT_H
#define CLIBEVENT_H

// The engine's C module (libevent 2.1, `libevent-dev`): headers, and shims for what Swift cannot
// call. Only `Sources/PreciseTimer/Internals` imports it; `PreciseTimerCore` does not (its one C
// module, `CPreciseTimerCore`, holds a prefetch, a thread-local and `mremap`, no engine).

// libc first: Debian's event-config.h defines _GNU_SOURCE, which breaks the Glibc module
// when it is seen before the C library's own headers.
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <linux/sched.h>

#include <event2/event.h>

// glibc declares these GNU extensions only under _GNU_SOURCE, which must not be defined before
// the C library's headers (see above); the prototypes are glibc's own.
extern int pthread_setname_np(pthread_t thread, const char *_Nonnull name);
extern int pthread_attr_setaffinity_np(pthread_attr_t *_Nonnull attr, size_t cpusetsize,
                                       const cpu_set_t *_Nonnull cpuset);
extern int unshare(int flags);
extern int close_range(unsigned int first, unsigned int last, int flags);
extern pid_t gettid(void);
extern int dup3(int oldfd, int newfd, int flags);

// What Swift cannot reach by itself, and nothing more: libevent's flag constants and its
// function-like macros (`evtimer_assign`, `evtimer_add`, the `CMSG_*` of `SCM_RIGHTS`), the variadic
// `prctl`, and the glibc GNU prototypes above. Every other libevent and
// libc function is called directly from Swift, through the engine's one wall (`Libevent.swift`).

static inline int CLibevent_EV_READ(void) { return EV_READ; }
static inline int CLibevent_EV_PERSIST(void) { return EV_PERSIST; }
static inline int CLibevent_EVLOOP_NO_EXIT_ON_EMPTY(void) { return EVLOOP_NO_EXIT_ON_EMPTY; }
static inline int CLibevent_EVENT_BASE_FLAG_PRECISE_TIMER(void) { return EVENT_BASE_FLAG_PRECISE_TIMER; }
static inline int CLibevent_EVENT_BASE_FLAG_NO_CACHE_TIME(void) { return EVENT_BASE_FLAG_NO_CACHE_TIME; }
static inline int CLibevent_EVENT_BASE_FLAG_NOLOCK(void) { return EVENT_BASE_FLAG_NOLOCK; }
static inline int CLibevent_CLONE_FILES(void) { return CLONE_FILES; }
static inline int CLibevent_CLOSE_RANGE_UNSHARE(void) { return CLOSE_RANGE_UNSHARE; }

/// `CMSG_SPACE`: the control buffer's size for `length` bytes of ancillary data.
static inline size_t CLibevent_CMSG_SPACE(size_t length) { return CMSG_SPACE(length); }

/// `CMSG_LEN`: a control message's `cmsg_len` for `length` bytes of data.
static inline size_t CLibevent_CMSG_LEN(size_t length) { return CMSG_LEN(length); }

/// `CMSG_FIRSTHDR`.
static inline struct cmsghdr *_Nullable CLibevent_CMSG_FIRSTHDR(const struct msghdr *_Nonnull message) {
    return CMSG_FIRSTHDR(message);
}

/// `CMSG_DATA`.
static inline unsigned char *_Nonnull CLibevent_CMSG_DATA(struct cmsghdr *_Nonnull header) {
    return CMSG_DATA(header);
}

/// `prctl(PR_SET_TIMERSLACK, nanoseconds)` (prctl is variadic, which Swift cannot call).
static inline int CLibevent_set_timer_slack(unsigned long nanoseconds) {
    return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}

/// `evtimer_assign`: a pure timer event (no file descriptor).
static inline int CLibevent_evtimer_assign(struct event *_Nonnull ev, struct event_base *_Nonnull base,
                                           event_callback_fn _Nonnull callback, void *_Nullable arg) {
    return evtimer_assign(ev, base, callback, arg);
}

/// `evtimer_add`.
static inline int CLibevent_evtimer_add(struct event *_Nonnull ev, const struct timeval *_Nonnull tv) {
    return evtimer_add(ev, tv);
}

#endif
