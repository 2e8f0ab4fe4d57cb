#include "CPreciseTimerCore.h"
#include "Sanitized.h"

#include <pthread.h>
#include <stdint.h>

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
