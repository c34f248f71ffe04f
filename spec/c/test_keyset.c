/* test_keyset.c — the counted key set against a brute-force model, with many
 * colliding hashes so that backward-shift deletion is exercised. */
#include "keyset.h"
#include "tap.h"

#include <stdlib.h>

int main(void) {
    eg_keyset s = {0};
    CHECK(eg_keyset_get(&s, 5) == 0, "empty set counts nothing");
    eg_keyset_inc(&s, 0);
    CHECK(eg_keyset_get(&s, 0) == 0, "hash 0 (no key) is never stored");
    eg_keyset_inc(&s, 7);
    eg_keyset_inc(&s, 7);
    CHECK(eg_keyset_get(&s, 7) == 2, "counts repeats");
    eg_keyset_dec(&s, 7);
    CHECK(eg_keyset_get(&s, 7) == 1, "decrement keeps the rest");
    eg_keyset_dec(&s, 7);
    CHECK(eg_keyset_get(&s, 7) == 0 && s.used == 0, "removed at zero");
    eg_keyset_dec(&s, 7);
    CHECK(eg_keyset_get(&s, 7) == 0, "decrementing an absent key is a no-op");

    enum { K = 300, OPS = 200000 };
    unsigned model[K] = {0};
    srand(7);
    int bad = 0;
    for (int op = 0; op < OPS; op++) {
        int k = rand() % K;
        /* keys spaced by 128 collide in the low bits of the probe slot */
        uint64_t h = (uint64_t)(k + 1) * 128;
        if (rand() % 2) {
            eg_keyset_inc(&s, h);
            model[k]++;
        } else if (model[k]) {
            eg_keyset_dec(&s, h);
            model[k]--;
        }
        int probe = rand() % K;
        if (eg_keyset_get(&s, (uint64_t)(probe + 1) * 128) != model[probe]) bad++;
    }
    int final_bad = 0;
    for (int k = 0; k < K; k++)
        if (eg_keyset_get(&s, (uint64_t)(k + 1) * 128) != model[k]) final_bad++;
    CHECK(bad == 0 && final_bad == 0, "200k random inc/dec match the model (%d, %d mismatches)", bad, final_bad);
    eg_keyset_free(&s);
    return TAP_DONE();
}
