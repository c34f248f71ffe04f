/* slab.h — a free list of fixed-size objects, for the per-record
 * allocations of the gateway's loop (records and their failure state).
 *
 * A failing record's state is ~1.7 KiB: glibc's malloc consolidates its
 * fast bins on every request that large, so calloc/free per dead letter
 * showed as a third of the loop thread's CPU under a flood. Freed objects
 * are kept on a list (up to max_free of them, so memory stays bounded by
 * the in-flight caps) and handed out again, zeroed. One thread only; no
 * lock. */
#ifndef EG_SLAB_H
#define EG_SLAB_H

#include <stddef.h>

typedef struct eg_slab {
    size_t size;  /* of one object, at least a pointer */
    void *free;   /* the kept objects, linked through their first bytes */
    int nfree;    /* how many are kept */
    int max_free; /* kept at most; beyond, free() */
} eg_slab;

/* Sets s up for objects of `size` bytes, keeping at most max_free freed ones. */
void eg_slab_init(eg_slab *s, size_t size, int max_free);

/* A zeroed object: a kept one, or a new allocation (aborts when out of
 * memory, as eg_xcalloc). Owned by the caller until eg_slab_put. */
void *eg_slab_get(eg_slab *s);

/* Gives p (from eg_slab_get of s, or NULL) back. */
void eg_slab_put(eg_slab *s, void *p);

/* Frees the kept objects. */
void eg_slab_clear(eg_slab *s);

#endif
