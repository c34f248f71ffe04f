/* dlq_state.c — the lifecycle statuses of a lane's items as the DLQ
 * commands read and set them: the whole state topic read into a table
 * (the latest statuses per id), the state of one lane record looked up in
 * it (the rule: lane_state.h), and a writer for the statuses set by hand
 * (`dlq resolve`, `dlq approve`). State records are keyed by item id, so
 * the latest status of an id is the last record of its key in its
 * partition; readers keep, per id, the last status read. */
#include "dlq.h"
#include "headers.h"
#include "json.h"
#include "log.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void eg_dlq_states_apply(eg_dlq_states *s, const char *id, size_t idlen, const void *val, size_t vallen, int64_t ts) {
    int st = -1;
    char name[32];
    if (val && eg_json_get_str(val, vallen, "status", name, sizeof name) == 0) st = eg_dlq_state_parse(name);
    int64_t i = eg_strmap_get(&s->ids, id, idlen);
    if (i < 0) {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 64;
            s->rst = eg_xrealloc(s->rst, s->cap * sizeof *s->rst);
            s->rts = eg_xrealloc(s->rts, s->cap * sizeof *s->rts);
            s->ats = eg_xrealloc(s->ats, s->cap * sizeof *s->ats);
            s->afrom = eg_xrealloc(s->afrom, s->cap * sizeof *s->afrom);
            s->aby = eg_xrealloc(s->aby, s->cap * sizeof *s->aby);
        }
        i = (int64_t)s->n++;
        eg_strmap_put(&s->ids, id, idlen, i);
        s->rst[i] = EG_DLQ_OPEN; /* a new id has no status yet */
        s->rts[i] = s->ats[i] = s->afrom[i] = -1;
        s->aby[i] = NULL;
    }
    if (st == EG_DLQ_APPROVED) {
        char since[48], by[300];
        int64_t from;
        s->ats[i] = ts;
        free(s->aby[i]);
        s->aby[i] = eg_json_get_str(val, vallen, "by", by, sizeof by) == 0 ? eg_xstrdup(by) : NULL;
        s->afrom[i] =
            eg_json_get_str(val, vallen, "since", since, sizeof since) == 0 && eg_parse_time_ms(since, &from) == 0
                ? from
                : -1;
        /* the resolving status this approval superseded under its key: once
         * compaction has removed that record, only the approval says it */
        char prior[32], pat[48];
        int64_t pts;
        int ps = eg_json_get_str(val, vallen, "prior", prior, sizeof prior) == 0 ? eg_dlq_status_parse(prior) : -1;
        if (ps >= 0 && eg_json_get_str(val, vallen, "prior_at", pat, sizeof pat) == 0 &&
            eg_parse_time_ms(pat, &pts) == 0 && pts > s->rts[i] && pts <= ts) {
            s->rst[i] = (unsigned char)ps;
            s->rts[i] = pts;
        }
    } else if (st >= 0 && eg_dlq_resolved(st)) {
        s->rst[i] = (unsigned char)st;
        s->rts[i] = ts;
    } else { /* a tombstone, or no status a state record may hold */
        s->rst[i] = EG_DLQ_OPEN;
        s->rts[i] = s->ats[i] = -1;
    }
}

/* 1 when state record m may be applied: there is no control key, or its
 * errgate.sig verifies (kind "state"; a tombstone is signed over an empty
 * value). */
static int signed_ok(const eg_ctlkey *key, const rd_kafka_message_t *m) {
    if (!key->n) return 1;
    const void *sig = NULL;
    size_t siglen = 0;
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(h, EG_CTLSIGN_HEADER, &sig, &siglen) != RD_KAFKA_RESP_ERR_NO_ERROR)
        sig = NULL;
    const char *why;
    return eg_ctlsign_verify(key, "state", m->key, m->key_len, m->payload ? m->payload : "", m->payload ? m->len : 0,
                             sig, sig ? siglen : 0, &why) == 0;
}

