/* tracker.c — contiguous-prefix offset tracking (see tracker.h). */
#include "tracker.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void eg_tracker_init(eg_tracker *t, uint64_t cap) {
    uint64_t c = 16;
    while (c < cap) c <<= 1;
    t->cap = c;
    t->offs = eg_xmalloc(c * sizeof *t->offs);
    t->done = eg_xcalloc(c, 1);
    t->head = t->tail = 0;
    t->next_offset = -1;
}

void eg_tracker_free(eg_tracker *t) {
    free(t->offs);
    free(t->done);
    memset(t, 0, sizeof *t);
}

/* Doubles the ring, keeping each live seq at slot seq & (cap - 1). */
static void grow(eg_tracker *t) {
    uint64_t ncap = t->cap * 2;
    int64_t *noffs = eg_xmalloc(ncap * sizeof *noffs);
    unsigned char *ndone = eg_xcalloc(ncap, 1);
    for (uint64_t s = t->head; s < t->tail; s++) {
        noffs[s & (ncap - 1)] = t->offs[s & (t->cap - 1)];
        ndone[s & (ncap - 1)] = t->done[s & (t->cap - 1)];
    }
    free(t->offs);
    free(t->done);
    t->offs = noffs;
    t->done = ndone;
    t->cap = ncap;
}

int eg_tracker_add(eg_tracker *t, int64_t offset, uint64_t *seq) {
    if (offset < 0 || (t->next_offset >= 0 && offset < t->next_offset)) return -1;
    if (t->tail - t->head == t->cap) grow(t);
    uint64_t s = t->tail++;
    t->offs[s & (t->cap - 1)] = offset;
    t->done[s & (t->cap - 1)] = 0;
    t->next_offset = offset + 1;
    *seq = s;
    return 0;
}

int eg_tracker_finish(eg_tracker *t, uint64_t seq) {
    if (seq < t->head || seq >= t->tail) return -1;
    uint64_t m = t->cap - 1;
    if (t->done[seq & m]) return -1;
    t->done[seq & m] = 1;
    while (t->head < t->tail && t->done[t->head & m]) t->head++;
    return 0;
}

int64_t eg_tracker_commit_point(const eg_tracker *t) {
    if (t->head < t->tail) return t->offs[t->head & (t->cap - 1)];
    return t->next_offset;
}

uint64_t eg_tracker_pending(const eg_tracker *t) { return t->tail - t->head; }
