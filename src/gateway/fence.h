/* fence.h — the fence table of one source partition (source.fence, under
 * ordering = "key").
 *
 * A fence says: a record of key K is parked (on a retry rung, or in the DLQ
 * and not resolved) and the later records of K must not reach the target
 * before it; they follow it, in order. Per key the table keeps the id of
 * the record at the head (errgate.id), whether the head is still parked or
 * has been released (the record before it resolved: the head may go to the
 * target when it comes back), where the head went (the lane followers are
 * written to) and why, and the queue of follower ids in the order they
 * first followed. When the head resolves, the first follower becomes the
 * released head; when the queue is empty the key is unfenced.
 *
 * Under "ladder+dlq" a fence whose head was dead-lettered sends its
 * followers to the DLQ in queue order: the queue's first nplaced followers
 * are in the lane (placed); a follower may be placed only when every one
 * before it is, else it waits on the rung the fence was on last
 * (wait_rung), where its predecessors are, until its turn (the caller
 * bounds that wait from progress_ms). Placed followers always form a
 * prefix of the queue, and so do the first ndurable of them, whose lane
 * records are durable (acknowledged or spilled): the fence topic records
 * only those, so that a follower whose lane write a revoke or a kill -9
 * took is placed again by the next owner before the followers after it. A
 * follower durable before one ahead of it (its write acknowledged first:
 * the earlier one's was written again) is remembered and counted when the
 * prefix reaches it.
 *
 * Bounded: at most max_keys fenced keys and max_followers queued ids over
 * the table, EG_FENCE_MAX_QUEUE behind one key; past either the caller is told (EG_FENCE_FULL) and must not
 * let the record pass (the gateway holds it: the partition pauses). Keys
 * are compared by their bytes (a key of 0 bytes is a key; a record without
 * a key is never fenced, which is the caller's rule). Owns every byte it
 * holds; not thread-safe (the event loop's). */
#ifndef EG_FENCE_H
#define EG_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* Followers queued behind one key at most (the fence topic's records hold
 * them all: fence_rec.h). */
#define EG_FENCE_MAX_QUEUE 2000

/* Why a key is fenced: its head went down the ladder, or to the DLQ (or
 * quarantine) under source.fence = "ladder+dlq". */
typedef enum { EG_FENCE_WHY_LADDER = 0, EG_FENCE_WHY_DLQ = 1 } eg_fence_why;

/* Results of the table's operations. */
enum {
    EG_FENCE_OK = 0,
    EG_FENCE_QUEUED = 1, /* park: the key's fence has another head; the record joined its queue */
    EG_FENCE_FULL = -1,  /* at max_keys (a new key) or max_followers (a new follower) */
};

typedef struct eg_fence {
    unsigned char *key; /* owned, key_len bytes */
    size_t key_len;
    uint64_t hash;
    char head[EG_ID_MAX + 1]; /* the head record's errgate.id */
    int parked;               /* 1: the head is parked; 0: released (it may pass when it comes back) */
    eg_fence_why why;
    eg_action action;   /* where followers go: EG_ACT_LADDER (rung), EG_ACT_DLQ or EG_ACT_QUARANTINE */
    char rung[40];      /* ladder: the rung's name */
    int rung_index;     /* ladder: its 1-based number */
    char wait_rung[40]; /* the last rung the fence was on ("" none): where unplaced followers wait */
    int wait_index;
    int nplaced;         /* the queue's first nplaced followers are placed in the fence's lane */
    int ndurable;        /* of them, the first ndurable are durably there (<= nplaced) */
    int64_t progress_ms; /* wall ms of its placements' last progress: its move from a rung to a
                          * dead-letter lane, or (set by the caller) a follower placed, a rebuild */
    char **early;        /* placed followers durable before the prefix reached them, owned */
    int nearly;
    int64_t since_ms; /* wall ms the key was fenced */
    char **q;         /* follower ids, owned, q[qoff .. qoff+nq) in order */
    int nq, qoff, capq;
    struct eg_fence *next; /* bucket chain */
} eg_fence;

