/* dlq_state.c — the lifecycle state topic of a lane (see dlq.h for the
 * format and the rule that decides open versus resolved).
 *
 * `<LANE>.state` is created compacted through the Admin API when it is
 * missing. librdkafka 2.0.2's mock cluster implements no Admin request
 * (CreateTopics, DescribeConfigs: its Metadata names controller 0, a broker
 * that does not exist, so an Admin call would only time out); there the
 * topic cannot be made compacted, and eg_dlq_state_ensure says so in a note
 * instead of waiting. State records are keyed by item id, so the latest
 * status of an id is the last record of its key in its partition; readers
 * keep, per id, the last status read. */
#include "dlq.h"
#include "headers.h"
#include "json.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ADMIN_TIMEOUT_MS 10000

static const char *const status_names[EG_DLQ__N] = {"open",     "pending-approval", "approved",
                                                    "replayed", "accepted-loss",    "closed"};

const char *eg_dlq_status_name(eg_dlq_status s) { return s >= 0 && s < EG_DLQ__N ? status_names[s] : "?"; }

int eg_dlq_state_parse(const char *s) {
    for (int i = 0; i < EG_DLQ__N; i++)
        if (strcmp(s, status_names[i]) == 0) return i;
    return -1;
}

int eg_dlq_status_parse(const char *s) {
    int i = eg_dlq_state_parse(s);
    return i >= 0 && eg_dlq_resolved(i) ? i : -1;
}

void eg_dlq_state_topic(const char *lane, char *out, size_t outlen) { snprintf(out, outlen, "%s.state", lane); }

/* Appends the literal lit at out + *len (NUL-terminated). Returns 0 or -1. */
static int put_lit(char *out, size_t outlen, size_t *len, const char *lit) {
    size_t n = strlen(lit);
    if (*len + n + 1 > outlen) return -1;
    memcpy(out + *len, lit, n + 1);
    *len += n;
    return 0;
}

/* eg_dlq_state_json, plus "since" (RFC 3339 of since_ms) when since_ms >= 0. */
static int state_json(eg_dlq_status s, const char *reason, int64_t at_ms, const char *by, int64_t since_ms, char *out,
                      size_t outlen) {
    char at[40], since[40];
    size_t len = 0;
    eg_rfc3339(at_ms, at, sizeof at);
    const char *st = eg_dlq_status_name(s);
    reason = reason ? reason : "";
    if (put_lit(out, outlen, &len, "{\"status\":") || eg_json_put_str(out, outlen, &len, st, strlen(st)) ||
        put_lit(out, outlen, &len, ",\"reason\":") || eg_json_put_str(out, outlen, &len, reason, strlen(reason)) ||
        put_lit(out, outlen, &len, ",\"at\":") || eg_json_put_str(out, outlen, &len, at, strlen(at)) ||
        put_lit(out, outlen, &len, ",\"by\":") || eg_json_put_str(out, outlen, &len, by, strlen(by)))
        return -1;
    if (since_ms >= 0) {
        eg_rfc3339(since_ms, since, sizeof since);
        if (put_lit(out, outlen, &len, ",\"since\":") || eg_json_put_str(out, outlen, &len, since, strlen(since)))
            return -1;
    }
    return put_lit(out, outlen, &len, "}") ? -1 : (int)len;
}

int eg_dlq_state_json(eg_dlq_status s, const char *reason, int64_t at_ms, const char *by, char *out, size_t outlen) {
    return state_json(s, reason, at_ms, by, -1, out, outlen);
}

void eg_dlq_whoami(char *out, size_t outlen) {
    const char *user = getenv("USER");
    if (!user || !*user) {
        struct passwd *pw = getpwuid(geteuid());
        user = pw ? pw->pw_name : "unknown";
    }
    char host[256];
    if (gethostname(host, sizeof host) != 0) eg_strlcpy(host, "unknown", sizeof host);
    host[sizeof host - 1] = '\0';
    snprintf(out, outlen, "%s@%s", user, host);
}

