/* fence_done.h — how far each fenced key's records have resolved: per fence
 * (its record key in the fence topic, "TOPIC/PARTITION/SHA256HEX": fence_op.h),
 * the highest source offset of a record of that key that resolved as a
 * fence's head (succeeded, was ignored or, under "ladder", dead-lettered).
 *
 * Under fencing the records of a key that are parked or follow (every rung
 * record) resolve in offset order, each at its durable outcome, so a rung
 * record of the key born at or below that offset already has its outcome: a
 * copy of it that comes back (written again while it waited its turn, or
 * redelivered after a rebalance because its offset was not committed yet)
 * is a duplicate, and letting it reach the target again, or follow a later
 * fence, repeats it out of order. The gateway drops such copies
 * (gw_fence.c). A record from the source is never judged so: one decided
 * to the DLQ while its key had no fence is not in that order.
 *
 * An operator's release (POST /fences/release) lifts a fence out of that
 * order: its head and followers pass as they come back, possibly after a
 * later fence of the key resolved past them. So a release also raises the
 * key's release floor to the highest source offset among them, and a copy
 * born at or below the floor is never judged a duplicate (let through:
 * at-least-once, never a loss).
 *
 * Bounded: at most `max` keys, the least recently raised forgotten first (a
 * forgotten key's copies are let through, as before: at-least-once, never a
 * loss). Owns copies of its keys; not thread-safe (the event loop's). A NULL
 * map holds nothing and takes nothing. */
#ifndef EG_FENCE_DONE_H
#define EG_FENCE_DONE_H

#include <stddef.h>
#include <stdint.h>

typedef struct eg_fence_done eg_fence_done;

/* An empty map of at most max (>= 1) keys. */
eg_fence_done *eg_fence_done_new(int max);
void eg_fence_done_free(eg_fence_done *d);

/* The highest offset resolved for rkey[0..n), or -1 when none is known. */
int64_t eg_fence_done_get(const eg_fence_done *d, const char *rkey, size_t n);

/* Raises rkey's offset to `offset` (>= 0; a lower one changes nothing) and
 * makes it the most recent; past max keys the least recent is forgotten. */
void eg_fence_done_raise(eg_fence_done *d, const char *rkey, size_t n, int64_t offset);

/* The release floor of rkey[0..n), or -1 when none is known. */
int64_t eg_fence_done_floor(const eg_fence_done *d, const char *rkey, size_t n);

/* Raises rkey's release floor to `offset` (>= 0; a lower one changes
 * nothing) and makes it the most recent, as eg_fence_done_raise does. */
void eg_fence_done_release(eg_fence_done *d, const char *rkey, size_t n, int64_t offset);

/* 1 when a copy born at `birth` of the key rkey[0..n) has its outcome
 * already: at or below the resolved offset and above the release floor. */
int eg_fence_done_covers(const eg_fence_done *d, const char *rkey, size_t n, int64_t birth);

/* Keys held. */
int eg_fence_done_count(const eg_fence_done *d);

#endif
