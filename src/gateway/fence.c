/* fence.c — the fence table of one source partition: key bytes -> the
 * parked head and its followers in order (see fence.h for the contract).
 *
 * Keys hash into chained buckets (the table doubles when it holds more
 * fences than buckets), so a lookup per record stays short at 10,000 keys.
 * A fence's queue is an array with a moving start: followers are appended
 * at the end and taken from the front, each id a copy owned by the fence. */
#include "fence.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void eg_fences_init(eg_fences *t, int max_keys, int max_followers) {
    memset(t, 0, sizeof *t);
    t->max_keys = max_keys > 0 ? max_keys : 1;
    t->max_followers = max_followers > 0 ? max_followers : 1;
}

/* Frees f's queue and bytes (not its chain link). */
static void fence_free(eg_fences *t, eg_fence *f) {
    for (int i = 0; i < f->nq; i++) free(f->q[f->qoff + i]);
    for (int i = 0; i < f->nearly; i++) free(f->early[i]);
    free(f->early);
    t->nfollowers -= f->nq;
    free(f->q);
    free(f->key);
    free(f);
}

void eg_fences_free(eg_fences *t) {
    for (uint32_t i = 0; i < t->nb; i++) {
        eg_fence *f = t->b[i];
        while (f) {
            eg_fence *n = f->next;
            fence_free(t, f);
            f = n;
        }
    }
    free(t->b);
    int mk = t->max_keys, mf = t->max_followers;
    eg_fences_init(t, mk, mf);
}

/* The bucket slot of hash h. */
static eg_fence **slot(const eg_fences *t, uint64_t h) { return &t->b[(uint32_t)(h ^ (h >> 31)) & (t->nb - 1)]; }

eg_fence *eg_fences_get(const eg_fences *t, const void *key, size_t len) {
    if (!t->nb) return NULL;
    uint64_t h = eg_hash64(key, len);
    for (eg_fence *f = *slot(t, h); f; f = f->next)
        if (f->hash == h && f->key_len == len && (len == 0 || memcmp(f->key, key, len) == 0)) return f;
    return NULL;
}

int eg_fences_must_follow(const eg_fences *t, const void *key, size_t len, const char *id, eg_fence **out) {
    eg_fence *f = eg_fences_get(t, key, len);
    if (out) *out = f;
    return f && strcmp(f->head, id) != 0;
}

int eg_fences_queued(const eg_fence *f, const char *id) {
    for (int i = 0; i < f->nq; i++)
        if (strcmp(f->q[f->qoff + i], id) == 0) return 1;
    return 0;
}

int eg_fences_follow(eg_fences *t, eg_fence *f, const char *id) {
    if (strcmp(f->head, id) == 0 || eg_fences_queued(f, id)) return EG_FENCE_OK;
    if (t->nfollowers >= t->max_followers || f->nq >= EG_FENCE_MAX_QUEUE) return EG_FENCE_FULL;
    if (f->qoff + f->nq == f->capq) {
        if (f->qoff > f->capq / 2) { /* mostly taken from the front: move down */
            memmove(f->q, f->q + f->qoff, (size_t)f->nq * sizeof *f->q);
            f->qoff = 0;
        } else {
            f->capq = f->capq ? f->capq * 2 : 4;
            f->q = eg_xrealloc(f->q, (size_t)f->capq * sizeof *f->q);
        }
    }
    f->q[f->qoff + f->nq++] = eg_xstrdup(id);
    t->nfollowers++;
    return EG_FENCE_OK;
}

/* Doubles the buckets (or makes the first 64). */
static void grow(eg_fences *t) {
    uint32_t nb = t->nb ? t->nb * 2 : 64;
    eg_fence **old = t->b;
    uint32_t onb = t->nb;
    t->b = eg_xcalloc(nb, sizeof *t->b);
    t->nb = nb;
    for (uint32_t i = 0; i < onb; i++) {
        eg_fence *f = old[i];
        while (f) {
            eg_fence *n = f->next;
            eg_fence **s = slot(t, f->hash);
            f->next = *s;
            *s = f;
            f = n;
        }
    }
    free(old);
}

/* Sets where f's followers go. */
static void set_lane(eg_fence *f, eg_fence_why why, eg_action action, const char *rung, int rung_index,
                     int64_t now_ms) {
    if (action != EG_ACT_LADDER && f->action == EG_ACT_LADDER) f->progress_ms = now_ms;
    f->why = why;
    f->action = action;
    eg_strlcpy(f->rung, rung ? rung : "", sizeof f->rung);
    f->rung_index = rung_index;
    if (action == EG_ACT_LADDER) {
        eg_strlcpy(f->wait_rung, f->rung, sizeof f->wait_rung);
        f->wait_index = rung_index;
    }
}

