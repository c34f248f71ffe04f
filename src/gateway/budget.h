/* budget.h — retry budget for one target (as Envoy's retry_budget does it).
 *
 * Concurrent in-place retries are limited to a share of the target's active
 * requests, with a floor:
 *
 *     active = requests + retries
 *     limit  = max(min, floor(percent * active / 100))
 *     a retry may start when retries + 1 <= limit
 *
 * `requests` are first attempts in flight; `retries` are retries admitted and
 * not yet over, whether waiting for their delay or with their attempt in
 * flight. So active is every request in flight plus every record waiting to
 * retry: a waiting record is demand the target still owes an answer, and
 * leaving it out would shrink the base exactly when failures move records
 * from in flight to waiting. A retry attempt is counted once, as a retry (the
 * caller does not report it with request_start). Because retries are in the
 * base, the steady cap under constant failure is retries <= percent /
 * (100 - percent) x first attempts (25% at the default 20%), as in Envoy.
 * The product is formed before dividing so that an exact share (20% of 15
 * = 3) is exact in double arithmetic. The floor `min` keeps retries possible
 * at low traffic, where a percentage of a few requests rounds to nothing.
 *
 * Besides the share, `per_minute` (0: none) caps the retries admitted in
 * time: a token bucket of per_minute retries refilled at per_minute a minute
 * (ratelimit.h), so at most per_minute retries go at once and per_minute a
 * minute after that, however large the share. A retry needs room in both;
 * which one refused is told apart (eg_budget_verdict).
 *
 * Disabled: every retry is allowed and the limit reads -1 (none); the gauges
 * are still kept. Counts never go below zero: an unmatched end is refused.
 * Time (for per_minute) is passed in as monotonic ns. */
#ifndef EG_BUDGET_H
#define EG_BUDGET_H

#include "ratelimit.h"

#include <stddef.h>
#include <stdint.h>

typedef struct eg_budget_cfg {
    int enabled;
    double percent; /* share of active requests, 0..100, default 20 */
    int min;        /* floor on concurrent retries, default 3 */
    int per_minute; /* retries admitted per minute at most; 0: no cap */
} eg_budget_cfg;

/* What a retry decision found (eg_budget_retry_take). */
typedef enum {
    EG_BUDGET_REFUSED = 0, /* over the share: max(min, percent x active) */
    EG_BUDGET_ADMITTED = 1,
    EG_BUDGET_REFUSED_MINUTE = 2, /* the share had room, per_minute had none */
} eg_budget_verdict;

typedef struct eg_budget {
    eg_budget_cfg cfg;
    int64_t requests;  /* first attempts in flight */
    int64_t retries;   /* retries admitted and not over (gauge "retries active") */
    uint64_t refused;  /* retries refused by the budget (counter) */
    eg_tbucket minute; /* per_minute's bucket (cfg.per_minute > 0) */
} eg_budget;

/* Fills c with the defaults (enabled, 20%, min 3, no per_minute). */
void eg_budget_cfg_defaults(eg_budget_cfg *c);

/* Validates c: 0 if usable, else -1 with a one-line message naming the field
 * in err. Rules: 0 <= percent <= 100, min >= 0, per_minute >= 0. Disabled is
 * always usable. */
int eg_budget_cfg_check(const eg_budget_cfg *c, char *err, size_t errlen);

/* Initialises b with zero counts (copying cfg; per_minute's bucket full at
 * now_ns); -1 with err if cfg is bad. A budget owns no memory: there is
 * nothing to free. */
int eg_budget_init(eg_budget *b, const eg_budget_cfg *cfg, int64_t now_ns, char *err, size_t errlen);

/* A first attempt was sent to the target / got its outcome or was abandoned.
 * request_end returns -1 (and changes nothing) when no request is active. */
void eg_budget_request_start(eg_budget *b);
int eg_budget_request_end(eg_budget *b);

/* The current limit on concurrent retries (formula above); -1 if disabled. */
int64_t eg_budget_limit(const eg_budget *b);

/* Whether one more retry fits at now_ns (retries + 1 <= limit, and a token
 * of per_minute). Counts nothing. */
int eg_budget_allows_retry(const eg_budget *b, int64_t now_ns);

/* A retry decision at now_ns: admits the retry (EG_BUDGET_ADMITTED, retries
 * + 1, a per_minute token taken) if it fits, else counts a refusal and
 * returns what refused it. Report the failed attempt's end first
 * (request_end for a first attempt, retry_end for a retry), so a record never
 * holds two places at once. */
eg_budget_verdict eg_budget_retry_take(eg_budget *b, int64_t now_ns);

/* A retry the policy itself declined because the budget had no room
 * (ctx.retry_budget was false): counted as a refusal. */
void eg_budget_count_refusal(eg_budget *b);

/* An admitted retry is over: its attempt got its outcome, or the record was
 * dropped (or escalated) while waiting. Returns -1 (changes nothing) when no
 * retry is active. */
int eg_budget_retry_end(eg_budget *b);

#endif
