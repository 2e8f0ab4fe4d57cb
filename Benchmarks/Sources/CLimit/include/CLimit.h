#ifndef CLIMIT_H
#define CLIMIT_H

#include <stdint.h>

/// The limit row of the cost section: the same work as a timer service's schedule + cancel at a
/// million pending timers, in plain C with nothing in between, so the table shows how far the
/// Swift service is from what this machine allows, not only from its peers.
///
/// A registry of string-keyed timers: an open-addressing table (linear probing, FNV-1a hashes
/// stored beside the keys, backward-shift deletion) mapping each ID to its timer, a 4-ary min-heap
/// of (deadline, sequence) with each timer knowing its heap index, one uncontended mutex around
/// every operation, and one malloc'd 32-byte block per timer standing in for its handler.
///
/// It fills `pending` timers an hour away (IDs `timer-1` … like a service's generated ones), then
/// times `pairs` pairs of (schedule a new timer, cancel an old one by its ID) from one thread,
/// cancelling the oldest first (`random == 0`) or in a seeded shuffle (`random != 0`).
/// On success returns 0 and writes nanoseconds per pair (wall and process CPU) and per fill.
/// Returns -1 when memory runs out or a cancel misses (a bug).
int climit_run(int64_t pending, int64_t pairs, int random, double *_Nonnull wall_ns, double *_Nonnull cpu_ns,
               double *_Nonnull fill_ns);

#endif
