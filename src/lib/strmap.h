/* strmap.h — a map from byte strings to int64 values (the DLQ commands
 * count per class, per code, and keep the latest state per item id). */
#ifndef EG_STRMAP_H
#define EG_STRMAP_H

#include <stddef.h>
#include <stdint.h>

/* Open addressing, grows as needed; owns copies of its keys.
 * Zero-initialise before use. */
typedef struct eg_strmap {
    char **keys; /* NUL-terminated copies; NULL slots are empty */
    size_t *lens;
    int64_t *vals;
    size_t cap, used;
} eg_strmap;

/* The value of key (n bytes, may hold NULs), or -1 when absent. */
int64_t eg_strmap_get(const eg_strmap *m, const char *key, size_t n);
/* Sets key to val (inserting a copy of key when absent). */
void eg_strmap_put(eg_strmap *m, const char *key, size_t n, int64_t val);
/* Frees every key and the table; m is empty (and reusable) afterwards. */
void eg_strmap_free(eg_strmap *m);

#endif
