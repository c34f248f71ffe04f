/* keyset.h — a counted set of 64-bit key hashes (open addressing).
 *
 * Used by ordering = "key": a partition counts the keys of its active records
 * so that a record whose key is already active waits behind it. Hash 0 is
 * reserved for "no key" and never stored. Grows as needed; owns its array. */
#ifndef EG_KEYSET_H
#define EG_KEYSET_H

#include <stdint.h>

typedef struct eg_keyset {
    uint64_t *keys;
    uint32_t *counts;
    uint32_t cap; /* power of two, 0 before first use */
    uint32_t used;
} eg_keyset;

/* Count of h in the set (0 if absent). */
uint32_t eg_keyset_get(const eg_keyset *s, uint64_t h);
void eg_keyset_inc(eg_keyset *s, uint64_t h);
/* Decrements h; removes it at zero. No-op if absent. */
void eg_keyset_dec(eg_keyset *s, uint64_t h);
void eg_keyset_free(eg_keyset *s);

#endif
