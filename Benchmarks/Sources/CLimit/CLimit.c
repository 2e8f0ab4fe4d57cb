#define _GNU_SOURCE
#include "CLimit.h"
#include "measure.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

// Keys are compared as two 64-bit words whose last byte is the length (see `key_probe`).
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "CLimit assumes a little-endian machine");

/// Longest ID kept inside its slot; longer ones are copied to their own allocation.
#define INLINE_KEY 15
/// Length byte of a slot whose ID lives in its own allocation.
#define LONG_KEY 0xFFu
#define HOUR_NS INT64_C(3600000000000)

// MARK: Handler

/// What the Swift service allocates per timer for its closure (a Swift closure context: a 16-byte
/// object header and the 16-byte function value it captures): 32 bytes, malloc'd on schedule and
/// freed, outside the lock, on cancel. Never called here (no timer fires in this benchmark).
typedef struct {
    void (*call)(void *context);
    void *context;
    uint64_t captures[2];
} handler;

_Static_assert(sizeof(handler) == 32, "the handler blob is 32 bytes");

static void handler_body(void *context) {
    (void)context;
}

// MARK: Hash

/// A seeded wyhash-style hash (wyhash final 4's short-key path and mix; keys over 16 bytes fold
/// 16 bytes per multiply). Fast, well mixed, but not a keyed PRF like Swift's SipHash-1-3.
static const uint64_t secret0 = UINT64_C(0xa0761d6478bd642f);
static const uint64_t secret1 = UINT64_C(0xe7037ed1a0b428db);

static inline uint64_t mix(uint64_t a, uint64_t b) {
    __uint128_t product = (__uint128_t)a * b;
    return (uint64_t)product ^ (uint64_t)(product >> 64);
}

static inline uint64_t read64(const char *p) {
    uint64_t value;
    memcpy(&value, p, sizeof value);
    return value;
}

static inline uint64_t read32(const char *p) {
    uint32_t value;
    memcpy(&value, p, sizeof value);
    return value;
}

static inline uint64_t hash_id(const char *p, size_t length, uint64_t seed) {
    uint64_t a, b;
    if (length <= 16) {
        if (length >= 4) {
            size_t quarter = (length >> 3) << 2;
            a = (read32(p) << 32) | read32(p + quarter);
            b = (read32(p + length - 4) << 32) | read32(p + length - 4 - quarter);
        } else if (length > 0) {
            const unsigned char *u = (const unsigned char *)p;
            a = ((uint64_t)u[0] << 16) | ((uint64_t)u[length >> 1] << 8) | u[length - 1];
            b = 0;
        } else {
            a = b = 0;
        }
    } else {
        const char *q = p;
        size_t left = length;
        while (left > 16) {
            seed = mix(read64(q) ^ secret1, read64(q + 8) ^ seed);
            q += 16;
            left -= 16;
        }
        a = read64(p + length - 16);
        b = read64(p + length - 8);
    }
    __uint128_t product = (__uint128_t)(a ^ secret1) * (b ^ seed);
    return mix((uint64_t)product ^ secret0 ^ length, (uint64_t)(product >> 64) ^ secret1);
}

// MARK: Keys

/// An ID as a slot stores it: bytes 0...14 the ID, zero-padded, and byte 15 its length, so two
/// short IDs are equal exactly when both words are; a long ID has LONG_KEY in byte 15, its length
/// below it in word 1, and its own allocation's address in word 0.
typedef struct {
    uint64_t word[2];
    const char *bytes;
    size_t length;
} key_probe;

static inline key_probe make_probe(const char *id, size_t length) {
    key_probe probe = {.word = {0, 0}, .bytes = id, .length = length};
    if (length <= INLINE_KEY) {
        unsigned char buffer[16] = {0};
        memcpy(buffer, id, length);
        buffer[15] = (unsigned char)length;
        memcpy(probe.word, buffer, sizeof buffer);
    } else {
        probe.word[1] = (uint64_t)length | ((uint64_t)LONG_KEY << 56);
    }
    return probe;
}

// MARK: Shards