int eg_dlq_states_load(const eg_kcli *k, const char *lane, eg_dlq_states *s, char *err, size_t errlen) {
    char topic[512];
    eg_dlq_state_topic(lane, topic, sizeof topic);
    eg_ctlkey *key = &s->key;
    if (eg_kcli_ctlkey(k, key, err, errlen) < 0) return -1;
    rd_kafka_conf_t *conf = eg_kcli_conf(k, "errgate-dlq-state", err, errlen);
    if (!conf) return -1;
    eg_lread r;
    int rc = eg_lread_open(&r, conf, NULL, topic, err, errlen);
    if (rc == -2) return 0; /* no state topic yet: nothing resolved */
    if (rc < 0 || eg_lread_start(&r, 0, err, errlen) < 0) {
        if (rc == 0) eg_lread_close(&r);
        return -1;
    }
    rd_kafka_message_t *m;
    while ((rc = eg_lread_next(&r, 200, &m, err, errlen)) >= 0 && rc != 2) {
        if (rc != 1) continue;
        rd_kafka_timestamp_type_t tt;
        size_t pl = sizeof EG_DLQ_ANNOTATION_PREFIX - 1;
        if (m->key && !signed_ok(key, m)) s->refused++;
        else if (m->key && m->key_len > pl && !memcmp(m->key, EG_DLQ_ANNOTATION_PREFIX, pl))
            eg_dlq_states_annotate(s, (const char *)m->key + pl, m->key_len - pl, m->payload, m->len);
        else if (m->key)
            eg_dlq_states_apply(s, m->key, m->key_len, m->payload, m->len, rd_kafka_message_timestamp(m, &tt));
        rd_kafka_message_destroy(m);
    }
    eg_lread_close(&r);
    if (s->refused)
        eg_log_msg(EG_WARN, "state_records_refused",
                   "%s: %zu state record(s) not signed with the control key were ignored (forged, or written "
                   "without --key-file)",
                   topic, s->refused);
    return rc < 0 ? -1 : 0;
}

eg_dlq_status eg_dlq_states_status(const eg_dlq_states *s, const char *id, int64_t rec_ts, int pending) {
    int64_t i = eg_strmap_get(&s->ids, id, strlen(id));
    if (i >= 0 && s->rst[i] != EG_DLQ_OPEN && s->rts[i] >= rec_ts) return (eg_dlq_status)s->rst[i];
    if (i >= 0 && s->ats[i] >= 0 && s->ats[i] >= rec_ts && rec_ts >= s->afrom[i]) return EG_DLQ_APPROVED;
    return pending ? EG_DLQ_PENDING : EG_DLQ_OPEN;
}

eg_dlq_status eg_dlq_item_state(const eg_dlq_states *s, const rd_kafka_message_t *m, char *id, size_t idlen) {
    char appr[32];
    rd_kafka_timestamp_type_t tt;
    eg_dlq_item_id(m, id, idlen);
    int pending = eg_header_str(m, EG_H_APPROVAL, appr, sizeof appr) == 0 && !strcmp(appr, EG_APPROVAL_REQUIRED);
    return eg_dlq_states_status(s, id, rd_kafka_message_timestamp(m, &tt), pending);
}

rd_kafka_headers_t *eg_dlq_state_headers(const eg_ctlkey *key, const char *id, const char *json, size_t n) {
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    if (key->n) { /* signed: readers with the key ignore a state record without it */
        char sig[EG_CTLSIGN_LEN + 1];
        eg_ctlsign_sign(key, "state", id, strlen(id), json, n, sig);
        rd_kafka_header_add(h, EG_CTLSIGN_HEADER, -1, sig, EG_CTLSIGN_LEN);
    }
    return h;
}

const char *eg_dlq_states_approver(const eg_dlq_states *s, const char *id) {
    int64_t i = eg_strmap_get(&s->ids, id, strlen(id));
    return i >= 0 && s->ats[i] >= 0 ? s->aby[i] : NULL;
}

int eg_dlq_same_person(const char *a, const char *b) {
    size_t na = strcspn(a, "@"), nb = strcspn(b, "@");
    return na > 0 && na == nb && !strncasecmp(a, b, na);
}

void eg_dlq_states_annotate(eg_dlq_states *s, const char *id, size_t idlen, const void *val, size_t vallen) {
    const char *v = val;
    size_t a = 0, b = vallen;
    while (v && a < b && (v[a] == ' ' || v[a] == '\n' || v[a] == '\t' || v[a] == '\r')) a++;
    while (v && b > a && (v[b - 1] == ' ' || v[b - 1] == '\n' || v[b - 1] == '\t' || v[b - 1] == '\r')) b--;
    if (v && (vallen > EG_DLQ_ANNOTATION_MAX || b - a < 2 || v[a] != '{' || v[b - 1] != '}' || memchr(v, 0, vallen)))
        return; /* not an annotation: ignored, the previous one stands */
    int64_t i = eg_strmap_get(&s->anns, id, idlen);
    if (i < 0) {
        if (!v) return;
        if (s->nann == s->capann) {
            s->capann = s->capann ? s->capann * 2 : 16;
            s->annv = eg_xrealloc(s->annv, s->capann * sizeof *s->annv);
        }
        i = (int64_t)s->nann++;
        s->annv[i] = NULL;
        eg_strmap_put(&s->anns, id, idlen, i);
    }
    free(s->annv[i]);
    s->annv[i] = NULL;
    if (v) {
        s->annv[i] = eg_xmalloc(vallen + 1);
        memcpy(s->annv[i], v, vallen);
        s->annv[i][vallen] = 0;
    }
}

