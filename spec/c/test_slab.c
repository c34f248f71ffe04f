/* test_slab.c — the free list of per-record objects: objects come back
 * zeroed, a freed one is handed out again, at most max_free are kept (the
 * rest freed at once), and clearing frees the kept ones (ASan/LSan in the
 * sanitizer build see any leak or double free). */
#include "slab.h"
#include "tap.h"

#include <string.h>

int main(void) {
    eg_slab s;
    eg_slab_init(&s, 1736, 2);
    unsigned char *a = eg_slab_get(&s), *b = eg_slab_get(&s), *c = eg_slab_get(&s);
    memset(a, 0xab, 1736);
    memset(b, 0xcd, 1736);
    eg_slab_put(&s, a);
    eg_slab_put(&s, b);
    eg_slab_put(&s, c); /* over max_free: freed */
    CHECK(s.nfree == 2, "at most max_free objects are kept (%d)", s.nfree);
    unsigned char *d = eg_slab_get(&s);
    CHECK(d == b, "the last one given back is handed out first");
    int zero = 1;
    for (int i = 0; i < 1736; i++) zero &= d[i] == 0;
    CHECK(zero, "a reused object is zeroed");
    eg_slab_put(&s, NULL);
    CHECK(s.nfree == 1, "putting NULL keeps nothing");
    eg_slab_put(&s, d);
    eg_slab_clear(&s);
    CHECK(s.nfree == 0 && s.free == NULL, "clear frees the kept objects");
    eg_slab_init(&s, 1, 4);
    void *e = eg_slab_get(&s);
    eg_slab_put(&s, e);
    CHECK(s.size == sizeof(void *) && eg_slab_get(&s) == e, "objects smaller than a pointer still link");
    eg_slab_put(&s, e);
    eg_slab_clear(&s);
    return TAP_DONE();
}
