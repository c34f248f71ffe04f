/* keyset.c — counted hash set with linear probing and backward-shift
 * deletion (no tombstones, so lookups stay short). See keyset.h. */
#include "keyset.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static uint32_t slot_of(const eg_keyset *s, uint64_t h) { return (uint32_t)(h ^ (h >> 29)) & (s->cap - 1); }

static uint32_t find(const eg_keyset *s, uint64_t h) {
    uint32_t i = slot_of(s, h);
    while (s->keys[i] && s->keys[i] != h) i = (i + 1) & (s->cap - 1);
    return i;
}

uint32_t eg_keyset_get(const eg_keyset *s, uint64_t h) {
    if (!s->cap || !h) return 0;
    uint32_t i = find(s, h);
    return s->keys[i] ? s->counts[i] : 0;
}

static void rehash(eg_keyset *s, uint32_t ncap) {
    eg_keyset n = {eg_xcalloc(ncap, sizeof(uint64_t)), eg_xcalloc(ncap, sizeof(uint32_t)), ncap, 0};
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->keys[i]) {
            uint32_t j = find(&n, s->keys[i]);
            n.keys[j] = s->keys[i];
            n.counts[j] = s->counts[i];
            n.used++;
        }
    free(s->keys);
    free(s->counts);
    *s = n;
}

void eg_keyset_inc(eg_keyset *s, uint64_t h) {
    if (!h) return;
    if (!s->cap || (s->used + 1) * 2 > s->cap) rehash(s, s->cap ? s->cap * 2 : 64);
    uint32_t i = find(s, h);
    if (!s->keys[i]) {
        s->keys[i] = h;
        s->counts[i] = 0;
        s->used++;
    }
    s->counts[i]++;
}

void eg_keyset_dec(eg_keyset *s, uint64_t h) {
    if (!s->cap || !h) return;
    uint32_t i = find(s, h), m = s->cap - 1;
    if (!s->keys[i] || --s->counts[i] > 0) return;
    /* backward-shift: pull later entries of the probe run into the hole */
    s->keys[i] = 0;
    s->used--;
    for (uint32_t j = (i + 1) & m; s->keys[j]; j = (j + 1) & m) {
        uint32_t home = slot_of(s, s->keys[j]);
        /* move j to i if home is cyclically outside (i, j] */
        if (((j - home) & m) >= ((j - i) & m)) {
            s->keys[i] = s->keys[j];
            s->counts[i] = s->counts[j];
            s->keys[j] = 0;
            i = j;
        }
    }
}

void eg_keyset_free(eg_keyset *s) {
    free(s->keys);
    free(s->counts);
    memset(s, 0, sizeof *s);
}