/// One table slot: 32 bytes, two to a cache line. Empty when `key[1]` is 0 (every ID has a length).
typedef struct {
    /// The low 32 bits of the ID's hash: its home slot is `hash & mask`.
    uint32_t hash;
    /// Where its entry sits in the shard's heap.
    uint32_t heap_index;
    handler *handler;
    uint64_t key[2];
} slot;

/// One heap entry: the firing order (deadline, then sequence) and the slot it belongs to.
typedef struct {
    int64_t deadline;
    uint64_t sequence;
    uint32_t slot;
} heap_entry;

typedef struct {
    /// Its own cache line onwards, so two threads on two shards do not share one.
    alignas(64) pthread_mutex_t lock;
    slot *slots;
    uint32_t mask;
    uint32_t count;
    heap_entry *heap;
    uint32_t heap_count;
    uint32_t heap_capacity;
} shard;

struct climit_registry {
    uint64_t seed;
    int shard_bits;
    uint32_t shard_count;
    shard *shards;
    /// Scheduling order and generated IDs' numbers, shared by every shard (as in TimerCore).
    alignas(64) _Atomic uint64_t sequence;
};

static inline shard *shard_for(climit_registry *registry, uint64_t hash) {
    // The top bits pick the shard, the low bits the slot (as in TimerCore).
    return &registry->shards[(uint32_t)(hash >> 58) >> (6 - registry->shard_bits)];
}

static inline bool slot_matches(const slot *entry, const key_probe *probe, uint32_t hash) {
    if (entry->hash != hash || entry->key[1] != probe->word[1]) return false;
    if (probe->length <= INLINE_KEY) return entry->key[0] == probe->word[0];
    return memcmp((const char *)(uintptr_t)entry->key[0], probe->bytes, probe->length) == 0;
}

/// The slot holding the probe's ID, or -1.
static inline int64_t table_find(const shard *s, const key_probe *probe, uint32_t hash) {
    uint32_t index = hash & s->mask;
    for (;;) {
        const slot *entry = &s->slots[index];
        if (entry->key[1] == 0) return -1;
        if (slot_matches(entry, probe, hash)) return index;
        index = (index + 1) & s->mask;
    }
}

/// Doubles the table; every moved slot's heap entry is told its new place. -1 if out of memory.
static int table_grow(shard *s) {
    uint32_t old_capacity = s->mask + 1;
    if (old_capacity > UINT32_MAX / 2) return -1;
    uint32_t capacity = old_capacity * 2;
    slot *slots = calloc(capacity, sizeof(slot));
    if (slots == NULL) return -1;
    uint32_t mask = capacity - 1;
    for (uint32_t old = 0; old < old_capacity; old++) {
        const slot *entry = &s->slots[old];
        if (entry->key[1] == 0) continue;
        uint32_t index = entry->hash & mask;
        while (slots[index].key[1] != 0) index = (index + 1) & mask;
        slots[index] = *entry;
        s->heap[entry->heap_index].slot = index;
    }
    free(s->slots);
    s->slots = slots;
    s->mask = mask;
    return 0;
}

/// Empties the slot at `index` and closes the gap by shifting later slots of its probe run back
/// (by their stored hash; no key is rehashed), telling each moved slot's heap entry.
static inline void table_remove(shard *s, uint32_t index) {
    slot *slots = s->slots;
    uint32_t mask = s->mask;
    uint32_t gap = index;
    uint32_t next = (index + 1) & mask;
    while (slots[next].key[1] != 0) {
        uint32_t home = slots[next].hash & mask;
        // The slot may move to the gap if its home is cyclically outside (gap, next].
        if (((gap - home) & mask) < ((next - home) & mask)) {
            slots[gap] = slots[next];
            s->heap[slots[gap].heap_index].slot = gap;
            gap = next;
        }
        next = (next + 1) & mask;
    }
    slots[gap].key[0] = 0;
    slots[gap].key[1] = 0;
    s->count--;
}

static inline bool before(const heap_entry *a, const heap_entry *b) {
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->sequence < b->sequence;
}

static inline void heap_place(shard *s, uint32_t position, heap_entry entry) {
    s->heap[position] = entry;
    s->slots[entry.slot].heap_index = position;
}

// Sifting moves a hole rather than swapping, writing each moved entry's position into its slot.

