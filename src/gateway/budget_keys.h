/* budget_keys.h — retry budgets by key (a tenant, read from a header).
 *
 * Without a key the target has one budget (budget.h). With a key, every key
 * value has a budget of its own with the same configuration (percent of its
 * own active requests, min, per_minute), so one noisy key spends its own
 * retries and nobody else's. Slot 0 is the shared budget: the whole target
 * without a key; with one, the bucket "*" of every record without the
 * header, with a value longer than EG_BUDGET_KEY_MAX bytes, or with a new
 * key while every tracked key is busy.
 *
 * Bounded: at most max_keys keys are tracked besides "*". A new key past
 * that takes the place of the least recently used key that holds nothing
 * (no request or retry counted in it); its per_minute history is forgotten
 * with it (counted in `evicted`). When every tracked key holds something,
 * the new key's records count in "*" (counted in `overflowed`), so memory
 * stays bounded and no count is ever lost or moved.
 *
 * A caller keeps, for each record that holds a count, the slot it was
 * counted in, and ends the count there: a slot that holds something is
 * never given to another key. Lookups are O(1) (an open-addressing index
 * over the key's hash, backward-shift deletion); choosing a key to evict
 * scans the slots (only when a new key arrives with the table full).
 * Ownership: the table owns its slots and index; eg_budgets_free. */
#ifndef EG_BUDGET_KEYS_H
#define EG_BUDGET_KEYS_H

#include "budget.h"

#include <stddef.h>
#include <stdint.h>

#define EG_BUDGET_KEY_MAX 128    /* longest key value tracked on its own, bytes */
#define EG_BUDGET_SHARED_KEY "*" /* slot 0's name when keyed */

typedef struct eg_budget_slot {
    eg_budget b;
    char key[EG_BUDGET_KEY_MAX + 1]; /* the value (NUL-terminated; may hold any byte but NUL) */
    size_t key_len;
    uint64_t hash;
    uint64_t used; /* the table's tick at its last lookup (LRU) */
    int live;      /* tracked (slot 0 always) */
} eg_budget_slot;

typedef struct eg_budgets {
    eg_budget_cfg cfg;
    int keyed;    /* 0: slot 0 alone */
    int max_keys; /* slots 1..max_keys */
    eg_budget_slot *slots;
    uint32_t *index; /* cap entries: slot number, 0 = empty */
    uint32_t cap;    /* power of two, >= 2 x max_keys */
    int nkeys;       /* live keyed slots */
    uint64_t tick;
    uint64_t evicted, overflowed;
    int64_t retries;  /* retries active over every slot (the gauge) */
    uint64_t refused; /* refusals over every slot, evicted ones too (the counter) */
} eg_budgets;

/* Builds bs: one shared budget (keyed 0) or keyed with max_keys >= 1, all
 * with cfg, at now_ns. Returns 0, or -1 with err (cfg refused, or a bad
 * max_keys); bs is then empty (eg_budgets_free is still fine). */
int eg_budgets_init(eg_budgets *bs, const eg_budget_cfg *cfg, int keyed, int max_keys, int64_t now_ns, char *err,
                    size_t errlen);
void eg_budgets_free(eg_budgets *bs);

/* The slot for the key value key[0..len) at now_ns, creating (or evicting
 * for) it as described above; 0 (the shared one) when not keyed, key is
 * NULL (no header) or longer than EG_BUDGET_KEY_MAX, or no slot is free.
 * Marks the slot recently used. */
int eg_budgets_slot(eg_budgets *bs, const void *key, size_t len, int64_t now_ns);

/* The budget of slot i (0 <= i <= max_keys). */
eg_budget *eg_budgets_at(eg_budgets *bs, int i);

/* The name of slot i: "" when not keyed, "*" for slot 0, else its key. */
const char *eg_budgets_name(const eg_budgets *bs, int i);

/* Retries and refusals go through the table, which keeps the sums
 * (bs->retries, bs->refused) right: use these rather than the budget.h
 * calls on eg_budgets_at for them. Requests go to the slot's budget. */
eg_budget_verdict eg_budgets_retry_take(eg_budgets *bs, int i, int64_t now_ns);
int eg_budgets_retry_end(eg_budgets *bs, int i);
void eg_budgets_count_refusal(eg_budgets *bs, int i);

#endif
