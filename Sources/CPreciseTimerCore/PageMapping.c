// mremap(2) for PageMemory: a C variadic function, which Swift does not import.
#define _GNU_SOURCE
#include "CPreciseTimerCore.h"
#include "Sanitized.h"

#include <errno.h>
#include <sys/mman.h>

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
