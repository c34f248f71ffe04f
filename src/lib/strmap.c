/* strmap.c — a map from byte strings to int64 values (see strmap.h): open
 * addressing with linear probing over a power-of-two table, grown at 70 %
 * load. Keys are copied in; nothing is ever removed (the commands build a
 * map, read it, free it). */
#include "strmap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The slot holding key, or the empty slot where it would go (m->cap > 0
 * and at least one slot empty). */
static size_t slot_of(const eg_strmap *m, const char *key, size_t n) {
    size_t i = (size_t)eg_hash64(key, n) & (m->cap - 1);
    while (m->keys[i] && !(m->lens[i] == n && memcmp(m->keys[i], key, n) == 0)) i = (i + 1) & (m->cap - 1);
    return i;
}

int64_t eg_strmap_get(const eg_strmap *m, const char *key, size_t n) {
    if (!m->cap) return -1;
    size_t i = slot_of(m, key, n);
    return m->keys[i] ? m->vals[i] : -1;
}

/* Doubles the table (64 slots at first), moving every key. */
static void grow(eg_strmap *m) {
    eg_strmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 64;
    g.keys = eg_xcalloc(g.cap, sizeof *g.keys);
    g.lens = eg_xcalloc(g.cap, sizeof *g.lens);
    g.vals = eg_xcalloc(g.cap, sizeof *g.vals);
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i]) {
            size_t j = slot_of(&g, m->keys[i], m->lens[i]);
            g.keys[j] = m->keys[i];
            g.lens[j] = m->lens[i];
            g.vals[j] = m->vals[i];
        }
    g.used = m->used;
    free(m->keys);
    free(m->lens);
    free(m->vals);
    *m = g;
}

void eg_strmap_put(eg_strmap *m, const char *key, size_t n, int64_t val) {
    if ((m->used + 1) * 10 > m->cap * 7) grow(m);
    size_t i = slot_of(m, key, n);
    if (!m->keys[i]) {
        m->keys[i] = eg_xstrndup(key, n);
        m->lens[i] = n;
        m->used++;
    }
    m->vals[i] = val;
}

void eg_strmap_free(eg_strmap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
