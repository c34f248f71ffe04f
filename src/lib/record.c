/* record.c — helpers for the shared record, failure and decision types. */
#include "record.h"
#include "headers.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const action_names[EG_ACT__N] = {"retry", "ladder", "dlq",    "quarantine", "ignore",
                                                    "hold",  "stop",   "replay", "republish"};

void eg_record_view(eg_record *rec, const rd_kafka_message_t *m) {
    memset(rec, 0, sizeof *rec);
    rec->msg = (rd_kafka_message_t *)m; /* only read */
    rec->topic = rd_kafka_topic_name(m->rkt);
    rec->partition = m->partition;
    rec->offset = m->offset;
}

/* The one table of reason names (eg_reason <-> wire text); the wire texts
 * never change: lane headers, state records and dashboards read them. */
static const char *const reason_names[EG_RSN__N] = {
    [EG_RSN_NONE] = "",
    [EG_RSN_OTHER] = NULL,
    [EG_RSN_EXHAUSTED] = "exhausted",
    [EG_RSN_RETRY_BUDGET] = "retry_budget",
    [EG_RSN_DLQ_GUARD] = "dlq_guard",
    [EG_RSN_OVERRIDE] = "override",
    [EG_RSN_POLICY_ERROR] = "policy_error",
    [EG_RSN_UNKNOWN_RUNG] = "unknown_rung",
    [EG_RSN_LOOP_GUARD] = "loop_guard",
    [EG_RSN_REPLAY_NO_TOPIC] = "replay_no_topic",
    [EG_RSN_REPLAY_STUB] = "replay_stub",
    [EG_RSN_REPLAY_REFUSED] = "replay_refused",
    [EG_RSN_REPLAY] = "replay",
    [EG_RSN_REPLAY_PROTECTED] = "replay_protected",
    [EG_RSN_FENCED] = "fenced",
    [EG_RSN_FENCE_CAP] = "fence_cap",
};

const char *eg_reason_name(eg_reason r) { return (unsigned)r < EG_RSN__N ? reason_names[r] : NULL; }

eg_reason eg_reason_parse(const char *s) {
    if (!s || !*s) return EG_RSN_NONE;
    for (int i = EG_RSN_OTHER + 1; i < EG_RSN__N; i++)
        if (strcmp(s, reason_names[i]) == 0) return (eg_reason)i;
    return EG_RSN_OTHER;
}

void eg_decision_set_reason(eg_decision *d, eg_reason r) {
    const char *name = eg_reason_name(r);
    if (!name) return; /* EG_RSN_OTHER has no text of its own: leave d as it is */
    eg_strlcpy(d->reason, name, sizeof d->reason);
    d->why = r;
}

const char *eg_action_name(eg_action a) { return (unsigned)a < EG_ACT__N ? action_names[a] : "?"; }

int eg_action_parse(const char *s) {
    for (int i = 0; i < EG_ACT_REPUBLISH; i++) /* republish is the C core's own */
        if (strcmp(s, action_names[i]) == 0) return i;
    return -1;
}

const char *eg_failure_kind_name(eg_failure_kind k) {
    switch (k) {
    case EG_FK_HTTP: return "http";
    case EG_FK_TIMEOUT: return "timeout";
    case EG_FK_CONNECT: return "connect";
    case EG_FK_LUA: return "lua";
    case EG_FK_CIRCUIT_OPEN: return "circuit_open";
    case EG_FK_RECORDED: return "recorded";
    }
    return "?";
}

const char *eg_breaker_state_name(eg_breaker_state s) {
    switch (s) {
    case EG_BR_CLOSED: return "closed";
    case EG_BR_OPEN: return "open";
    case EG_BR_HALF_OPEN: return "half_open";
    }
    return "?";
}

void eg_failure_clear(eg_failure *f) {
    free(f->code);
    free(f->class_hint);
    free(f->message);
    free(f->body);
    memset(f, 0, sizeof *f);
    f->retry_after_ms = -1;
}

