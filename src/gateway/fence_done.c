/* fence_done.c — the resolved-offset mark and release floor of each fence
 * (see fence_done.h).
 *
 * Entries hash into chained buckets (doubled when they outnumber them) and
 * sit on a doubly linked recency list: a raise moves its entry to the
 * front, and past the cap the entry at the back is unlinked and freed. */
#include "fence_done.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct ent {
    struct ent *chain;         /* bucket chain */
    struct ent *newer, *older; /* recency list */
    uint64_t hash;
    int64_t offset; /* resolved, -1 none */
    int64_t floor;  /* release floor, -1 none */
    size_t n;
    char key[];
} ent;

struct eg_fence_done {
    ent **b;
    uint32_t nb; /* power of two */
    int count, max;
    ent *newest, *oldest;
};

eg_fence_done *eg_fence_done_new(int max) {
    eg_fence_done *d = eg_xcalloc(1, sizeof *d);
    d->max = max > 0 ? max : 1;
    d->nb = 64;
    d->b = eg_xcalloc(d->nb, sizeof *d->b);
    return d;
}

void eg_fence_done_free(eg_fence_done *d) {
    if (!d) return;
    for (ent *e = d->newest; e;) {
        ent *n = e->older;
        free(e);
        e = n;
    }
    free(d->b);
    free(d);
}

static ent **slot(const eg_fence_done *d, uint64_t h) { return &d->b[(uint32_t)(h ^ (h >> 29)) & (d->nb - 1)]; }

static ent *find(const eg_fence_done *d, const char *k, size_t n, uint64_t h) {
    for (ent *e = *slot(d, h); e; e = e->chain)
        if (e->hash == h && e->n == n && memcmp(e->key, k, n) == 0) return e;
    return NULL;
}

int64_t eg_fence_done_get(const eg_fence_done *d, const char *rkey, size_t n) {
    if (!d) return -1;
    const ent *e = find(d, rkey, n, eg_hash64(rkey, n));
    return e ? e->offset : -1;
}

int64_t eg_fence_done_floor(const eg_fence_done *d, const char *rkey, size_t n) {
    if (!d) return -1;
    const ent *e = find(d, rkey, n, eg_hash64(rkey, n));
    return e ? e->floor : -1;
}

int eg_fence_done_covers(const eg_fence_done *d, const char *rkey, size_t n, int64_t birth) {
    if (!d || birth < 0) return 0;
    const ent *e = find(d, rkey, n, eg_hash64(rkey, n));
    return e && birth <= e->offset && birth > e->floor;
}

/* Takes e off the recency list. */
static void unlist(eg_fence_done *d, ent *e) {
    if (e->newer) e->newer->older = e->older;
    else d->newest = e->older;
    if (e->older) e->older->newer = e->newer;
    else d->oldest = e->newer;
    e->newer = e->older = NULL;
}

/* Puts e at the front of the recency list. */
static void front(eg_fence_done *d, ent *e) {
    e->older = d->newest;
    e->newer = NULL;
    if (d->newest) d->newest->newer = e;
    d->newest = e;
    if (!d->oldest) d->oldest = e;
}

/* Doubles the buckets, moving every entry. */
static void grow(eg_fence_done *d) {
    ent **old = d->b;
    uint32_t onb = d->nb;
    d->nb *= 2;
    d->b = eg_xcalloc(d->nb, sizeof *d->b);
    for (uint32_t i = 0; i < onb; i++)
        for (ent *e = old[i]; e;) {
            ent *n = e->chain;
            ent **s = slot(d, e->hash);
            e->chain = *s;
            *s = e;
            e = n;
        }
    free(old);
}

/* rkey's entry, made (nothing known) when absent, at the front of the
 * recency list. */
static ent *touch(eg_fence_done *d, const char *rkey, size_t n) {
    uint64_t h = eg_hash64(rkey, n);
    ent *e = find(d, rkey, n, h);
    if (e) {
        unlist(d, e);
        front(d, e);
        return e;
    }
    if (d->count >= d->max) { /* the least recent goes */
        ent *o = d->oldest;
        unlist(d, o);
        ent **s = slot(d, o->hash);
        while (*s != o) s = &(*s)->chain;
        *s = o->chain;
        free(o);
        d->count--;
    }
    if ((uint32_t)d->count >= d->nb) grow(d);
    e = eg_xcalloc(1, sizeof *e + n);
    memcpy(e->key, rkey, n);
    e->n = n;
    e->hash = h;
    e->offset = e->floor = -1;
    ent **s = slot(d, h);
    e->chain = *s;
    *s = e;
    front(d, e);
    d->count++;
    return e;
}

void eg_fence_done_raise(eg_fence_done *d, const char *rkey, size_t n, int64_t offset) {
    if (!d || offset < 0) return;
    ent *e = touch(d, rkey, n);
    if (offset > e->offset) e->offset = offset;
}

void eg_fence_done_release(eg_fence_done *d, const char *rkey, size_t n, int64_t offset) {
    if (!d || offset < 0) return;
    ent *e = touch(d, rkey, n);
    if (offset > e->floor) e->floor = offset;
}

int eg_fence_done_count(const eg_fence_done *d) { return d ? d->count : 0; }
