/* override.h — operator overrides with expiry: "for the next hour, records
 * of class X get action A, because R", applied after the policy decides
 * and before the gateway acts; or "for the next hour, rung 5m waits 15m";
 * or "for the next hour, do not read topic T (partition P)".
 *
 * Pure logic (no loop, no Kafka; every call is given the wall-clock time),
 * unit-tested in spec/c/test_override.c. An override has a name (its key:
 * setting a name again replaces it), exactly one matcher (a class, an error
 * code, or a source topic with an optional partition, each with an action;
 * a rung with its new delay; a topic with an optional partition to pause),
 * an expiry (a TTL is mandatory, at most max_ttl_ms), a reason and an
 * author. The first decision override (in the order set) that matches a
 * decision wins; the first rung override of a rung gives its delay.
 *
 * The audit record (the value of the override's record in the audit topic,
 * see audit.h) is one JSON object of strings:
 *   {"group":G,"name":N,"spec":S,"reason":R,"by":B,"at":T,"expires_at":T,
 *    "cleared_at":T|null}
 * where S is the matcher as a form ("class=transient&action=hold",
 * "rung=5m&delay=15m", "pause=payments%3A2") and T RFC 3339 UTC times.
 *
 * A record read from the audit topic is checked before it is applied
 * (eg_override_check): anyone who can produce to the topic can write one,
 * so its TTL is held to the same cap as `ctl override set`'s, a rung's
 * delay to that cap too, and its `at` may not lie more than
 * EG_OVERRIDE_SKEW_MS in the future. Every sum of a time and an
 * override's delay or TTL saturates (eg_override_add_ms), never wraps.
 *
 * The table is bounded (EG_OVERRIDE_MAX). An override is `trusted` when its
 * record was signed with the deployment's control key; when the table is
 * full, a new override evicts the oldest-set untrusted one, so entries an
 * operator did not sign never keep the operator's own out.
 *
 * Ownership: the table owns its overrides and their strings. One thread. */
#ifndef EG_OVERRIDE_H
#define EG_OVERRIDE_H

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#define EG_OVERRIDE_MAX 256 /* overrides in force at once */
#define EG_OVERRIDE_DEFAULT_MAX_TTL_MS (24LL * 3600 * 1000)
#define EG_OVERRIDE_SKEW_MS (5LL * 60 * 1000) /* how far in the future a record's `at` may lie */

typedef enum { EG_OV_CLASS = 1, EG_OV_CODE, EG_OV_TOPIC, EG_OV_RUNG, EG_OV_PAUSE } eg_override_match;

typedef struct eg_override {
    char name[65];
    eg_override_match match;
    char value[256];   /* the class, the code, the topic, or the rung */
    int32_t partition; /* EG_OV_TOPIC, EG_OV_PAUSE: the partition, or -1 for all */
    int action;        /* an eg_action (record.h); 0 for EG_OV_RUNG and EG_OV_PAUSE */
    int64_t delay_ms;  /* EG_OV_RUNG: the rung's delay while in force */
    char reason[256];
    char by[65];
    int64_t set_at_ms, expires_at_ms; /* wall clock */
    int trusted;                      /* its record was signed with the deployment's control key */
} eg_override;

/* 1 when a and b set the same override (every field, trust included). */
int eg_override_same(const eg_override *a, const eg_override *b);

typedef struct eg_overrides {
    eg_override *v;
    int n;
} eg_overrides;

/* Parses an override from an application/x-www-form-urlencoded body:
 * name; one of class / code / topic (TOPIC or TOPIC:PARTITION) with action
 * (hold, dlq, quarantine, ignore, retry, stop), or rung with delay (a
 * duration), or pause (TOPIC or TOPIC:PARTITION); ttl (a duration: "90s",
 * "1h"), reason, and optionally by. now_ms is the wall clock. Returns 0
 * with *o filled, or -1 with a one-line reason in err. */
