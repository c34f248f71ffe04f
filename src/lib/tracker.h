/* tracker.h — per-partition offset tracking: contiguous commits.
 *
 * Records of one partition are added in increasing offset order (the order
 * the consumer delivers them, with gaps for compacted or control records) and
 * may finish in any order. The commit point is one past the longest finished
 * prefix: the offset of the oldest unfinished record, or, when every added
 * record has finished, one past the last added offset. A ring of slots indexed
 * by a monotonically increasing sequence number holds the unfinished window;
 * the caller keeps each record's sequence number to finish it in O(1). The
 * ring grows when full, so the caller's in-flight cap is the only bound.
 *
 * Ownership: the tracker owns its ring; it knows nothing about records. */
#ifndef EG_TRACKER_H
#define EG_TRACKER_H

#include <stdint.h>

typedef struct eg_tracker {
    int64_t *offs; /* slot -> offset, for seq in [head, tail) */
    unsigned char *done;
    uint64_t cap;        /* power of two */
    uint64_t head;       /* seq of the oldest unfinished slot */
    uint64_t tail;       /* next seq to hand out */
    int64_t next_offset; /* one past the last added offset; -1 before the first add */
} eg_tracker;

/* Initialises an empty tracker whose ring starts with at least cap slots. */
void eg_tracker_init(eg_tracker *t, uint64_t cap);
void eg_tracker_free(eg_tracker *t);

/* Adds a record at `offset` (must be >= next_offset; returns -1 and adds
 * nothing otherwise). On success stores its sequence number in *seq. */
int eg_tracker_add(eg_tracker *t, int64_t offset, uint64_t *seq);

/* Marks the record with sequence number seq finished and advances the
 * prefix. Returns -1 if seq is not in the unfinished window. */
int eg_tracker_finish(eg_tracker *t, uint64_t seq);

/* The offset to commit (one past the finished prefix), or -1 when nothing
 * was ever added. */
int64_t eg_tracker_commit_point(const eg_tracker *t);

/* Number of added but not yet advanced-over records. */
uint64_t eg_tracker_pending(const eg_tracker *t);

#endif