static inline void sift_up(shard *s, uint32_t hole, heap_entry moving) {
    while (hole > 0) {
        uint32_t parent = (hole - 1) / 4;
        if (!before(&moving, &s->heap[parent])) break;
        heap_place(s, hole, s->heap[parent]);
        hole = parent;
    }
    heap_place(s, hole, moving);
}

static inline void sift_down(shard *s, uint32_t hole, heap_entry moving) {
    const heap_entry *heap = s->heap;
    size_t count = s->heap_count;
    for (;;) {
        size_t first = 4 * (size_t)hole + 1;
        if (first >= count) break;
        size_t end = first + 4 < count ? first + 4 : count;
        size_t child = first;
        for (size_t candidate = first + 1; candidate < end; candidate++) {
            if (before(&heap[candidate], &heap[child])) child = candidate;
        }
        if (!before(&heap[child], &moving)) break;
        heap_place(s, hole, heap[child]);
        hole = (uint32_t)child;
    }
    heap_place(s, hole, moving);
}

/// Removes the heap entry at `position`: the last entry takes its place and sifts to where it
/// belongs. As in TimerHeap, a last entry not before the removed one cannot go up, so the parent
/// (a cache miss at a million timers) is read only when it might.
static inline void heap_remove(shard *s, uint32_t position) {
    heap_entry removed = s->heap[position];
    heap_entry last = s->heap[--s->heap_count];
    if (position < s->heap_count) {
        if (position > 0 && before(&last, &removed) && before(&last, &s->heap[(position - 1) / 4])) {
            sift_up(s, position, last);
        } else {
            sift_down(s, position, last);
        }
    }
}

// MARK: Registry

climit_registry *climit_create(int shard_bits) {
    if (shard_bits < 0 || shard_bits > 6) {
        errno = EINVAL;
        return NULL;
    }
    climit_registry *registry = aligned_alloc(64, (sizeof(climit_registry) + 63) / 64 * 64);
    if (registry == NULL) return NULL;
    memset(registry, 0, sizeof *registry);
    registry->shard_bits = shard_bits;
    registry->shard_count = UINT32_C(1) << shard_bits;
    atomic_init(&registry->sequence, 0);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t entropy = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 32) ^ (uint64_t)(uintptr_t)registry;
    registry->seed = entropy ^ mix(entropy ^ secret0, secret1);
    registry->shards = aligned_alloc(64, registry->shard_count * sizeof(shard));
    if (registry->shards == NULL) {
        free(registry);
        return NULL;
    }
    for (uint32_t k = 0; k < registry->shard_count; k++) {
        shard *s = &registry->shards[k];
        memset(s, 0, sizeof *s);
        pthread_mutex_init(&s->lock, NULL);
        s->mask = 15;
        s->slots = calloc(16, sizeof(slot));
        s->heap_capacity = 16;
        s->heap = malloc(16 * sizeof(heap_entry));
        if (s->slots == NULL || s->heap == NULL) {
            registry->shard_count = k + 1;
            climit_destroy(registry);
            errno = ENOMEM;
            return NULL;
        }
    }
    return registry;
}

void climit_destroy(climit_registry *registry) {
    if (registry == NULL) return;
    for (uint32_t k = 0; k < registry->shard_count; k++) {
        shard *s = &registry->shards[k];
        if (s->slots != NULL) {
            for (uint32_t index = 0; index <= s->mask; index++) {
                slot *entry = &s->slots[index];
                if (entry->key[1] == 0) continue;
                free(entry->handler);
                if ((entry->key[1] >> 56) == LONG_KEY) free((char *)(uintptr_t)entry->key[0]);
            }
        }
        free(s->slots);
        free(s->heap);
        pthread_mutex_destroy(&s->lock);
    }
    free(registry->shards);
    free(registry);
}