int eg_override_parse(const char *body, size_t len, int64_t now_ms, int64_t max_ttl_ms, eg_override *o, char *err,
                      size_t errlen);

/* The value of field `field` of the form body (len bytes), decoded into out
 * (outlen bytes). Returns 0, or -1 when it is absent, malformed or longer. */
int eg_override_form_field(const char *body, size_t len, const char *field, char *out, size_t outlen);

/* Appends o's audit record (see above) for consumer group `group` to out;
 * cleared_at_ms > 0 marks it cleared at that time. */
void eg_override_audit_json(const eg_override *o, const char *group, int64_t cleared_at_ms, struct evbuffer *out);
/* Reads an audit record (json, len bytes) into *o, its group (into group,
 * grouplen bytes) and *cleared_at_ms (0 when not cleared). Returns 0, or -1
 * with a one-line reason in err (not an object, a field missing, a spec
 * the parser refuses). */
int eg_override_from_audit(const char *json, size_t len, eg_override *o, char *group, size_t grouplen,
                           int64_t *cleared_at_ms, char *err, size_t errlen);

/* a + b for a wall-clock time a and a duration b >= 0, saturated at
 * INT64_MAX (and at INT64_MIN for a negative b) instead of wrapping. */
int64_t eg_override_add_ms(int64_t a, int64_t b);

/* Checks an override read from the audit topic against what a writer may
 * set at now_ms: its TTL (expires_at - at) at most max_ttl_ms and after
 * its `at`, a rung's delay at most max_ttl_ms, its `at` (and cleared_at_ms
 * when > 0) at most EG_OVERRIDE_SKEW_MS ahead of now_ms. Returns 0, or -1
 * with *reason a short label (ttl_cap, delay_cap, future) and a one-line
 * reason in err. */
int eg_override_check(const eg_override *o, int64_t cleared_at_ms, int64_t now_ms, int64_t max_ttl_ms,
                      const char **reason, char *err, size_t errlen);

/* Adds o, replacing the one of the same name. When the table is full
 * (EG_OVERRIDE_MAX), the oldest-set untrusted override is evicted for it
 * (copied to *evicted when not NULL). Returns 1 when it replaced one, 0
 * when added, 2 when added in place of an evicted one, -1 when the table
 * is full of trusted overrides. */
int eg_overrides_set(eg_overrides *t, const eg_override *o, eg_override *evicted);
/* How many overrides of t are trusted. */
int eg_overrides_trusted(const eg_overrides *t);
/* Removes the override called name; copies it to *out when out is not
 * NULL. Returns 0, or -1 when there is none. */
int eg_overrides_clear(eg_overrides *t, const char *name, eg_override *out);
/* Removes every override expired at now_ms, calling expired(arg, o) for
 * each first (may be NULL). Returns how many. */
int eg_overrides_expire(eg_overrides *t, int64_t now_ms, void (*expired)(void *arg, const eg_override *o), void *arg);
/* The first decision override (class, code or topic) in force at now_ms
 * matching a decision of class klass and code code on topic[partition], or
 * NULL. */
const eg_override *eg_overrides_match(const eg_overrides *t, const char *topic, int32_t partition, const char *klass,
                                      const char *code, int64_t now_ms);
/* The first rung override in force at now_ms for rung `rung`, or NULL. */
const eg_override *eg_overrides_rung(const eg_overrides *t, const char *rung, int64_t now_ms);
/* The first pause override in force at now_ms for topic[partition], or
 * NULL. */
const eg_override *eg_overrides_paused(const eg_overrides *t, const char *topic, int32_t partition, int64_t now_ms);
/* Appends {"name":..,"match":"class"|"code"|"topic"|"rung"|"pause",
 * "value":..,["partition":..,]["action":..,]["delay_ms":..,]"reason":..,
 * "by":..,"set_at":..,"expires_at":..} (RFC 3339). */
void eg_override_json(const eg_override *o, struct evbuffer *out);
void eg_overrides_free(eg_overrides *t);

#endif
