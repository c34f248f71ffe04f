/* slab.c — a free list of fixed-size objects (see slab.h). */
#include "slab.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void eg_slab_init(eg_slab *s, size_t size, int max_free) {
    s->size = size < sizeof(void *) ? sizeof(void *) : size;
    s->free = NULL;
    s->nfree = 0;
    s->max_free = max_free < 0 ? 0 : max_free;
}

void *eg_slab_get(eg_slab *s) {
    void *p = s->free;
    if (!p) return eg_xcalloc(1, s->size);
    memcpy(&s->free, p, sizeof(void *));
    s->nfree--;
    memset(p, 0, s->size);
    return p;
}

void eg_slab_put(eg_slab *s, void *p) {
    if (!p) return;
    if (s->nfree >= s->max_free) {
        free(p);
        return;
    }
    memcpy(p, &s->free, sizeof(void *));
    s->free = p;
    s->nfree++;
}

void eg_slab_clear(eg_slab *s) {
    while (s->free) {
        void *p = s->free;
        memcpy(&s->free, p, sizeof(void *));
        free(p);
    }
    s->nfree = 0;
}