/// Registers a timer under a sequence number the caller drew (a generated ID is named after it).
static int schedule_sequenced(
    climit_registry *registry, const char *id, size_t length, uint64_t hash, int64_t deadline, uint64_t sequence) {
    // Allocated outside the lock, as the Swift service builds its node and closure before locking.
    handler *body = malloc(sizeof(handler));
    if (body == NULL) return -2;
    *body = (handler){.call = handler_body, .context = NULL, .captures = {sequence, 0}};
    key_probe probe = make_probe(id, length);
    if (length > INLINE_KEY) {
        char *copy = malloc(length);
        if (copy == NULL) {
            free(body);
            return -2;
        }
        memcpy(copy, id, length);
        probe.word[0] = (uint64_t)(uintptr_t)copy;
    }
    uint32_t low = (uint32_t)hash;
    shard *s = shard_for(registry, hash);
    int result = 0;
    pthread_mutex_lock(&s->lock);
    if (s->heap_count == s->heap_capacity) {
        heap_entry *heap = s->heap_capacity <= UINT32_MAX / 2
            ? realloc(s->heap, (size_t)s->heap_capacity * 2 * sizeof(heap_entry)) : NULL;
        if (heap == NULL) {
            result = -2;
            goto unlock;
        }
        s->heap = heap;
        s->heap_capacity *= 2;
    }
    if (((size_t)s->count + 1) * 4 > ((size_t)s->mask + 1) * 3 && table_grow(s) != 0 && s->count + 1 > s->mask) {
        result = -2;  // Could not grow and no room left: a probe must always end at an empty slot.
        goto unlock;
    }
    uint32_t index = low & s->mask;
    // Both cold lines this call needs, fetched in parallel: its home slot, and the heap parent
    // the new entry is compared with (at a million timers, each a cache and TLB miss).
    __builtin_prefetch(&s->slots[index]);
    if (s->heap_count > 0) __builtin_prefetch(&s->heap[(s->heap_count - 1) / 4]);
    while (s->slots[index].key[1] != 0) {
        if (slot_matches(&s->slots[index], &probe, low)) {
            result = -1;
            goto unlock;
        }
        index = (index + 1) & s->mask;
    }
    s->slots[index] = (slot){.hash = low, .heap_index = 0, .handler = body, .key = {probe.word[0], probe.word[1]}};
    s->count++;
    sift_up(s, s->heap_count++, (heap_entry){.deadline = deadline, .sequence = sequence, .slot = index});
unlock:
    pthread_mutex_unlock(&s->lock);
    if (result != 0) {
        free(body);
        if (length > INLINE_KEY) free((char *)(uintptr_t)probe.word[0]);
    }
    return result;
}

int climit_schedule(climit_registry *registry, const char *id, size_t length, int64_t deadline) {
    if (length == 0) return -2;
    uint64_t sequence = atomic_fetch_add_explicit(&registry->sequence, 1, memory_order_relaxed) + 1;
    return schedule_sequenced(registry, id, length, hash_id(id, length, registry->seed), deadline, sequence);
}

int climit_cancel(climit_registry *registry, const char *id, size_t length) {
    if (length == 0) return 0;
    uint64_t hash = hash_id(id, length, registry->seed);
    key_probe probe = make_probe(id, length);
    shard *s = shard_for(registry, hash);
    pthread_mutex_lock(&s->lock);
    int64_t found = table_find(s, &probe, (uint32_t)hash);
    if (found < 0) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    slot *entry = &s->slots[found];
    handler *body = entry->handler;
    char *long_key = (entry->key[1] >> 56) == LONG_KEY ? (char *)(uintptr_t)entry->key[0] : NULL;
    heap_remove(s, entry->heap_index);
    table_remove(s, (uint32_t)found);
    pthread_mutex_unlock(&s->lock);
    // Freed outside the lock, as the Swift service releases a cancelled timer's handler.
    free(body);
    free(long_key);
    return 1;
}

size_t climit_count(climit_registry *registry) {
    size_t total = 0;
    for (uint32_t k = 0; k < registry->shard_count; k++) {
        shard *s = &registry->shards[k];
        pthread_mutex_lock(&s->lock);
        total += s->count;
        pthread_mutex_unlock(&s->lock);
    }
    return total;
}