int eg_fences_park(eg_fences *t, const void *key, size_t len, const char *id, eg_fence_why why, eg_action action,
                   const char *rung, int rung_index, int64_t now_ms) {
    eg_fence *f = eg_fences_get(t, key, len);
    if (f) {
        if (strcmp(f->head, id) != 0)
            return eg_fences_follow(t, f, id) == EG_FENCE_OK ? EG_FENCE_QUEUED : EG_FENCE_FULL;
        f->parked = 1;
        set_lane(f, why, action, rung, rung_index, now_ms);
        return EG_FENCE_OK;
    }
    if (t->nkeys >= t->max_keys) return EG_FENCE_FULL;
    if ((uint32_t)t->nkeys >= t->nb) grow(t);
    f = eg_xcalloc(1, sizeof *f);
    f->key = eg_xmalloc(len ? len : 1);
    if (len) memcpy(f->key, key, len);
    f->key_len = len;
    f->hash = eg_hash64(key, len);
    eg_strlcpy(f->head, id, sizeof f->head);
    f->parked = 1;
    f->since_ms = now_ms;
    f->progress_ms = now_ms;
    set_lane(f, why, action, rung, rung_index, now_ms);
    eg_fence **s = slot(t, f->hash);
    f->next = *s;
    *s = f;
    t->nkeys++;
    return EG_FENCE_OK;
}

/* Unlinks and frees f. */
static void drop(eg_fences *t, eg_fence *f) {
    eg_fence **s = slot(t, f->hash);
    while (*s != f) s = &(*s)->next;
    *s = f->next;
    fence_free(t, f);
    t->nkeys--;
}

int eg_fences_resolve(eg_fences *t, const void *key, size_t len, const char *id) {
    eg_fence *f = eg_fences_get(t, key, len);
    if (!f || strcmp(f->head, id) != 0) return 0;
    if (f->nq == 0) {
        drop(t, f);
        return 1;
    }
    char *next = f->q[f->qoff];
    f->q[f->qoff] = NULL;
    f->qoff++;
    f->nq--;
    if (f->nplaced > 0) f->nplaced--;
    if (f->ndurable > 0) f->ndurable--;
    t->nfollowers--;
    if (f->nq == 0) f->qoff = 0;
    eg_strlcpy(f->head, next, sizeof f->head);
    free(next);
    f->parked = 0; /* released: it passes when it comes back; followers still go where it is */
    return 1;
}

int eg_fences_unqueue(eg_fences *t, const void *key, size_t len, const char *id) {
    eg_fence *f = eg_fences_get(t, key, len);
    for (int i = 0; f && i < f->nq; i++) {
        char **q = f->q + f->qoff;
        if (strcmp(q[i], id) != 0) continue;
        free(q[i]);
        memmove(q + i, q + i + 1, (size_t)(f->nq - i - 1) * sizeof *q);
        f->nq--;
        if (i < f->nplaced) f->nplaced--;
        if (i < f->ndurable) f->ndurable--;
        t->nfollowers--;
        if (f->nq == 0) f->qoff = 0;
        return 1;
    }
    return 0;
}

/* id's place in f's queue, or -1. */
static int place_of(const eg_fence *f, const char *id) {
    for (int i = 0; i < f->nq; i++)
        if (strcmp(f->q[f->qoff + i], id) == 0) return i;
    return -1;
}

int eg_fences_placeable(const eg_fence *f, const char *id) {
    int i = place_of(f, id);
    return i >= 0 && i <= f->nplaced;
}

void eg_fences_placed(eg_fence *f, const char *id) {
    if (place_of(f, id) == f->nplaced) f->nplaced++;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The durable prefix of f takes in the followers after it that were durable
 * first (f->early); those that left the queue or are counted now are
 * forgotten. O(nearly * nq): each is looked up in the queue twice. */
static void take_early(eg_fence *f) {
    int *at = eg_xmalloc((size_t)f->nearly * sizeof *at);
    for (int e = 0; e < f->nearly; e++) at[e] = place_of(f, f->early[e]);
    qsort(at, (size_t)f->nearly, sizeof *at, cmp_int);
    for (int e = 0; e < f->nearly; e++)
        if (at[e] == f->ndurable && at[e] < f->nplaced) f->ndurable++;
    free(at);
    int keep = 0;
    for (int e = 0; e < f->nearly; e++) {
        if (place_of(f, f->early[e]) >= f->ndurable) f->early[keep++] = f->early[e];
        else free(f->early[e]);
    }
    f->nearly = keep;
}

int eg_fences_durable(eg_fence *f, const char *id) {
    int i = place_of(f, id);
    if (i < f->ndurable || i >= f->nplaced) return 0; /* counted already, or not placed (or not queued) */
    if (i > f->ndurable) {                            /* out of turn: counted when the prefix reaches it */
        for (int e = 0; e < f->nearly; e++)
            if (strcmp(f->early[e], id) == 0) return 0;
        f->early = eg_xrealloc(f->early, (size_t)(f->nearly + 1) * sizeof *f->early);
        f->early[f->nearly++] = eg_xstrdup(id);
        return 0;
    }
    f->ndurable++;
    if (f->nearly) take_early(f);
    return 1;
}

int eg_fences_release(eg_fences *t, const void *key, size_t len) {
    eg_fence *f = eg_fences_get(t, key, len);
    if (!f) return 0;
    drop(t, f);
    return 1;
}

eg_fence *eg_fences_next(const eg_fences *t, size_t *cursor) {
    /* cursor: bucket index in the high bits, place in its chain in the low 16 */
    size_t bi = *cursor >> 16, depth = *cursor & 0xffff;
    for (; bi < t->nb; bi++, depth = 0) {
        eg_fence *f = t->b[bi];
        for (size_t d = 0; f && d < depth; d++) f = f->next;
        if (f) {
            *cursor = (bi << 16) | (depth + 1);
            return f;
        }
    }
    *cursor = bi << 16;
    return NULL;
}
