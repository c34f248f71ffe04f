/* lane_envelope.c — the envelope headers of a lane record (see
 * lane_envelope.h and DESIGN §4).
 *
 * Every value is computed here, from what the lane writer already has: the
 * config's names, the decision (whose class envelope the policy filled:
 * eg_policy_class_env), the failure and the record's bytes (envelope.h for
 * the fingerprint, the schema id and the history's first time). Nothing
 * read from the record is copied on unchecked: a carried
 * errgate.first-failure or errgate.schema-id is taken only when it parses,
 * and a hint is made printable. A protected payload (errgate.protect, read
 * again in inbox mode) is not a wire-format payload: its schema id is the
 * one the first lane wrote. */
#include "lane_envelope.h"

#include "envelope.h"
#include "headers.h"
#include "protect.h"
#include "text.h"
#include "util.h"

#include <string.h>

void eg_lane_env_init(eg_lane_env *e, const eg_config *cfg) {
    static const char *const kinds[] = {"http", "lua", "inbox"};
    e->app = cfg->app_name ? cfg->app_name : cfg->metrics_pipeline ? cfg->metrics_pipeline : cfg->group;
    e->app_version = cfg->app_version;
    e->stage = cfg->metrics_stage                              ? cfg->metrics_stage
               : (unsigned)cfg->target_kind <= EG_TARGET_INBOX ? kinds[cfg->target_kind]
                                                               : "target";
    e->schema = cfg->source_schema;
}

int eg_lane_env_header(const char *name) {
    static const char *const names[] = {
        EG_H_APP,          EG_H_APP_VERSION, EG_H_STAGE, EG_H_SCHEMA,        EG_H_SCHEMA_ID,
        EG_H_FINGERPRINT,  EG_H_RETRYABLE,   EG_H_HINT,  EG_H_FIRST_FAILURE, EG_H_LAST_FAILURE,
        EG_H_MAX_ATTEMPTS, EG_H_DUE,         NULL};
    for (const char *const *p = names; *p; p++)
        if (strcmp(name, *p) == 0) return 1;
    return 0;
}

/* Adds v in decimal. */
static void add_i64(rd_kafka_headers_t *h, const char *name, int64_t v) {
    char num[24];
    size_t n = eg_fmt_i64(v, num, sizeof num);
    rd_kafka_header_add(h, name, -1, num, (ssize_t)n);
}

/* The last value of header name in src parsed as ms (eg_env_ms_parse), or -1. */
static int64_t header_ms(const rd_kafka_headers_t *src, const char *name) {
    const void *v;
    size_t n;
    if (!src || rd_kafka_header_get_last(src, name, &v, &n) != 0) return -1;
    return eg_env_ms_parse(v, n);
}

/* The record's first failure: a carried errgate.first-failure (at most 5
 * min ahead of this clock: anyone may produce the header), else the
 * earliest of its previous history and this stage's attempts, else now. */
static int64_t first_failure(const eg_fail *fl, const rd_kafka_headers_t *src, const void *hist, size_t hlen) {
    int64_t t = header_ms(src, EG_H_FIRST_FAILURE);
    if (t > 0 && t <= eg_wall_ms() + 300000) return t; /* a time from the future is not carried */
    t = eg_env_history_first(hist, hlen);
    int n = fl->nhist < EG_HIST_MAX ? fl->nhist : EG_HIST_MAX;
    for (int i = 0; i < n; i++)
        if (fl->hist[i].t_ms > 0 && (t < 0 || fl->hist[i].t_ms < t)) t = fl->hist[i].t_ms;
    return t > 0 ? t : eg_wall_ms();
}

void eg_lane_env_add(const eg_lane_env *e, const eg_record *rec, const rd_kafka_headers_t *src, const void *prev_hist,
                     size_t prev_len, rd_kafka_headers_t *h) {
    const eg_fail *fl = rec->fail;
    const eg_decision *d = &fl->decision;
    const eg_failure *f = &fl->failure;
    rd_kafka_header_add(h, EG_H_APP, -1, e->app, -1);
    if (e->app_version) rd_kafka_header_add(h, EG_H_APP_VERSION, -1, e->app_version, -1);
    rd_kafka_header_add(h, EG_H_STAGE, -1, e->stage, -1);
    if (e->schema) rd_kafka_header_add(h, EG_H_SCHEMA, -1, e->schema, -1);
    const void *pv;
    size_t pn;
    int protected = src && rd_kafka_header_get_last(src, EG_H_PROTECT, &pv, &pn) == 0;
    int64_t sid = protected ? header_ms(src, EG_H_SCHEMA_ID) : eg_env_schema_id(rec->msg->payload, rec->msg->len);
    if (sid > 0 && sid <= INT32_MAX) add_i64(h, EG_H_SCHEMA_ID, sid);
    /* the target's own message groups best; the policy's (often one fixed text per route) else */
    const char *msg = f->message && f->message[0] ? f->message : d->message;
    char fp[EG_ENV_FP_LEN + 1];
    eg_env_fingerprint(d->code, msg, strlen(msg), fp);
    rd_kafka_header_add(h, EG_H_FINGERPRINT, -1, fp, EG_ENV_FP_LEN);
    int retryable = d->action == EG_ACT_LADDER || d->action == EG_ACT_REPLAY ? 1
                    : d->retryable >= 0                                      ? d->retryable
                                                                             : d->why == EG_RSN_EXHAUSTED;
    rd_kafka_header_add(h, EG_H_RETRYABLE, -1, retryable ? "true" : "false", -1);
    if (d->hint[0]) {
        char hint[sizeof d->hint];
        eg_printable(d->hint, strlen(d->hint), hint, sizeof hint);
        rd_kafka_header_add(h, EG_H_HINT, -1, hint, -1);
    }
    add_i64(h, EG_H_FIRST_FAILURE, first_failure(fl, src, prev_hist, prev_len));
    int64_t last = fl->nhist > 0 ? fl->hist[(fl->nhist - 1) % EG_HIST_MAX].t_ms : 0;
    add_i64(h, EG_H_LAST_FAILURE, last > 0 ? last : eg_wall_ms());
    if (d->action == EG_ACT_LADDER || d->action == EG_ACT_REPLAY) {
        if (d->action == EG_ACT_LADDER && d->ladder_steps > 0) add_i64(h, EG_H_MAX_ATTEMPTS, d->ladder_steps);
        add_i64(h, EG_H_DUE, d->not_before_ms > 0 ? d->not_before_ms : eg_wall_ms() + d->delay_ms);
    }
}