typedef struct eg_fences {
    eg_fence **b; /* buckets (power of two), NULL before the first fence */
    uint32_t nb;
    int nkeys;      /* fenced keys */
    int nfollowers; /* queued follower ids over all keys */
    int max_keys;   /* source.fence_max_keys */
    int max_followers;
} eg_fences;

/* Sets up an empty table with its caps (>= 1 each). */
void eg_fences_init(eg_fences *t, int max_keys, int max_followers);
/* Frees every fence; t is empty (and reusable) after. */
void eg_fences_free(eg_fences *t);

/* The fence of key[0..len), or NULL when the key is not fenced. */
eg_fence *eg_fences_get(const eg_fences *t, const void *key, size_t len);

/* Whether the record `id` of key[0..len) must follow instead of reaching the
 * target: 1 when the key is fenced and id is not its head (*out: the
 * fence), 0 when it may pass (no fence, or id is the head). */
int eg_fences_must_follow(const eg_fences *t, const void *key, size_t len, const char *id, eg_fence **out);

/* 1 when id is queued behind f's head. */
int eg_fences_queued(const eg_fence *f, const char *id);

/* Appends id to f's queue unless it is queued already. Returns EG_FENCE_OK
 * (also when already queued) or EG_FENCE_FULL at max_followers or
 * EG_FENCE_MAX_QUEUE. */
int eg_fences_follow(eg_fences *t, eg_fence *f, const char *id);

/* The record `id` of key[0..len) is parked: written to a rung (action
 * EG_ACT_LADDER, rung, rung_index) or a dead-letter lane. A new key gets a
 * fence with id parked at its head; the head's own fence is updated (parked
 * again, where it went now); a key whose fence has another head takes id
 * into its queue (EG_FENCE_QUEUED). Returns EG_FENCE_OK, EG_FENCE_QUEUED, or
 * EG_FENCE_FULL (nothing changed). */
int eg_fences_park(eg_fences *t, const void *key, size_t len, const char *id, eg_fence_why why, eg_action action,
                   const char *rung, int rung_index, int64_t now_ms);

/* The record `id` of key[0..len) resolved (succeeded, was ignored, or, as
 * the mode says, was dead-lettered). When it is the head: its first follower
 * becomes the released head, or the key is unfenced when none is queued;
 * returns 1. Returns 0 when id is not the key's head (nothing changes). */
int eg_fences_resolve(eg_fences *t, const void *key, size_t len, const char *id);

/* The follower `id` of key[0..len) resolved before its turn (its DLQ item
 * was resolved without a replay): it leaves the queue, the others keep
 * their order. Returns 1 when it was queued, 0 otherwise. */
int eg_fences_unqueue(eg_fences *t, const void *key, size_t len, const char *id);

/* Under a dead-letter fence (action not EG_ACT_LADDER): 1 when follower
 * id (queued) may be placed in the lane now, every follower before it
 * placed (or it was placed already: a copy of it, written again, since its
 * first write may have been lost with a kill -9); 0 when it must wait. */
int eg_fences_placeable(const eg_fence *f, const char *id);

/* Follower id (placeable) is placed in the lane: the placed prefix grows. */
void eg_fences_placed(eg_fence *f, const char *id);

/* Follower id's lane record is durable: the durable prefix grows when id
 * is the next one of it (placed), over the followers after it already
 * durable. Returns 1 when it grew. A placed follower durable before one
 * ahead of it is remembered (returns 0) and counted when the prefix
 * reaches it; one not placed, or counted already, changes nothing. */
int eg_fences_durable(eg_fence *f, const char *id);

/* The operator's release: the key's fence is removed with its queue (the
 * followers pass when they come back). Returns 1 when it was fenced. */
int eg_fences_release(eg_fences *t, const void *key, size_t len);

/* Iteration: the fence after *cursor (start with 0), or NULL at the end.
 * The table must not change during an iteration. */
eg_fence *eg_fences_next(const eg_fences *t, size_t *cursor);

#endif
