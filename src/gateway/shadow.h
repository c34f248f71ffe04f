/* shadow.h — the shadow policy: a candidate policy that decides every
 * failure the live policy decides, is never acted on, and can never slow or
 * break the live path.
 *
 * The candidate (config shadow_policy) is an eg_policy of its own: its own
 * sandboxed Lua state, memory cap and per-decision budget
 * (shadow_timeout_ms). At the decision point the gateway offers the failure
 * (eg_shadow_offer): a copy of what the candidate needs — the failure, the
 * attempt context, the record's fields — is queued, and nothing else
 * happens there. The queue is evaluated later on the loop, in slices, never
 * within the event that acted on the live decision: a slice runs queued
 * decisions for at most EG_SHADOW_SLICE_MS, and the next slice waits so
 * that the shadow's share of the loop's time stays under
 * shadow_cpu_percent. A full queue (the candidate is behind) skips the
 * failure, counted. A candidate that raises, overruns its budget, runs out
 * of memory or answers nonsense is counted as a shadow error; its error
 * never reaches the live path. A candidate that fails to load (at start or
 * on a reload) is refused with a log line; the previous candidate, or none,
 * stays.
 *
 * The agreement table counts, per class (the live decision's) and pair
 * (live action, shadow action), the decisions made since the current
 * candidate was loaded, with up to EG_SHADOW_EXAMPLES record ids (errgate.id
 * or topic/partition/offset) per cell where they disagree. The metrics
 * (errgate_shadow_decisions_total{class,live,shadow},
 * errgate_shadow_errors_total, errgate_shadow_skipped_total{reason}) are
 * cumulative over the process's life.
 *
 * Threads: the loop owns everything here; only a candidate build (an
 * eg_policy loaded on the reload worker, see gw_reload.c) is made
 * elsewhere and handed over by eg_shadow_swap. */
#ifndef EG_SHADOW_H
#define EG_SHADOW_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "policy.h"
#include "record.h"

#define EG_SHADOW_EXAMPLES 5    /* record ids kept per disagreement cell */
#define EG_SHADOW_MAX_CELLS 256 /* beyond: one "_overflow" class */
#define EG_SHADOW_QUEUE 512     /* failures waiting for the candidate; more are skipped */
#define EG_SHADOW_SLICE_MS 2    /* the longest run of queued decisions per loop event */
#define EG_SHADOW_STR_CAP 4096  /* key and header values handed to the candidate */
#define EG_SHADOW_REC_CAP 65536 /* header bytes copied per record; later headers are dropped */
#define EG_SHADOW_ID_MAX 320

/* "error" in the table's shadow column: the candidate failed to decide. */
#define EG_SHADOW_ERROR "error"

/* ---------------------------------------------------------- the table */

typedef struct eg_shadow_cell {
    char klass[64];
    char live[16], shadow[16]; /* action names; shadow may be EG_SHADOW_ERROR */
    uint64_t count;
    int nex; /* examples kept (disagreements only) */
    char (*ex)[EG_SHADOW_ID_MAX];
} eg_shadow_cell;

typedef struct eg_shadow_table {
    eg_shadow_cell *cells;
    int n, cap;
    uint64_t total;
} eg_shadow_table;

/* Counts one decision in the cell (klass, live, shadow); keeps id as an
 * example when live and shadow differ and the cell has fewer than
 * EG_SHADOW_EXAMPLES. Past EG_SHADOW_MAX_CELLS cells, new ones are counted
 * under the class "_overflow". */
void eg_shadow_table_add(eg_shadow_table *t, const char *klass, const char *live, const char *shadow, const char *id);
/* Appends the cells as a JSON array of {class, live, shadow, agree, count,
 * examples}. */
void eg_shadow_table_json(const eg_shadow_table *t, struct evbuffer *out);
/* Empties the table (the memory is freed). */
void eg_shadow_table_clear(eg_shadow_table *t);

/* ------------------------------------------------ the record, copied */

/* What the candidate sees of a record, copied at the decision point (the
 * record itself may be finished and freed before the candidate runs). */
typedef struct eg_shadow_rec {
    char *topic;
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    char id[EG_SHADOW_ID_MAX];
    char *key; /* NULL when none; capped at EG_SHADOW_STR_CAP */
    size_t key_len;
    int nh; /* headers, in record order */
    char **hname, **hval;
    size_t *hlen;
} eg_shadow_rec;

/* Copies r into *out; key and headers only when with_body is set (the
 * candidate reads the record). */
void eg_shadow_rec_copy(eg_shadow_rec *out, const eg_record *r, int with_body);
void eg_shadow_rec_free(eg_shadow_rec *rec);

/* ------------------------------------------------------ the shadow */

typedef struct eg_shadow eg_shadow;

typedef struct eg_shadow_cfg {
    const char *path; /* the candidate file */
    int timeout_ms;   /* budget of one candidate decision */
    size_t mem_limit; /* memory cap of its state */
    int cpu_percent;  /* the share of the loop's time the shadow may take */
} eg_shadow_cfg;

/* Makes the shadow and loads the candidate (on the calling thread: at
 * start). A candidate that does not load is logged (shadow_refused) and the
 * shadow runs without one until a reload brings a good one. base may be
 * NULL (no evaluation event: the caller runs eg_shadow_drain itself); the
 * metric families are added to reg. Never NULL. */
eg_shadow *eg_shadow_new(const eg_shadow_cfg *cfg, struct event_base *base, eg_registry *reg);
void eg_shadow_free(eg_shadow *s);

/* The decision point: the live policy decided `live` (before the gateway's
 * own adjustments) for failure f of record r in context ctx. Queues a copy
 * for the candidate, or counts a skip (queue full, or no candidate). Cheap
 * and never fails. */
void eg_shadow_offer(eg_shadow *s, const eg_failure *f, const eg_record *r, const eg_ctx *ctx, const eg_decision *live);
/* eg_shadow_offer with the record already copied (rec is taken over). */
void eg_shadow_offer_rec(eg_shadow *s, const eg_failure *f, eg_shadow_rec *rec, const eg_ctx *ctx,
                         const eg_decision *live);

/* Runs queued decisions for at most budget_ns (at least one when any is
 * queued). Returns how many ran. */
int eg_shadow_drain(eg_shadow *s, int64_t budget_ns);
/* Queued decisions not yet run. */
int eg_shadow_pending(const eg_shadow *s);

/* A reload's outcome for the candidate (on the loop): *fresh (taken, set
 * to NULL) replaces the candidate and empties the table, or, when NULL, err
 * says why it was refused and the candidate stays; logged and counted. */
void eg_shadow_swap(eg_shadow *s, eg_policy **fresh, const char *err, const char *trigger);
/* The candidate's file, budget and memory cap (what a reload builds). */
const eg_shadow_cfg *eg_shadow_config(const eg_shadow *s);
/* 1 when the candidate file's modification time or size changed since the
 * last look and its content differs from the candidate deciding now. */
int eg_shadow_changed(eg_shadow *s);

/* GET /shadow: the candidate, the counts and the agreement table as JSON. */
void eg_shadow_json(const eg_shadow *s, struct evbuffer *out);

#endif
