#ifndef CLIMIT_H
#define CLIMIT_H

#include <stddef.h>
#include <stdint.h>

// The limit row of the schedule + cancel benchmark: a timer registry in plain C, as fast as this
// machine allows for the work PreciseTimer's registry does on a schedule and a cancel, so that the
// benchmark shows how far the Swift service is from the machine and not only from its peers.
//
// Shape, mirroring PreciseTimerCore's registry (TimerCore, TimerRegistry, TimerTable, TimerHeap):
// timers keyed by their string ID, 2^shard_bits shards picked by the top bits of the ID's hash,
// each with one pthread mutex, an open-addressing table (linear probing, removal by backward
// shift) and a 4-ary min-heap of (deadline, sequence) with back-indices, so a cancel removes its
// heap entry by position in O(log n). One global sequence counter (an atomic, as in Swift) orders
// equal deadlines. Every timer owns a 32-byte heap-allocated "handler", malloc'd when it is
// scheduled and freed outside the lock when it is cancelled, standing for the Swift service's
// per-timer closure.
//
// What it does not do (and the Swift service does): no event loop, no wake-up bookkeeping, no
// reference counting, no separate node per timer (PreciseTimer's is 72 bytes, 88 with an ID its
// caller chose; here the entry lives in the table's slot),
// no run-time exclusivity or bounds checks, no validation beyond an empty ID, and the hash is a
// seeded wyhash-style multiply-mix rather than SipHash-1-3.

/// A registry of timers. Thread-safe: every call takes exactly one shard's mutex.
typedef struct climit_registry climit_registry;

/// A new, empty registry with 2^shard_bits shards (0...6), or NULL (errno set) if out of memory
/// or shard_bits is out of range.
climit_registry *_Nullable climit_create(int shard_bits);

/// Frees the registry, every pending timer's handler and every long key. Not thread-safe with
/// calls on the same registry.
void climit_destroy(climit_registry *_Nullable registry);

/// Schedules a timer under the ID's `length` bytes (copied) at `deadline` (nanoseconds).
/// Returns 0, -1 if the ID is already pending (nothing changed), -2 for an empty ID or when
/// memory ran out.
int climit_schedule(climit_registry *_Nonnull registry, const char *_Nonnull id, size_t length, int64_t deadline);

/// Cancels the timer with this ID: 1 if it was pending (its handler is freed), 0 if not.
int climit_cancel(climit_registry *_Nonnull registry, const char *_Nonnull id, size_t length);

/// Pending timers, summed over the shards (each read under its lock).
size_t climit_count(climit_registry *_Nonnull registry);

/// Checks every invariant: each table entry is found from its home slot by its own key, each
/// heap entry points at a slot that points back at it, the heap is ordered, the counts agree.
/// Returns 0, or -1 on the first violation. O(n); not thread-safe with other calls.
int climit_check(climit_registry *_Nonnull registry);

/// The figures of one benchmark run, in nanoseconds.
typedef struct {
    /// The slowest thread's loop time divided by its own pairs.
    double wall_per_pair;
    /// Process CPU time (getrusage, every thread) over the loops, divided by all pairs.
    double cpu_per_pair;
    /// Time to schedule the pending timers, divided by them.
    double fill_per_timer;
} climit_result;

/// What the slices of `climit_run` share.
typedef enum {
    CLIMIT_SHARE_ALL = 0,
    CLIMIT_SHARE_REGISTRY_ONLY = 1,
    CLIMIT_SHARE_NOTHING = 2,
    CLIMIT_SHARE_SEQUENCE_ONLY = 3,
} climit_sharing;