int climit_check(climit_registry *registry) {
    for (uint32_t k = 0; k < registry->shard_count; k++) {
        const shard *s = &registry->shards[k];
        uint32_t occupied = 0;
        for (uint32_t index = 0; index <= s->mask; index++) {
            const slot *entry = &s->slots[index];
            if (entry->key[1] == 0) continue;
            occupied++;
            size_t length = (size_t)(entry->key[1] >> 56);
            const char *bytes = (const char *)entry->key;
            if (length == LONG_KEY) {
                length = (size_t)(entry->key[1] & ((UINT64_C(1) << 56) - 1));
                bytes = (const char *)(uintptr_t)entry->key[0];
            }
            uint64_t hash = hash_id(bytes, length, registry->seed);
            key_probe probe = make_probe(bytes, length);
            if (length > INLINE_KEY) probe.word[0] = entry->key[0];
            if ((uint32_t)hash != entry->hash || shard_for(registry, hash) != s) return -1;
            if (table_find(s, &probe, entry->hash) != (int64_t)index) return -1;
            if (entry->heap_index >= s->heap_count || s->heap[entry->heap_index].slot != index) return -1;
            if (entry->handler == NULL || entry->handler->call != handler_body) return -1;
        }
        if (occupied != s->count || s->count != s->heap_count) return -1;
        for (uint32_t position = 0; position < s->heap_count; position++) {
            const heap_entry *entry = &s->heap[position];
            if (entry->slot > s->mask || s->slots[entry->slot].heap_index != position) return -1;
            if (position > 0 && before(entry, &s->heap[(position - 1) / 4])) return -1;
        }
    }
    return 0;
}

// MARK: Benchmark

/// An ID as the Swift benchmark keeps one (a 16-byte small string): its bytes and length.
typedef struct {
    char bytes[15];
    uint8_t length;
} short_id;

/// `timer-` and the number in decimal, as PreciseTimer's TimerID(generatedNumber:) spells it.
static inline uint8_t generated_id(char buffer[26], uint64_t number) {
    memcpy(buffer, "timer-", 6);
    char digits[20];
    int count = 0;
    do {
        digits[count++] = (char)('0' + number % 10);
        number /= 10;
    } while (number > 0);
    for (int k = 0; k < count; k++) buffer[6 + k] = digits[count - 1 - k];
    return (uint8_t)(6 + count);
}

/// Names the timer `timer-<sequence>`, reads the clock and registers it at now + 1 hour.
static inline int schedule_numbered(climit_registry *registry, short_id *name, uint64_t sequence) {
    char buffer[26];
    uint8_t length = generated_id(buffer, sequence);
    int64_t deadline = now_ns() + HOUR_NS;
    int result = schedule_sequenced(
        registry, buffer, length, hash_id(buffer, length, registry->seed), deadline, sequence);
    if (name != NULL && length <= INLINE_KEY) {
        memcpy(name->bytes, buffer, length);
        name->length = length;
    }
    return result;
}

/// What PreciseTimer does for `schedule(after: .seconds(3_600))` without an ID: draw the
/// sequence number (from `sequence`: the registry's own, or one that other registries share),
/// name the timer after it, read the clock, register.
static inline int schedule_generated(climit_registry *registry, _Atomic uint64_t *sequence, short_id *name) {
    uint64_t number = atomic_fetch_add_explicit(sequence, 1, memory_order_relaxed) + 1;
    return schedule_numbered(registry, name, number);
}

typedef struct {
    /// The registry the slice's victims are in and its new timers go to.
    climit_registry *registry;
    /// Where each schedule draws its number; NULL: the slice numbers its timers itself, first,
    /// first + stride, ..., sharing no counter.
    _Atomic uint64_t *sequence;
    const short_id *victims;
    int count;
    uint64_t first;
    uint64_t stride;
    int64_t wall;
    int failures;
} worker;

/// The slices of one run, handed out one at a time to the pool's threads.
typedef struct {
    worker *workers;
    int count;
    _Atomic int next;
} slices_queue;

static void run_worker(worker *w) {
    int failures = 0;
    int64_t start = now_ns();
    uint64_t own = w->first;
    for (int k = 0; k < w->count; k++) {
        int scheduled = 0;
        if (w->sequence != NULL) {
            scheduled = schedule_generated(w->registry, w->sequence, NULL);
        } else {
            scheduled = schedule_numbered(w->registry, NULL, own);
            own += w->stride;
        }
        if (scheduled != 0) failures++;
        if (climit_cancel(w->registry, w->victims[k].bytes, w->victims[k].length) != 1) failures++;
    }
    w->wall = now_ns() - start;
    w->failures = failures;
}