void eg_dlq_item_id(const rd_kafka_message_t *m, char *out, size_t outlen) {
    if (eg_header_str(m, EG_H_ID, out, outlen) == 0 && *out) return;
    snprintf(out, outlen, "%s/%d/%lld", rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
}

/* 1 when the cluster names a controller among its brokers (Admin requests
 * can be served), 0 when not, -1 with err when it cannot be asked. */
static int has_controller(rd_kafka_t *rk, char *err, size_t errlen) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, NULL, &md, ADMIN_TIMEOUT_MS);
    if (e) {
        snprintf(err, errlen, "cannot ask the cluster for its brokers: %s", rd_kafka_err2str(e));
        return -1;
    }
    int32_t cid = rd_kafka_controllerid(rk, 0);
    int found = 0;
    for (int i = 0; i < md->broker_cnt; i++) found |= md->brokers[i].id == cid;
    rd_kafka_metadata_destroy(md);
    return found;
}

int eg_dlq_state_ensure(rd_kafka_t *rk, const char *topic, int partitions, char *note, size_t notelen, char *err,
                        size_t errlen) {
    note[0] = '\0';
    int n = eg_topic_partitions(rk, topic, err, errlen);
    if (n != 0) return n < 0 ? -1 : 0;
    int ctl = has_controller(rk, err, errlen);
    if (ctl < 0) return -1;
    if (!ctl) {
        snprintf(note, notelen,
                 "cannot create %s with cleanup.policy=compact: the cluster names no reachable "
                 "controller for Admin requests (librdkafka's mock cluster has none); it will be "
                 "auto-created without compaction",
                 topic);
        return 0;
    }
    char e[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions > 0 ? partitions : 1, -1, e, sizeof e);
    if (!nt) {
        snprintf(err, errlen, "%s: %s", topic, e);
        return -1;
    }
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, e, sizeof e);
    rd_kafka_AdminOptions_set_operation_timeout(o, ADMIN_TIMEOUT_MS, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS * 2);
    rd_kafka_resp_err_t x = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
    const char *why = ev && x ? rd_kafka_event_error_string(ev) : rd_kafka_err2str(x);
    if (ev && !x) {
        size_t cnt = 0;
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : NULL;
        if (cnt == 1 && rd_kafka_topic_result_error(tr[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            x = rd_kafka_topic_result_error(tr[0]);
            why = rd_kafka_topic_result_error_string(tr[0]);
            if (!why) why = rd_kafka_err2str(x);
        }
    }
    if (x)
        snprintf(note, notelen,
                 "cannot create %s with cleanup.policy=compact: %s; it will be "
                 "auto-created without compaction where the cluster allows that",
                 topic, why);
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_NewTopic_destroy(nt);
    return 0;
}

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
        }
        i = (int64_t)s->n++;
        eg_strmap_put(&s->ids, id, idlen, i);
        s->rst[i] = EG_DLQ_OPEN; /* a new id has no status yet */
        s->rts[i] = s->ats[i] = s->afrom[i] = -1;
    }
    if (st == EG_DLQ_APPROVED) {
        char since[48];
        int64_t from;
        s->ats[i] = ts;
        s->afrom[i] =
            eg_json_get_str(val, vallen, "since", since, sizeof since) == 0 && eg_parse_time_ms(since, &from) == 0
                ? from
                : -1;
    } else if (st >= 0 && eg_dlq_resolved(st)) {
        s->rst[i] = (unsigned char)st;
        s->rts[i] = ts;
    } else { /* a tombstone, or no status a state record may hold */
        s->rst[i] = EG_DLQ_OPEN;
        s->rts[i] = s->ats[i] = -1;
    }
}

int eg_dlq_states_load(const eg_kcli *k, const char *lane, eg_dlq_states *s, char *err, size_t errlen) {
    char topic[512];
    eg_dlq_state_topic(lane, topic, sizeof topic);
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
        if (m->key) eg_dlq_states_apply(s, m->key, m->key_len, m->payload, m->len, rd_kafka_message_timestamp(m, &tt));
        rd_kafka_message_destroy(m);
    }
    eg_lread_close(&r);
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

void eg_dlq_states_free(eg_dlq_states *s) {
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
    int n = state_json(st, reason, now, w->by, since_ms, buf, sizeof buf);
    rd_kafka_resp_err_t x =
        n < 0 ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
              : rd_kafka_producev(w->rk, RD_KAFKA_V_TOPIC(w->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_KEY(id, strlen(id)), RD_KAFKA_V_VALUE(buf, (size_t)n),
                                  RD_KAFKA_V_TIMESTAMP(now), RD_KAFKA_V_END);
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
}
