/* budget_keys.c — the table of retry budgets by key (see budget_keys.h). */
#include "budget_keys.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eg_budgets_init(eg_budgets *bs, const eg_budget_cfg *cfg, int keyed, int max_keys, int64_t now_ns, char *err,
                    size_t errlen) {
    memset(bs, 0, sizeof *bs);
    if (keyed && (max_keys < 1 || max_keys > 1000000)) {
        snprintf(err, errlen, "retry budget max_keys must be in [1, 1000000] (got %d)", max_keys);
        return -1;
    }
    eg_budget b0;
    if (eg_budget_init(&b0, cfg, now_ns, err, errlen) != 0) return -1;
    bs->cfg = *cfg;
    bs->keyed = keyed != 0;
    bs->max_keys = keyed ? max_keys : 0;
    bs->slots = eg_xcalloc((size_t)bs->max_keys + 1, sizeof *bs->slots);
    bs->slots[0].b = b0;
    bs->slots[0].live = 1;
    if (keyed) {
        memcpy(bs->slots[0].key, EG_BUDGET_SHARED_KEY, sizeof EG_BUDGET_SHARED_KEY);
        bs->cap = 16;
        while (bs->cap < 2u * (uint32_t)max_keys) bs->cap *= 2;
        bs->index = eg_xcalloc(bs->cap, sizeof *bs->index);
    }
    return 0;
}

void eg_budgets_free(eg_budgets *bs) {
    free(bs->slots);
    free(bs->index);
    memset(bs, 0, sizeof *bs);
}

static uint32_t home(const eg_budgets *bs, uint64_t h) { return (uint32_t)(h ^ (h >> 31)) & (bs->cap - 1); }

/* The index position of key (hash h), or of the empty entry where it would go. */
static uint32_t find(const eg_budgets *bs, uint64_t h, const void *key, size_t len) {
    uint32_t i = home(bs, h);
    for (;;) {
        uint32_t s = bs->index[i];
        if (!s) return i;
        const eg_budget_slot *e = &bs->slots[s];
        if (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0) return i;
        i = (i + 1) & (bs->cap - 1);
    }
}

/* Removes slot s's entry from the index (backward-shift deletion). */
static void unindex(eg_budgets *bs, uint32_t s) {
    const eg_budget_slot *e = &bs->slots[s];
    uint32_t i = find(bs, e->hash, e->key, e->key_len);
    bs->index[i] = 0;
    for (uint32_t j = (i + 1) & (bs->cap - 1); bs->index[j]; j = (j + 1) & (bs->cap - 1)) {
        uint32_t k = home(bs, bs->slots[bs->index[j]].hash);
        /* the entry at j may move to the hole at i when its home is not in (i, j] (cyclically) */
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            bs->index[i] = bs->index[j];
            bs->index[j] = 0;
            i = j;
        }
    }
}

/* A slot for a new key: a free one, else the least recently used idle one
 * (evicted), else 0. */
static int take_slot(eg_budgets *bs) {
    if (bs->nkeys < bs->max_keys)
        for (int s = 1; s <= bs->max_keys; s++)
            if (!bs->slots[s].live) return s;
    int best = 0;
    for (int s = 1; s <= bs->max_keys; s++) {
        const eg_budget_slot *e = &bs->slots[s];
        if (e->b.requests == 0 && e->b.retries == 0 && (!best || e->used < bs->slots[best].used)) best = s;
    }
    if (best) {
        unindex(bs, (uint32_t)best);
        bs->slots[best].live = 0;
        bs->nkeys--;
        bs->evicted++;
    }
    return best;
}

int eg_budgets_slot(eg_budgets *bs, const void *key, size_t len, int64_t now_ns) {
    bs->tick++;
    if (!bs->keyed || !key || len > EG_BUDGET_KEY_MAX || memchr(key, '\0', len)) {
        bs->slots[0].used = bs->tick;
        return 0;
    }
    uint64_t h = eg_hash64(key, len);
    uint32_t i = find(bs, h, key, len);
    if (bs->index[i]) {
        bs->slots[bs->index[i]].used = bs->tick;
        return (int)bs->index[i];
    }
    int s = take_slot(bs);
    if (!s) {
        bs->overflowed++;
        bs->slots[0].used = bs->tick;
        return 0;
    }
    eg_budget_slot *e = &bs->slots[s];
    char err[16];
    eg_budget_init(&e->b, &bs->cfg, now_ns, err, sizeof err); /* cfg was checked at init */
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->key_len = len;
    e->hash = h;
    e->used = bs->tick;
    e->live = 1;
    bs->nkeys++;
    bs->index[find(bs, h, key, len)] = (uint32_t)s;
    return s;
}

eg_budget *eg_budgets_at(eg_budgets *bs, int i) { return &bs->slots[i].b; }

const char *eg_budgets_name(const eg_budgets *bs, int i) { return bs->keyed ? bs->slots[i].key : ""; }

eg_budget_verdict eg_budgets_retry_take(eg_budgets *bs, int i, int64_t now_ns) {
    eg_budget_verdict v = eg_budget_retry_take(&bs->slots[i].b, now_ns);
    if (v == EG_BUDGET_ADMITTED) bs->retries++;
    else bs->refused++;
    return v;
}

int eg_budgets_retry_end(eg_budgets *bs, int i) {
    if (eg_budget_retry_end(&bs->slots[i].b) != 0) return -1;
    bs->retries--;
    return 0;
}

void eg_budgets_count_refusal(eg_budgets *bs, int i) {
    eg_budget_count_refusal(&bs->slots[i].b);
    bs->refused++;
}
