// The by-handle floor of the peers section: PreciseTimer's registry design (what its schedule and
// its cancel by TimerHandle do, step for step: the table, the near tier's 4-ary heap, the far tier)
// in plain C, so that the by-handle rows show what that work costs on this machine without Swift,
// beside what Go's AfterFunc/Stop costs for less work (no ID registry). See climit_handle_floor in
// CLimit.h.
#define _GNU_SOURCE
#include "CLimit.h"
#include "measure.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define HF_SHARD_BITS 6
#define HF_SHARDS (1 << HF_SHARD_BITS)
/// The slot keeps 16 bits of the hash: a shard's table stays at or below this many slots.
#define HF_MAX_SLOTS (1u << 16)
#define HF_ADDRESS UINT64_C(0x0000FFFFFFFFFFF0)
/// A removal this close to the previous one swaps the last far entry in (its line is in cache);
/// farther, it marks the entry dead (PreciseTimer's far tier, `TimerHeap.removeFar`).
#define HF_NEAR 8
/// The near tier (`TimerHeap`): its heap splits once it holds this many (or twice what it kept at
/// its last split), keeping about an eighth of them, at least `HF_NEAR_TARGET`, and at least a
/// millisecond's worth after the earliest.
#define HF_MINIMUM_SPLIT 1024
#define HF_NEAR_TARGET 256
#define HF_MINIMUM_FAR_SPAN INT64_C(1000000)

/// One timer: what PreciseTimer's node holds that these calls touch, 64 bytes from malloc (its
/// node is 72, an 80-byte chunk).
typedef struct {
    uint64_t generation;
    int64_t deadline;
    int32_t index;  // in the near heap (0 and up) or the far tier (-2 - i), as TimerNode.heapIndex
    uint8_t state;  // 1 pending, 0 ended
    uint8_t padding[3];
    void *handler;  // the probe's closure has no context: nothing to allocate
    uint64_t rest[4];
} hf_node;

_Static_assert(sizeof(hf_node) == 64, "a floor node is 64 bytes");

/// A heap or far-tier entry: the deadline, the sequence that orders equal deadlines, the node.
typedef struct {
    int64_t deadline;
    uint64_t sequence;
    hf_node *node;
} hf_entry;

typedef struct {
    pthread_mutex_t lock;
    uint64_t *slots;  // 0, or a node's address with bits 0-15 of its hash in bits 48-63
    uint32_t mask;
    uint32_t count;
    hf_entry *far;
    uint64_t *dead;  // one bit per far entry
    int32_t far_count, far_capacity, dead_count, previous_removal;
    int64_t far_bound;  // INT64_MAX while the far tier is empty
    hf_entry *near;     // a 4-ary heap
    int32_t near_count, near_capacity, split_at;
    char padding[64];
} hf_shard;

typedef struct {
    hf_shard shards[HF_SHARDS];
    _Atomic uint64_t sequence;
} hf_registry;

/// A handle: the node's address and the generation (16 bytes; PreciseTimer's is 32).
typedef struct {
    hf_node *node;
    uint64_t generation;
} hf_handle;

/// PreciseTimer's hash of a generated number (`TimerID.tableHash(generatedNumber:)`): the shard
/// is the low bits; in the shard, four consecutive numbers share a line of slots and each group
/// of four starts at its index times an odd constant.
static inline uint64_t hf_hash(uint64_t number) {
    uint64_t in_shard = number >> HF_SHARD_BITS;
    return ((in_shard >> 2) * UINT64_C(0x9E3779B97F4A7C15)) << 2 | (in_shard & 3);
}

static inline hf_shard *hf_shard_of(hf_registry *registry, uint64_t number) {
    return &registry->shards[number & (HF_SHARDS - 1)];
}

static inline int32_t hf_far_index(int32_t i) { return -2 - i; }

static inline bool hf_before(hf_entry a, hf_entry b) {
    return a.deadline < b.deadline || (a.deadline == b.deadline && a.sequence < b.sequence);
}

/// Places `entry` at `i` and writes its node's index (a node is written for every entry a sift moves).
static inline void hf_place(hf_shard *s, int32_t i, hf_entry entry) {
    s->near[i] = entry;
    entry.node->index = i;
}

static void hf_sift_up(hf_shard *s, int32_t i) {
    hf_entry entry = s->near[i];
    while (i > 0) {
        int32_t parent = (i - 1) / 4;
        if (!hf_before(entry, s->near[parent])) break;
        hf_place(s, i, s->near[parent]);
        i = parent;
    }
    hf_place(s, i, entry);
}