/// One thread of the pool: takes the next slice until none is left.
static void *run_pool_thread(void *argument) {
    slices_queue *queue = argument;
    for (;;) {
        int index = atomic_fetch_add_explicit(&queue->next, 1, memory_order_relaxed);
        if (index >= queue->count) return NULL;
        run_worker(&queue->workers[index]);
    }
}

int climit_run(
    int shard_bits, int pending, int pairs_per_thread, int threads, climit_sharing sharing, const int32_t *victims,
    climit_result *result) {
    if (threads < 1 || pending < threads || pairs_per_thread < 0 || pairs_per_thread > pending / threads) return -1;
    if (sharing < CLIMIT_SHARE_ALL || sharing > CLIMIT_SHARE_SEQUENCE_ONLY) return -1;
    int per_thread = pending / threads;
    // One registry for every slice, or one per slice (each filled with its own slice's timers).
    bool own_registries = sharing == CLIMIT_SHARE_NOTHING || sharing == CLIMIT_SHARE_SEQUENCE_ONLY;
    int registry_count = own_registries ? threads : 1;
    climit_registry **registries = calloc((size_t)registry_count, sizeof(climit_registry *));
    short_id *slices = malloc((size_t)per_thread * threads * sizeof(short_id));
    short_id *gathered = malloc(((size_t)pairs_per_thread * threads + 1) * sizeof(short_id));
    worker *workers = calloc((size_t)threads, sizeof(worker));
    pthread_t *handles = calloc((size_t)threads, sizeof(pthread_t));
    int status = -1;
    if (registries == NULL || slices == NULL || gathered == NULL || workers == NULL || handles == NULL) goto done;
    for (int r = 0; r < registry_count; r++) {
        if ((registries[r] = climit_create(shard_bits)) == NULL) goto done;
    }

    int64_t fill_start = now_ns();
    for (int t = 0; t < threads; t++) {
        climit_registry *registry = registries[own_registries ? t : 0];
        // Registries of their own that share one sequence share the first registry's.
        _Atomic uint64_t *sequence =
            sharing == CLIMIT_SHARE_SEQUENCE_ONLY ? &registries[0]->sequence : &registry->sequence;
        for (size_t k = (size_t)t * per_thread; k < (size_t)(t + 1) * per_thread; k++) {
            if (schedule_generated(registry, sequence, &slices[k]) != 0) goto done;
        }
        // The timed loop draws from the same sequence, unless each slice numbers its timers itself:
        // then slice t takes fill + 1 + t, then every `threads`-th, so no two timers share one.
        workers[t] = (worker){
            .registry = registry,
            .sequence = sharing == CLIMIT_SHARE_REGISTRY_ONLY ? NULL : sequence,
            .count = pairs_per_thread,
            .first = (uint64_t)per_thread * threads + 1 + (uint64_t)t,
            .stride = (uint64_t)threads};
    }
    int64_t fill = now_ns() - fill_start;

    for (int t = 0; t < threads; t++) {
        for (int k = 0; k < pairs_per_thread; k++) {
            int32_t position = victims[(size_t)t * pairs_per_thread + k];
            if (position < 0 || position >= per_thread) goto done;
            gathered[(size_t)t * pairs_per_thread + k] = slices[(size_t)t * per_thread + position];
        }
        workers[t].victims = &gathered[(size_t)t * pairs_per_thread];
    }
    free(slices);
    slices = NULL;

    // As DispatchQueue.concurrentPerform(iterations: threads) runs the Swift rows' slices: on at
    // most one thread per online CPU, the caller being one of them, each thread taking the next
    // slice when it is done with one. So on 2 CPUs "8 threads" is 8 slices on 2 threads, as there.
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int width = cpus > 0 && cpus < threads ? (int)cpus : threads;
    slices_queue queue = {.workers = workers, .count = threads};
    atomic_init(&queue.next, 0);
    int64_t cpu_before = process_cpu_ns();
    int started = 1;
    for (; started < width; started++) {
        if (pthread_create(&handles[started], NULL, run_pool_thread, &queue) != 0) break;
    }
    run_pool_thread(&queue);
    for (int t = 1; t < started; t++) pthread_join(handles[t], NULL);
    int64_t cpu = process_cpu_ns() - cpu_before;
    if (started < width) goto done;  // A thread could not be started: the figures are not comparable.

    int64_t wall = 0;
    int failures = 0;
    for (int t = 0; t < threads; t++) {
        if (workers[t].wall > wall) wall = workers[t].wall;
        failures += workers[t].failures;
    }
    if (failures != 0) goto done;
    size_t count = 0;
    for (int r = 0; r < registry_count; r++) {
        if (climit_check(registries[r]) != 0) goto done;
        count += climit_count(registries[r]);
    }
    if (count != (size_t)per_thread * threads) goto done;
    result->wall_per_pair = pairs_per_thread > 0 ? (double)wall / pairs_per_thread : 0;
    result->cpu_per_pair = pairs_per_thread > 0 ? (double)cpu / ((double)pairs_per_thread * threads) : 0;
    result->fill_per_timer = (double)fill / ((double)per_thread * threads);
    status = 0;
done:
    if (registries != NULL) {
        for (int r = 0; r < registry_count; r++) climit_destroy(registries[r]);
    }
    free(registries);
    free(slices);
    free(gathered);
    free(workers);
    free(handles);
    return status;
}

