#include "CLimit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    int64_t deadline;
    uint64_t sequence;
    int32_t heap_index;  // -1 when not in the heap
    uint8_t key_length;
    char key[27];         // "timer-" and up to 20 digits, inline like a small Swift string
    void *handler;        // the stand-in for a closure: 32 malloc'd bytes
} node_t;

typedef struct {
    uint64_t hash;  // 0: empty slot
    node_t *node;
} slot_t;

typedef struct {
    slot_t *slots;
    uint64_t mask;
    int64_t count;
    node_t **heap;
    int64_t heap_count;
    uint64_t sequence;
    pthread_mutex_t lock;
} registry_t;

static uint64_t hash_key(const char *key, size_t length) {
    uint64_t hash = 14695981039346656037ULL;
    for (size_t i = 0; i < length; i++) {
        hash ^= (unsigned char)key[i];
        hash *= 1099511628211ULL;
    }
    hash ^= hash >> 33;  // spread the high bits into the low ones the table uses
    return hash | 1;     // never 0 (the empty mark)
}

static int64_t now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t cpu_ns(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return ((int64_t)usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000;
}

static int precedes(const node_t *a, const node_t *b) {
    return a->deadline != b->deadline ? a->deadline < b->deadline : a->sequence < b->sequence;
}

static void heap_place(registry_t *r, int64_t index, node_t *node) {
    r->heap[index] = node;
    node->heap_index = (int32_t)index;
}

static void sift_up(registry_t *r, int64_t index, node_t *node) {
    while (index > 0) {
        int64_t parent = (index - 1) / 4;
        if (!precedes(node, r->heap[parent])) break;
        heap_place(r, index, r->heap[parent]);
        index = parent;
    }
    heap_place(r, index, node);
}

static void sift_down(registry_t *r, int64_t index, node_t *node) {
    for (;;) {
        int64_t first = 4 * index + 1;
        if (first >= r->heap_count) break;
        int64_t best = first;
        int64_t last = first + 4 < r->heap_count ? first + 4 : r->heap_count;
        for (int64_t child = first + 1; child < last; child++) {
            if (precedes(r->heap[child], r->heap[best])) best = child;
        }
        if (!precedes(r->heap[best], node)) break;
        heap_place(r, index, r->heap[best]);
        index = best;
    }
    heap_place(r, index, node);
}

static void heap_remove(registry_t *r, node_t *node) {
    int64_t index = node->heap_index;
    node_t *moved = r->heap[--r->heap_count];
    node->heap_index = -1;
    if (moved == node) return;
    if (index > 0 && precedes(moved, r->heap[(index - 1) / 4])) {
        sift_up(r, index, moved);
    } else {
        sift_down(r, index, moved);
    }
}

static slot_t *find_slot(registry_t *r, const char *key, size_t length, uint64_t hash) {
    for (uint64_t i = hash & r->mask;; i = (i + 1) & r->mask) {
        slot_t *slot = &r->slots[i];
        if (slot->hash == 0) return slot;
        if (slot->hash == hash && slot->node->key_length == length && memcmp(slot->node->key, key, length) == 0) {
            return slot;
        }
    }
}

static int schedule(registry_t *r, const char *key, size_t length, int64_t deadline) {
    node_t *node = malloc(sizeof(node_t));
    void *handler = malloc(32);
    if (!node || !handler) return -1;
    memcpy(node->key, key, length);
    node->key_length = (uint8_t)length;
    node->handler = handler;
    node->deadline = deadline;
    uint64_t hash = hash_key(key, length);
    pthread_mutex_lock(&r->lock);
    slot_t *slot = find_slot(r, key, length, hash);
    if (slot->hash != 0) {  // duplicate
        pthread_mutex_unlock(&r->lock);
        free(handler);
        free(node);
        return -1;
    }
    slot->hash = hash;
    slot->node = node;
    r->count++;
    node->sequence = ++r->sequence;
    r->heap_count++;
    sift_up(r, r->heap_count - 1, node);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

static int cancel(registry_t *r, const char *key, size_t length) {
    uint64_t hash = hash_key(key, length);
    pthread_mutex_lock(&r->lock);
    slot_t *slot = find_slot(r, key, length, hash);
    node_t *node = slot->node;
    if (slot->hash == 0) {
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    // Backward-shift deletion: no tombstones, so probes stay short.
    uint64_t hole = (uint64_t)(slot - r->slots);
    for (uint64_t i = (hole + 1) & r->mask; r->slots[i].hash != 0; i = (i + 1) & r->mask) {
        uint64_t home = r->slots[i].hash & r->mask;
        if (((i - home) & r->mask) >= ((i - hole) & r->mask)) {
            r->slots[hole] = r->slots[i];
            hole = i;
        }
    }
    r->slots[hole].hash = 0;
    r->count--;
    heap_remove(r, node);
    pthread_mutex_unlock(&r->lock);
    free(node->handler);  // released outside the lock, as the service does
    free(node);
    return 0;
}

static size_t timer_key(char *buffer, int64_t number) {
    return (size_t)snprintf(buffer, 27, "timer-%lld", (long long)number);
}

int climit_run(int64_t pending, int64_t pairs, int random, double *wall_ns, double *cpu_out, double *fill_ns) {
    registry_t r = {0};
    uint64_t capacity = 1;
    while (capacity < (uint64_t)(pending + pairs) * 2) capacity <<= 1;
    r.slots = calloc(capacity, sizeof(slot_t));
    r.mask = capacity - 1;
    r.heap = malloc(sizeof(node_t *) * (size_t)(pending + 1));
    int64_t *victims = malloc(sizeof(int64_t) * (size_t)pairs);
    if (!r.slots || !r.heap || !victims) return -1;
    pthread_mutex_init(&r.lock, NULL);
    char key[27];
    int64_t hour = 3600LL * 1000000000;

    int64_t fill_start = now_ns(CLOCK_MONOTONIC);
    for (int64_t i = 1; i <= pending; i++) {
        if (schedule(&r, key, timer_key(key, i), now_ns(CLOCK_MONOTONIC) + hour) != 0) return -1;
    }
    *fill_ns = (double)(now_ns(CLOCK_MONOTONIC) - fill_start) / (double)pending;

    // Victims drawn before the timed loop: the oldest first, or a seeded shuffle of the IDs.
    for (int64_t i = 0; i < pairs; i++) victims[i] = i + 1;
    if (random) {
        uint64_t state = 42;
        int64_t *all = malloc(sizeof(int64_t) * (size_t)pending);
        if (!all) return -1;
        for (int64_t i = 0; i < pending; i++) all[i] = i + 1;
        for (int64_t i = pending - 1; i > 0; i--) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            int64_t j = (int64_t)((state >> 33) % (uint64_t)(i + 1));
            int64_t t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        memcpy(victims, all, sizeof(int64_t) * (size_t)pairs);
        free(all);
    }

    int64_t cpu_start = cpu_ns();
    int64_t start = now_ns(CLOCK_MONOTONIC);
    for (int64_t k = 0; k < pairs; k++) {
        if (schedule(&r, key, timer_key(key, pending + 1 + k), now_ns(CLOCK_MONOTONIC) + hour) != 0) return -1;
        if (cancel(&r, key, timer_key(key, victims[k])) != 0) return -1;
    }
    *wall_ns = (double)(now_ns(CLOCK_MONOTONIC) - start) / (double)pairs;
    *cpu_out = (double)(cpu_ns() - cpu_start) / (double)pairs;

    for (int64_t i = 0; i < r.heap_count; i++) {
        free(r.heap[i]->handler);
        free(r.heap[i]);
    }
    free(r.slots);
    free(r.heap);
    free(victims);
    pthread_mutex_destroy(&r.lock);
    return 0;
}