/// The benchmark's loop, entirely in C (precise-bench's CostBenchmark.run, the same work):
///
/// 1. One registry of 2^shard_bits shards; the calling thread schedules `pending` timers with
///    generated IDs (`timer-` and the sequence number, as PreciseTimer names a timer scheduled
///    without an ID), each at now + 1 hour read from CLOCK_MONOTONIC, in `threads` slices of
///    pending / threads.
/// 2. Before timing, each thread's victims are gathered: `victims[t * pairs_per_thread + k]` is
///    the position, in slice t, of the k-th timer thread t cancels (distinct, in
///    0 ..< pending / threads); their IDs are copied into one array per thread, read front to back.
/// 3. `threads` slices share the registry; each runs `pairs_per_thread` pairs of (schedule a new
///    generated ID at now + 1 hour, cancel its next victim), so the pending count stays constant.
///    The slices run as DispatchQueue.concurrentPerform(iterations: threads) runs the Swift rows'
///    slices: on at most one thread per online CPU (the caller and up to threads - 1 more), each
///    thread taking the next slice when done with one.
///
/// `sharing` says what the slices share in step 3; everything else is the same:
/// - `CLIMIT_SHARE_ALL`: the registry and its one sequence, as PreciseTimer does (steps 1–3 above).
/// - `CLIMIT_SHARE_REGISTRY_ONLY`: the registry; each slice numbers its new timers itself
///   (distinct numbers, no shared counter).
/// - `CLIMIT_SHARE_NOTHING`: a registry per slice, filled with that slice's timers, each with its
///   own sequence: what threads that never touch one another's timers cost.
/// - `CLIMIT_SHARE_SEQUENCE_ONLY`: a registry per slice, every schedule drawing from one sequence:
///   what the one order of equal deadlines across threads costs with nothing else shared.
/// With one thread all four do the same work.
///
/// Returns 0 with `result` filled, or -1 if a call failed, a registry's invariants did not hold
/// afterwards, or memory or a thread could not be had.
int climit_run(
    int shard_bits, int pending, int pairs_per_thread, int threads, climit_sharing sharing,
    const int32_t *_Nonnull victims, climit_result *_Nonnull result);

/// The least a touch by string ID (push a pending timer's deadline later) can cost at `pending`
/// timers, for the peers section's floor column: `pending` timers named `timer-1`... in one
/// open-addressing table of 32-byte slots (the ID's hash, the ID inline, the deadline; half
/// full), then for each of `touches` IDs, in the order `touched` gives (indices into the IDs, as
/// PreciseTimer's row reads its array of IDs): hash the ID, read the clock, probe, and write the
/// new deadline into the slot (lazily: no heap move, as PreciseTimer's touch). No lock, no
/// record apart from the slot, nothing else: two cache misses per touch at a million timers (the
/// caller's ID, its slot).
/// Returns 0 with the figures (ns per touch) set, or -1 if memory ran out or an ID was not found.
int climit_touch_floor(
    int pending, const uint32_t *_Nonnull delays_ms, int touches, const int32_t *_Nonnull touched,
    double *_Nonnull wall_per_touch, double *_Nonnull cpu_per_touch);

/// The least a schedule + cancel by handle costs with PreciseTimer's registry design, for the
/// peers section's by-handle rows (HandleFloor.c): PreciseTimer's steps, in C. 64 shards, each a
/// mutex, an open-addressing table of 8-byte slots (a node's address and 16 bits of its hash,
/// removal by backward shift), a near tier and a far tier of (deadline, sequence, node) entries:
/// the near tier a 4-ary heap whose moves write each moved node's index, split into the far tier
/// behind a bound once it reaches 1 024 entries (or twice what its last split kept), as
/// `TimerHeap` splits; the far tier unordered, a removal popping the last entry, swapping it in
/// next to the previous removal, or marking a bit (compacting once half is dead); a 64-byte
/// malloc'd node per timer; generated numbers from one atomic, hashed as PreciseTimer hashes them
/// (four consecutive numbers of a shard to one line); a 16-byte handle (the node's address and its
/// generation). A pair: read the clock, schedule `delays_ms[pending + k]` ms from now, then cancel
/// handle `victims[k]`: both misses (its slot, its node) prefetched before the lock, the node read
/// only once the table holds its address, freed outside the lock.
/// What it leaves out: the event loop (nothing fires, so the near tier is never refilled from the
/// far one), reference counts, closures, errors, options; its table and far tier are sized for
/// the run before it starts.
/// Returns 0 with the figures (ns per pair) set, or -1 if memory ran out or a call failed.
int climit_handle_floor(
    int pending, int pairs, const uint32_t *_Nonnull delays_ms, const int32_t *_Nonnull victims,
    double *_Nonnull wall_per_pair, double *_Nonnull cpu_per_pair);

// MARK: Pinning

/// The CPUs the calling thread may run on, in order: at most `capacity` written to `cpus`.
/// Returns how many there are, or -1 (errno set).
int climit_allowed_cpus(int *_Nonnull cpus, int capacity);

/// Pins the calling thread to `cpu` (a child of precise-bench pins the thread that makes its
/// measured calls). Returns 0 or an errno.
int climit_pin_thread(int cpu);

// The raw-libevent peer of the peers section, beside the limit row (this header is the module's umbrella).
#include "CLimitLibevent.h"

#endif