// MARK: The touch floor

/// A slot of the touch floor's table: the ID's hash, its inline key and the timer's deadline,
/// 32 bytes, two to a cache line.
typedef struct {
    uint64_t hash;
    uint64_t word[2];
    int64_t deadline;
} touch_slot;

int climit_touch_floor(
    int pending, const uint32_t *delays_ms, int touches, const int32_t *touched, double *wall_per_touch,
    double *cpu_per_touch) {
    if (pending <= 0 || touches <= 0) return -1;
    size_t capacity = 16;
    while (capacity < 2 * (size_t)pending) capacity *= 2;
    size_t mask = capacity - 1;
    touch_slot *slots = aligned_alloc(64, capacity * sizeof *slots);
    // The caller's IDs, as every peer keeps its handles: 16-byte inline keys, `timer-` and the number.
    key_probe *keys = malloc((size_t)pending * sizeof *keys);
    char (*names)[26] = malloc((size_t)pending * sizeof *names);
    if (slots == NULL || keys == NULL || names == NULL) {
        free(slots);
        free(keys);
        free(names);
        return -1;
    }
    memset(slots, 0, capacity * sizeof *slots);
    const uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
    int64_t start = now_ns();
    for (int i = 0; i < pending; i++) {
        size_t length = generated_id(names[i], (uint64_t)i + 1);
        keys[i] = make_probe(names[i], length);
        uint64_t hash = hash_id(names[i], length, seed) | 1;  // 0 marks an empty slot.
        size_t index = hash & mask;
        while (slots[index].hash != 0) index = (index + 1) & mask;
        slots[index] = (touch_slot){
            .hash = hash, .word = {keys[i].word[0], keys[i].word[1]},
            .deadline = start + (int64_t)delays_ms[i] * 1000000};
    }
    int failures = 0;
    int64_t cpu0 = process_cpu_ns(), t0 = now_ns();
    for (int k = 0; k < touches; k++) {
        int32_t i = touched[k];
        if (i < 0 || i >= pending) {
            failures++;
            continue;
        }
        const key_probe *key = &keys[i];
        uint64_t hash = hash_id(key->bytes, key->length, seed) | 1;
        int64_t deadline = now_ns() + ((int64_t)delays_ms[i] + 3600000) * 1000000;
        size_t index = hash & mask;
        while (slots[index].hash != 0
               && !(slots[index].hash == hash && slots[index].word[0] == key->word[0]
                    && slots[index].word[1] == key->word[1])) {
            index = (index + 1) & mask;
        }
        if (slots[index].hash == 0) {
            failures++;
        } else {
            slots[index].deadline = deadline;  // Lazy: the heap entry stays, filed early.
        }
    }
    int64_t wall = now_ns() - t0, cpu = process_cpu_ns() - cpu0;
    free(slots);
    free(keys);
    free(names);
    if (failures != 0) return -1;
    *wall_per_touch = (double)wall / touches;
    *cpu_per_touch = (double)cpu / touches;
    return 0;
}

// MARK: Pinning

int climit_allowed_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    int rc = pthread_getaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        if (count < capacity) cpus[count] = cpu;
        count++;
    }
    return count;
}

int climit_pin_thread(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
