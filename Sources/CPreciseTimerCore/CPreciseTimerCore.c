// One C file for the whole module: valgrind 3.19 (Debian 12's, which CI's leak check runs) cannot
// read the DWARF 5 debug information of a binary with a second C compilation unit here.
#define _GNU_SOURCE  // mremap
#include "CPreciseTimerCore.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define C_PRECISE_TIMER_CORE_SANITIZED 1
#endif
#endif

__thread void *CPreciseTimerCore_spareNode;
__thread int CPreciseTimerCore_spareReleasedAtExit;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int keyMade;
static __thread void (*releaseSpare)(void *);  // Per thread: no thread reads another's.

// Runs as the thread exits, while its thread-locals still exist.
static void releaseAtExit(void *unused) {
    (void)unused;
    void *node = CPreciseTimerCore_takeSpare();
    CPreciseTimerCore_spareReleasedAtExit = 0;
    if (node) releaseSpare(node);
}

static void makeKey(void) { keyMade = pthread_key_create(&key, releaseAtExit) == 0; }

int CPreciseTimerCore_keepsSpares(void) {
#ifdef C_PRECISE_TIMER_CORE_SANITIZED
    return 0;
#else
    return 1;
#endif
}

int CPreciseTimerCore_releaseSpareAtExit(void (*release)(void *)) {
    if (CPreciseTimerCore_spareReleasedAtExit) return 1;
    if (!CPreciseTimerCore_keepsSpares()) return 0;
    pthread_once(&once, makeKey);
    // Any non-NULL value makes the destructor run at the thread's exit.
    if (!keyMade || pthread_setspecific(key, (void *)(uintptr_t)1) != 0) return 0;
    releaseSpare = release;
    CPreciseTimerCore_spareReleasedAtExit = 1;
    return 1;
}

void *CPreciseTimerCore_remap(void *address, size_t oldBytes, size_t newBytes) {
#ifdef C_PRECISE_TIMER_CORE_SANITIZED
    (void)address;
    (void)oldBytes;
    (void)newBytes;
    errno = ENOSYS;
    return (void *)0;
#else
    void *moved = mremap(address, oldBytes, newBytes, MREMAP_MAYMOVE);
    return moved == MAP_FAILED ? (void *)0 : moved;
#endif
}