int eg_dlq_states_annotation(const eg_dlq_states *s, const char *id, const char *field, char *out, size_t outlen) {
    int64_t i = eg_strmap_get(&s->anns, id, strlen(id));
    if (i < 0 || !s->annv[i]) return -1;
    return eg_json_get_str(s->annv[i], strlen(s->annv[i]), field, out, outlen) == 0 ? 0 : -1;
}

void eg_dlq_states_free(eg_dlq_states *s) {
    for (size_t i = 0; i < s->nann; i++) free(s->annv[i]);
    free(s->annv);
    eg_strmap_free(&s->anns);
    for (size_t i = 0; i < s->n; i++) free(s->aby[i]);
    free(s->aby);
    eg_strmap_free(&s->ids);
    free(s->rst);
    free(s->rts);
    free(s->ats);
    free(s->afrom);
    memset(s, 0, sizeof *s);
}

/* Delivery report of a state write (served by rd_kafka_poll/flush on the
 * command's thread): counts it. */
static void on_written(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    eg_dlq_writer *w = opaque;
    w->inflight--;
    if (m->err) {
        w->failed++;
        w->last_err = m->err;
    } else {
        w->written++;
    }
}

int eg_dlq_writer_open(eg_dlq_writer *w, const eg_kcli *k, const char *lane, int partitions, const char *by, char *note,
                       size_t notelen, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    note[0] = '\0';
    eg_dlq_state_topic(lane, w->topic, sizeof w->topic);
    if (by) eg_strlcpy(w->by, by, sizeof w->by);
    else eg_dlq_whoami(w->by, sizeof w->by);
    if (eg_kcli_ctlkey(k, &w->key, err, errlen) < 0) return -1;
    w->rk = eg_dlq_producer(k, "errgate-dlq", on_written, w, err, errlen);
    if (!w->rk) return -1;
    if (eg_dlq_state_ensure(w->rk, w->topic, partitions, note, notelen, err, errlen) < 0) {
        eg_dlq_writer_close(w);
        return -1;
    }
    return 0;
}

int eg_dlq_writer_put(eg_dlq_writer *w, const char *id, eg_dlq_status st, const char *reason, int64_t since_ms,
                      char *json, size_t jsonlen) {
    char buf[4096];
    int64_t now = eg_wall_ms();
    int n = eg_dlq_state_json(st, reason, now, w->by, since_ms, buf, sizeof buf);
    int64_t k = w->known && st == EG_DLQ_APPROVED ? eg_strmap_get(&w->known->ids, id, strlen(id)) : -1;
    if (n > 0 && k >= 0 && w->known->rst[k] != EG_DLQ_OPEN && w->known->rts[k] >= 0) {
        char at[40];
        eg_rfc3339(w->known->rts[k], at, sizeof at);
        int m = snprintf(buf + n - 1, sizeof buf - (size_t)(n - 1), ",\"prior\":\"%s\",\"prior_at\":\"%s\"}",
                         eg_dlq_status_name((eg_dlq_status)w->known->rst[k]), at);
        n = m > 0 && (size_t)m < sizeof buf - (size_t)(n - 1) ? n - 1 + m : -1;
    }
    rd_kafka_resp_err_t x = RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE;
    if (n >= 0) {
        rd_kafka_headers_t *h = eg_dlq_state_headers(&w->key, id, buf, (size_t)n);
        x = rd_kafka_producev(w->rk, RD_KAFKA_V_TOPIC(w->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_KEY(id, strlen(id)), RD_KAFKA_V_VALUE(buf, (size_t)n), RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_TIMESTAMP(now), RD_KAFKA_V_END);
        if (x) rd_kafka_headers_destroy(h); /* the message's once queued */
    }
    if (x) {
        w->failed++;
        w->last_err = x;
        return -1;
    }
    if (json) eg_strlcpy(json, buf, jsonlen);
    w->inflight++;
    rd_kafka_poll(w->rk, 0);
    return 0;
}

long eg_dlq_writer_flush(eg_dlq_writer *w, int timeout_ms) {
    rd_kafka_flush(w->rk, timeout_ms);
    if (w->inflight > 0) w->last_err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    return w->failed + w->inflight;
}

void eg_dlq_writer_close(eg_dlq_writer *w) {
    if (w->rk) {
        rd_kafka_purge(w->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_poll(w->rk, 0);
        rd_kafka_destroy(w->rk);
    }
    w->rk = NULL;
    memset(&w->key, 0, sizeof w->key);
}