const void *eg_headers_get(const rd_kafka_headers_t *h, const char *name, size_t *len) {
    const void *v = NULL;
    size_t n = 0;
    if (!h || rd_kafka_header_get_last(h, name, &v, &n) != 0) return NULL;
    if (len) *len = n;
    return v;
}

const void *eg_header(const rd_kafka_message_t *m, const char *name, size_t *len) {
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) != 0) return NULL;
    return eg_headers_get(h, name, len);
}

int eg_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = eg_header(m, name, &n);
    if (!outlen) return -1;
    out[0] = '\0';
    if (!v) return -1;
    if (n >= outlen) n = outlen - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return 0;
}

int64_t eg_uint_parse(const void *v, size_t n) {
    const unsigned char *s = v;
    if (!s || n == 0 || n > 19) return -1; /* 19 digits: at most 9999999999999999999 */
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    return x > (uint64_t)INT64_MAX ? -1 : (int64_t)x;
}

void eg_record_read_headers(eg_record *r) {
    if (rd_kafka_message_headers(r->msg, &r->hdrs) != 0) r->hdrs = NULL;
    r->hdrs_read = 1;
}

const rd_kafka_headers_t *eg_record_headers(const eg_record *r) {
    rd_kafka_headers_t *h = NULL;
    if (r->hdrs_read) return r->hdrs;
    return rd_kafka_message_headers(r->msg, &h) == 0 ? h : NULL;
}

/* The last header called name on the record (eg_header, through its kept list). */
static const void *rec_header(const eg_record *r, const char *name, size_t *len) {
    return eg_headers_get(eg_record_headers(r), name, len);
}

int64_t eg_header_uint(const rd_kafka_message_t *m, const char *name) {
    size_t n = 0;
    const void *v = eg_header(m, name, &n);
    return eg_uint_parse(v, n);
}

int eg_record_retry_count(const eg_record *r) {
    size_t len = 0;
    const void *v = rec_header(r, EG_H_RETRY_COUNT, &len);
    int64_t n = eg_uint_parse(v, len);
    return n < 0 ? 0 : n > EG_RETRY_COUNT_MAX ? EG_RETRY_COUNT_MAX : (int)n;
}

/* Kafka's legal topic characters: [a-zA-Z0-9._-]. */
static int topic_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

/* Reads 1 to max decimal digits at s[*i..n); returns 0 when there are none
 * or more than max. */
static int digits(const unsigned char *s, size_t n, size_t *i, size_t max) {
    size_t start = *i;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') (*i)++;
    return *i > start && *i - start <= max;
}

int eg_id_valid(const void *v, size_t n) {
    const unsigned char *s = v;
    size_t i = 0;
    if (!s || n == 0 || n > EG_ID_MAX) return 0;
    while (i < n && topic_char(s[i])) i++;
    if (i == 0 || i > EG_TOPIC_NAME_MAX || i >= n || s[i++] != '/') return 0;
    if (!digits(s, n, &i, 10) || i >= n || s[i++] != '/') return 0;
    return digits(s, n, &i, 19) && i == n;
}

int eg_record_has_bad_id(const eg_record *r) {
    size_t n = 0;
    const void *v = rec_header(r, EG_H_ID, &n);
    return (v || n) && !eg_id_valid(v, n) ? 1 : 0;
}

void eg_record_id(const eg_record *r, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = rec_header(r, EG_H_ID, &n);
    if (eg_id_valid(v, n) && n < outlen) {
        memcpy(out, v, n);
        out[n] = '\0';
        return;
    }
    /* topic/partition/offset, without printf (a decision line per record);
     * cut to outlen as snprintf would */
    char tmp[EG_TOPIC_NAME_MAX + 48];
    size_t k = strnlen(r->topic, EG_TOPIC_NAME_MAX);
    memcpy(tmp, r->topic, k);
    tmp[k++] = '/';
    k += eg_fmt_i64(r->partition, tmp + k, sizeof tmp - k);
    tmp[k++] = '/';
    eg_fmt_i64(r->offset, tmp + k, sizeof tmp - k);
    eg_strlcpy(out, tmp, outlen);
}