/// Sinks the entry at `i`; `writing`: writes the index of every entry it moves (not while the heap
/// is built, which writes them all after).
static void hf_sift_down(hf_shard *s, int32_t i, bool writing) {
    hf_entry entry = s->near[i];
    for (;;) {
        int32_t first = 4 * i + 1, end = first + 4 < s->near_count ? first + 4 : s->near_count;
        if (first >= s->near_count) break;
        int32_t least = first;
        for (int32_t child = first + 1; child < end; child++) {
            if (hf_before(s->near[child], s->near[least])) least = child;
        }
        if (!hf_before(s->near[least], entry)) break;
        s->near[i] = s->near[least];
        if (writing) s->near[i].node->index = i;
        i = least;
    }
    s->near[i] = entry;
    if (writing) entry.node->index = i;
}

/// Floyd's build over the whole heap, then every entry's index (`TimerHeap.heapify`).
static void hf_heapify(hf_shard *s) {
    for (int32_t i = (s->near_count - 2) / 4; i >= 0; i--) hf_sift_down(s, i, false);
    for (int32_t i = 0; i < s->near_count; i++) s->near[i].node->index = i;
}

static int hf_compare_deadlines(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/// A deadline with about `wanted` of the `count` entries before it, from an even sample of at most
/// 128 (`TimerHeap.bound(placing:of:)`).
static int64_t hf_bound(const hf_entry *entries, int32_t count, int32_t wanted) {
    int64_t sample[128];
    int32_t samples = count < 128 ? count : 128, stride = count / samples;
    for (int32_t i = 0; i < samples; i++) sample[i] = entries[i * stride].deadline;
    qsort(sample, (size_t)samples, sizeof *sample, hf_compare_deadlines);
    int32_t rank = (int32_t)((int64_t)wanted * samples / count);
    if (rank > samples - 1) rank = samples - 1;
    return sample[rank] == INT64_MAX ? INT64_MAX : sample[rank] + 1;
}

/// Room in the far tier for `more` entries.
static bool hf_far_reserve(hf_shard *s, int32_t more) {
    if (s->far_count + more <= s->far_capacity) return true;
    int32_t capacity = s->far_capacity * 2;
    while (capacity < s->far_count + more) capacity *= 2;
    hf_entry *far = realloc(s->far, (size_t)capacity * sizeof *far);
    uint64_t *dead = realloc(s->dead, (size_t)capacity / 64 * sizeof *dead);
    if (far == NULL || dead == NULL) {
        if (far != NULL) s->far = far;
        if (dead != NULL) s->dead = dead;
        return false;
    }
    memset(dead + s->far_capacity / 64, 0, (size_t)(capacity - s->far_capacity) / 64 * sizeof *dead);
    s->far = far;
    s->dead = dead;
    s->far_capacity = capacity;
    return true;
}

/// Drops the dead entries, moving live ones down (and rewriting their nodes' indices).
static void hf_compact(hf_shard *s) {
    int32_t kept = 0;
    for (int32_t i = 0; i < s->far_count; i++) {
        if (s->dead[i / 64] >> (i % 64) & 1) continue;
        if (i != kept) {
            s->far[kept] = s->far[i];
            s->far[kept].node->index = hf_far_index(kept);
        }
        kept++;
    }
    memset(s->dead, 0, (size_t)s->far_capacity / 64 * sizeof *s->dead);
    s->far_count = kept;
    s->dead_count = 0;
}

/// Moves the heap's entries at or after a new bound into the far tier (`TimerHeap.split`). Out of
/// memory, it changes nothing (the heap stays whole and valid).
static void hf_split(hf_shard *s) {
    int32_t wanted = s->near_count / 8 > HF_NEAR_TARGET ? s->near_count / 8 : HF_NEAR_TARGET;
    int64_t bound = hf_bound(s->near, s->near_count, wanted);
    if (bound == INT64_MAX || bound < s->near[0].deadline + HF_MINIMUM_FAR_SPAN) {
        s->split_at = 2 * s->near_count;
        return;
    }
    int32_t moving = 0;
    for (int32_t i = 0; i < s->near_count; i++) moving += s->near[i].deadline >= bound;
    if (!hf_far_reserve(s, moving)) return;
    int32_t kept = 0;
    for (int32_t i = 0; i < s->near_count; i++) {
        hf_entry entry = s->near[i];
        if (entry.deadline < bound) {
            s->near[kept++] = entry;
            continue;
        }
        s->far[s->far_count] = entry;
        entry.node->index = hf_far_index(s->far_count++);
    }
    s->near_count = kept;
    s->far_bound = bound;
    hf_heapify(s);
    s->split_at = 2 * kept > HF_MINIMUM_SPLIT ? 2 * kept : HF_MINIMUM_SPLIT;
}

/// Room in the near heap for one more entry.
static bool hf_near_reserve(hf_shard *s) {
    if (s->near_count < s->near_capacity) return true;
    int32_t capacity = s->near_capacity * 2;
    hf_entry *near = realloc(s->near, (size_t)capacity * sizeof *near);
    if (near == NULL) return false;
    s->near = near;
    s->near_capacity = capacity;
    return true;
}

/// Files `entry` in the near heap (room reserved), then splits it if it has grown enough.
static void hf_near_insert(hf_shard *s, hf_entry entry) {
    s->near[s->near_count++] = entry;
    hf_sift_up(s, s->near_count - 1);
    if (s->near_count >= s->split_at) hf_split(s);
}

/// `TimerHeap.remove(at:)`: the last entry takes the hole, up only if it is before the parent.
static void hf_near_remove(hf_shard *s, int32_t i) {
    hf_entry removed = s->near[i], last = s->near[--s->near_count];
    if (i == s->near_count) return;
    s->near[i] = last;
    if (i > 0 && hf_before(last, removed) && hf_before(last, s->near[(i - 1) / 4])) {
        hf_sift_up(s, i);
    } else {
        hf_sift_down(s, i, true);
    }
}

static int hf_schedule(hf_registry *registry, int64_t deadline, hf_handle *handle) {
    uint64_t number = atomic_fetch_add_explicit(&registry->sequence, 1, memory_order_relaxed) + 1;
    uint64_t hash = hf_hash(number);
    hf_shard *s = hf_shard_of(registry, number);
    __builtin_prefetch(&s->slots[hash & s->mask], 1);
    hf_node *node = malloc(sizeof *node);
    if (node == NULL) return -1;
    *node = (hf_node){.generation = number, .deadline = deadline, .index = -1, .state = 1};
    uint64_t word = (uint64_t)(uintptr_t)node | (hash & 0xFFFF) << 48;
    pthread_mutex_lock(&s->lock);
    int status = -1;
    hf_entry entry = {deadline, number, node};
    bool far = deadline >= s->far_bound && s->far_bound != INT64_MAX;
    if (s->count + 1 <= (s->mask + 1) / 4 * 3 && (far ? hf_far_reserve(s, 1) : hf_near_reserve(s))) {
        uint32_t index = (uint32_t)hash & s->mask;
        while (s->slots[index] != 0) index = (index + 1) & s->mask;
        s->slots[index] = word;
        s->count++;
        if (far) {
            s->far[s->far_count] = entry;
            node->index = hf_far_index(s->far_count++);
        } else {
            hf_near_insert(s, entry);
        }
        status = 0;
    }
    pthread_mutex_unlock(&s->lock);
    if (status != 0) {
        free(node);
        return -1;
    }
    *handle = (hf_handle){node, number};
    return 0;
}

/// Takes the far entry at `at` out: popped if last, swapped out if next to the previous removal,
/// else marked dead (`TimerHeap.removeFar`).
static void hf_far_remove(hf_shard *s, int32_t at) {
    int32_t last = s->far_count - 1;
    if (at == last) {
        s->far_count--;
    } else if (abs(at - s->previous_removal) <= HF_NEAR && !(s->dead[last / 64] >> (last % 64) & 1)) {
        s->far[at] = s->far[last];
        s->far[at].node->index = hf_far_index(at);
        s->far_count--;
    } else {
        s->dead[at / 64] |= UINT64_C(1) << (at % 64);
        s->dead_count++;
        if (s->dead_count >= 64 && s->dead_count * 2 >= s->far_count) hf_compact(s);
    }
    s->previous_removal = at;
}

static int hf_cancel(hf_registry *registry, hf_handle handle) {
    uint64_t hash = hf_hash(handle.generation);
    hf_shard *s = hf_shard_of(registry, handle.generation);
    // The slot and the node at once, before the lock; the node is read only once the table
    // holds it (a stale handle's address is compared, never dereferenced).
    __builtin_prefetch(&s->slots[hash & s->mask], 1);
    __builtin_prefetch(handle.node, 1);
    pthread_mutex_lock(&s->lock);
    uint32_t mask = s->mask;
    uint32_t index = (uint32_t)hash & mask;
    while (s->slots[index] != 0 && (s->slots[index] & HF_ADDRESS) != (uint64_t)(uintptr_t)handle.node) {
        index = (index + 1) & mask;
    }
    hf_node *node = handle.node;
    if (s->slots[index] == 0 || node->generation != handle.generation || node->state != 1) {
        pthread_mutex_unlock(&s->lock);
        return 0;
    }
    // Backward-shift removal, each slot's home from its packed hash bits.
    uint32_t gap = index, next = (index + 1) & mask;
    while (s->slots[next] != 0) {
        uint32_t home = (uint32_t)(s->slots[next] >> 48) & mask;
        if (((gap - home) & mask) < ((next - home) & mask)) {
            s->slots[gap] = s->slots[next];
            gap = next;
        }
        next = (next + 1) & mask;
    }
    s->slots[gap] = 0;
    s->count--;
    if (node->index >= 0) {
        hf_near_remove(s, node->index);
    } else {
        hf_far_remove(s, hf_far_index(node->index));
    }
    node->state = 0;
    pthread_mutex_unlock(&s->lock);
    free(node);
    return 1;
}

static void hf_destroy(hf_registry *registry) {
    for (int i = 0; i < HF_SHARDS; i++) {
        hf_shard *s = &registry->shards[i];
        for (int32_t k = 0; k < s->far_count; k++) {
            if (!(s->dead[k / 64] >> (k % 64) & 1)) free(s->far[k].node);
        }
        for (int32_t k = 0; k < s->near_count; k++) free(s->near[k].node);
        free(s->near);
        free(s->slots);
        free(s->far);
        free(s->dead);
        pthread_mutex_destroy(&s->lock);
    }
    free(registry);
}

static hf_registry *hf_create(int pending) {
    hf_registry *registry = calloc(1, sizeof *registry);
    if (registry == NULL) return NULL;
    uint32_t slots = 16;
    while (slots < (uint32_t)(pending / HF_SHARDS + 1) * 2 && slots < HF_MAX_SLOTS) slots *= 2;
    int32_t far = 1024;
    while (far < pending / HF_SHARDS * 2) far *= 2;
    bool ok = true;
    for (int i = 0; i < HF_SHARDS; i++) {
        hf_shard *s = &registry->shards[i];
        pthread_mutex_init(&s->lock, NULL);
        s->slots = aligned_alloc(64, (size_t)slots * sizeof *s->slots);
        s->far = malloc((size_t)far * sizeof *s->far);
        s->dead = calloc((size_t)far / 64, sizeof *s->dead);
        s->near = malloc((size_t)HF_MINIMUM_SPLIT * sizeof *s->near);
        s->near_capacity = HF_MINIMUM_SPLIT;
        s->split_at = HF_MINIMUM_SPLIT;
        s->far_bound = INT64_MAX;
        s->mask = slots - 1;
        s->far_capacity = far;
        s->previous_removal = -HF_NEAR - 1;
        if (s->slots == NULL || s->far == NULL || s->dead == NULL || s->near == NULL) ok = false;
        if (s->slots != NULL) memset(s->slots, 0, (size_t)slots * sizeof *s->slots);
    }
    if (!ok) {
        hf_destroy(registry);
        return NULL;
    }
    return registry;
}

int climit_handle_floor(
    int pending, int pairs, const uint32_t *delays_ms, const int32_t *victims, double *wall_per_pair,
    double *cpu_per_pair) {
    if (pending <= 0 || pairs <= 0 || (size_t)pending / HF_SHARDS * 4 / 3 >= HF_MAX_SLOTS) return -1;
    hf_registry *registry = hf_create(pending);
    hf_handle *handles = malloc((size_t)(pending + pairs) * sizeof *handles);
    if (registry == NULL || handles == NULL) {
        if (registry != NULL) hf_destroy(registry);
        free(handles);
        return -1;
    }
    int failures = 0;
    for (int i = 0; i < pending; i++) {
        if (hf_schedule(registry, now_ns() + (int64_t)delays_ms[i] * 1000000, &handles[i]) != 0) failures++;
    }
    int64_t cpu0 = process_cpu_ns(), t0 = now_ns();
    for (int k = 0; k < pairs && failures == 0; k++) {
        if (hf_schedule(registry, now_ns() + (int64_t)delays_ms[pending + k] * 1000000, &handles[pending + k]) != 0) {
            failures++;
        }
        int32_t victim = victims[k];
        if (victim < 0 || victim >= pending || hf_cancel(registry, handles[victim]) != 1) failures++;
    }
    int64_t wall = now_ns() - t0, cpu = process_cpu_ns() - cpu0;
    uint32_t count = 0;
    for (int i = 0; i < HF_SHARDS; i++) count += registry->shards[i].count;
    if (count != (uint32_t)pending) failures++;
    hf_destroy(registry);
    free(handles);
    if (failures != 0) return -1;
    *wall_per_pair = (double)wall / pairs;
    *cpu_per_pair = (double)cpu / pairs;
    return 0;
}
