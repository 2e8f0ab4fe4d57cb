#ifndef C_PRECISE_TIMER_CORE_H
#define C_PRECISE_TIMER_CORE_H

// What the registry needs and Swift cannot spell: a prefetch, a thread-local slot read without a
// call, and mremap (variadic in C). No engine: PreciseTimerCore still builds without libevent.

#include <stddef.h>

/// `__builtin_prefetch`: asks the CPU to start loading the cache line at `address` because it will
/// be read soon. A hint only: an address no longer valid (a stale or torn bit pattern) never faults.
static inline __attribute__((always_inline)) void CPreciseTimerCore_prefetch(const void *_Nullable address) {
    __builtin_prefetch(address);
}

/// Asks the CPU to bring the cache line at `address` into this core's cache in a state it may
/// write (x86 `PREFETCHW`), ahead of an atomic read-modify-write of a line other cores write too:
/// the transfer then overlaps the caller's work instead of stalling the write. A hint only: it
/// never faults, and decodes as a no-op on a processor without it.
static inline __attribute__((always_inline)) void CPreciseTimerCore_prefetchForWrite(const void *_Nonnull address) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const char *)address));
#else
    __builtin_prefetch(address, 1);
#endif
}

/// This thread's spare timer node (one retained reference), or NULL. Swift imports no thread-local
/// variable: it reads and writes this one through the functions below, inlined.
extern __thread void *_Nullable CPreciseTimerCore_spareNode;
/// Whether this thread's exit releases its spare (see `CPreciseTimerCore_releaseSpareAtExit`).
extern __thread int CPreciseTimerCore_spareReleasedAtExit;

/// Takes this thread's spare node: the caller owns its reference. NULL if there is none.
static inline __attribute__((always_inline)) void *_Nullable CPreciseTimerCore_takeSpare(void) {
    void *node = CPreciseTimerCore_spareNode;
    CPreciseTimerCore_spareNode = (void *)0;
    return node;
}

/// Whether this thread has a spare node.
static inline __attribute__((always_inline)) int CPreciseTimerCore_hasSpare(void) {
    return CPreciseTimerCore_spareNode != (void *)0;
}

/// Whether this thread's exit releases its spare (`CPreciseTimerCore_releaseSpareAtExit` ran).
static inline __attribute__((always_inline)) int CPreciseTimerCore_isSpareReleasedAtExit(void) {
    return CPreciseTimerCore_spareReleasedAtExit;
}

/// Keeps `node` (a retained reference, handed over) as this thread's spare. Only when it has
/// none, and its exit releases it.
static inline __attribute__((always_inline)) void CPreciseTimerCore_keepSpare(void *_Nonnull node) {
    CPreciseTimerCore_spareNode = node;
}

/// Whether threads keep spare nodes: not in a build under AddressSanitizer or ThreadSanitizer, where
/// every ended node is freed, so that their checks see every use of a node after its end.
int CPreciseTimerCore_keepsSpares(void);

/// Makes this thread's exit hand its spare, if any, to `release` (a thread-specific key's
/// destructor; the key is made once per process).
/// Returns whether it will (0 if the process has run out of keys, or under a sanitizer: then no
/// spare is kept).
int CPreciseTimerCore_releaseSpareAtExit(void (*_Nonnull release)(void *_Nonnull));

/// Moves the anonymous mapping of `oldBytes` at `address` to one of `newBytes` (each rounded up to
/// whole pages, as `mmap` and `munmap` round them), its contents kept: the kernel moves the pages
/// rather than copying them, and the pages a growth adds come zero-filled when first touched.
/// Returns the new address, or NULL with `errno` set: ENOMEM, or ENOSYS in a build under
/// AddressSanitizer or ThreadSanitizer, which track mappings through `mmap` and `munmap` only.
void *_Nullable CPreciseTimerCore_remap(void *_Nonnull address, size_t oldBytes, size_t newBytes);

#endif
