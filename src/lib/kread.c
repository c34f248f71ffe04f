/* kread.c — the topic reader of the Kafka-facing commands (see kcli.h):
 * replay, dlq stats/tail/resolve and policy test --from-topic.
 *
 * Start offsets are per partition (a group's committed progress, a time,
 * the last N records); reading is pull-style, so that the caller can
 * interleave delivery reports, pacing and commits; the existence check
 * never auto-creates the topic (a metadata request naming a topic creates
 * it on clusters with auto-creation, and always on librdkafka's mock). The
 * consumer assigns partitions and never joins its group; commits with a
 * group id and no membership are accepted by Kafka (and by the mock) as
 * long as no member of that group is active.
 *
 * A bounded read stops each partition at the end offset seen at open, so
 * records arriving meanwhile are left for the next run; with follow it
 * keeps reading. End of partition is learnt from PARTITION_EOF events. */
#include "kcli.h"
#include "kconf.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define META_TIMEOUT_MS 10000
#define META_STEP_MS 1000
#define ADMIN_TIMEOUT_MS 10000

int eg_topic_partitions(rd_kafka_t *rk, const char *topic, char *err, size_t errlen) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e;
    char auth[300];
    /* asked a second at a time: a login the cluster refused ends the wait
     * at once (every client of the process has the same credentials) */
    for (int waited = 0;; waited += META_STEP_MS) {
        e = rd_kafka_metadata(rk, 1, NULL, &md, META_STEP_MS);
        if (e != RD_KAFKA_RESP_ERR__TIMED_OUT && e != RD_KAFKA_RESP_ERR__TRANSPORT) break;
        if (eg_kafka_auth_failure(auth, sizeof auth)) {
            snprintf(err, errlen, "cannot list topics: the cluster refused the credentials (%s)", auth);
            return -1;
        }
        if (waited + META_STEP_MS >= META_TIMEOUT_MS) break;
    }
    if (e) {
        snprintf(err, errlen, "cannot list topics: %s", rd_kafka_err2str(e));
        return -1;
    }
    int n = eg_metadata_partitions(md, topic);
    rd_kafka_metadata_destroy(md);
    return n > 0 ? n : 0;
}

int eg_metadata_partitions(const struct rd_kafka_metadata *md, const char *topic) {
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0)
            return md->topics[i].err || md->topics[i].partition_cnt <= 0 ? -1 : md->topics[i].partition_cnt;
    return -1;
}

rd_kafka_resp_err_t eg_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l, int timeout_ms) {
    int64_t deadline = eg_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - eg_now_ms();
        rd_kafka_resp_err_t x = rd_kafka_committed(rk, l, left > 0 ? (int)left : 1);
        int moving = x == RD_KAFKA_RESP_ERR_NOT_COORDINATOR || x == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
                     x == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS || x == RD_KAFKA_RESP_ERR__TRANSPORT;
        if (!moving || deadline - eg_now_ms() < 250) return x;
        usleep(200 * 1000);
    }
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

int eg_topic_ensure(rd_kafka_t *rk, const char *topic, int partitions, int compact, int64_t retention_ms, int *existing,
                    char *note, size_t notelen, char *err, size_t errlen) {
    note[0] = '\0';
    int n = eg_topic_partitions(rk, topic, err, errlen);
    if (existing) *existing = n > 0 ? n : 0;
    if (n != 0) return n < 0 ? -1 : 0;
    const char *what = compact ? " with cleanup.policy=compact" : "";
    int ctl = has_controller(rk, err, errlen);
    if (ctl < 0) return -1;
    if (!ctl) {
        snprintf(note, notelen,
                 "cannot create %s%s: the cluster names no reachable controller for Admin requests "
                 "(librdkafka's mock cluster has none); it will be auto-created%s",
                 topic, what, compact ? " without compaction" : "");
        return 0;
    }
    char e[256];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions > 0 ? partitions : 1, -1, e, sizeof e);
    if (!nt) {
        snprintf(err, errlen, "%s: %s", topic, e);
        return -1;
    }
    if (compact) rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    if (retention_ms > 0) {
        char ms[24];
        snprintf(ms, sizeof ms, "%lld", (long long)retention_ms);
        rd_kafka_NewTopic_set_config(nt, "retention.ms", ms);
    }
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, e, sizeof e);
    rd_kafka_AdminOptions_set_operation_timeout(o, ADMIN_TIMEOUT_MS, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS * 2);
    rd_kafka_resp_err_t x = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
    const char *why = ev && x ? rd_kafka_event_error_string(ev) : rd_kafka_err2str(x);
    int created = 0; /* another writer may have created it meanwhile: ALREADY_EXISTS is no failure */
    if (ev && !x) {
        size_t cnt = 0;
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : NULL;
        if (cnt == 1 && rd_kafka_topic_result_error(tr[0]) != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            x = rd_kafka_topic_result_error(tr[0]);
            why = rd_kafka_topic_result_error_string(tr[0]);
            if (!why) why = rd_kafka_err2str(x);
            created = !x;
        }
    }
    if (x)
        snprintf(note, notelen, "cannot create %s%s: %s; it will be auto-created%s where the cluster allows that",
                 topic, what, why, compact ? " without compaction" : "");
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_NewTopic_destroy(nt);
    return created;
}

int eg_topic_config(rd_kafka_t *rk, const char *topic, const char *name, char *out, size_t outlen, char *err,
                    size_t errlen) {
    out[0] = '\0';
    int ctl = has_controller(rk, err, errlen);
    if (ctl <= 0) {
        if (!ctl) snprintf(err, errlen, "the cluster names no reachable controller for Admin requests");
        return -1;
    }
    char e[256];
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
    rd_kafka_AdminOptions_set_request_timeout(o, ADMIN_TIMEOUT_MS, e, sizeof e);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &res, 1, o, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, ADMIN_TIMEOUT_MS * 2);
    rd_kafka_resp_err_t x = ev ? rd_kafka_event_error(ev) : RD_KAFKA_RESP_ERR__TIMED_OUT;
    int found = 0;
    if (ev && !x) {
        size_t nres = 0, nc = 0;
        const rd_kafka_DescribeConfigs_result_t *r = rd_kafka_event_DescribeConfigs_result(ev);
        const rd_kafka_ConfigResource_t **rs = r ? rd_kafka_DescribeConfigs_result_resources(r, &nres) : NULL;
        if (nres == 1 && (x = rd_kafka_ConfigResource_error(rs[0])) == 0) {
            const rd_kafka_ConfigEntry_t **ce = rd_kafka_ConfigResource_configs(rs[0], &nc);
            for (size_t i = 0; i < nc && !found; i++)
                if (!strcmp(rd_kafka_ConfigEntry_name(ce[i]), name)) {
                    const char *v = rd_kafka_ConfigEntry_value(ce[i]);
                    eg_strlcpy(out, v ? v : "", outlen);
                    found = 1;
                }
        }
    }
    if (!found)
        snprintf(err, errlen, "%s: %s", topic,
                 x    ? rd_kafka_err2str(x)
                 : ev ? "the answer does not name that config"
                      : "no answer");
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_ConfigResource_destroy(res);
    return found ? 0 : -1;
}

int eg_lread_open(eg_lread *r, rd_kafka_conf_t *conf, const char *group, const char *topic, char *err, size_t errlen) {
    char e[512];
    memset(r, 0, sizeof *r);
    r->timeout_ms = META_TIMEOUT_MS;
    const char *props[][2] = {{"group.id", group ? group : "errgate-reader"},
                              {"enable.auto.commit", "false"},
                              {"enable.auto.offset.store", "false"},
                              {"enable.partition.eof", "true"}};
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        if (eg_kconf_set(conf, props[i][0], props[i][1], err, errlen) != 0) {
            rd_kafka_conf_destroy(conf);
            return -1;
        }
    r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!r->rk) {
        snprintf(err, errlen, "cannot create a consumer: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_poll_set_consumer(r->rk);
    r->topic = eg_xstrdup(topic);
    int n = eg_topic_partitions(r->rk, topic, err, errlen);
    if (n == 0) snprintf(err, errlen, "topic %s does not exist", topic);
    if (n <= 0) {
        eg_lread_close(r);
        return n == 0 ? -2 : -1;
    }
    r->n = n;
    r->part = eg_xcalloc((size_t)n, sizeof *r->part);
    r->lo = eg_xcalloc((size_t)n, sizeof *r->lo);
    r->hi = eg_xcalloc((size_t)n, sizeof *r->hi);
    r->start = eg_xcalloc((size_t)n, sizeof *r->start);
    r->caught_up = eg_xcalloc((size_t)n, 1);
    for (int i = 0; i < n; i++) {
        r->part[i] = i;
        rd_kafka_resp_err_t x =
            rd_kafka_query_watermark_offsets(r->rk, topic, i, &r->lo[i], &r->hi[i], META_TIMEOUT_MS);
        if (x) {
            snprintf(err, errlen, "%s[%d]: %s", topic, i, rd_kafka_err2str(x));
            eg_lread_close(r);
            return -1;
        }
        r->start[i] = r->lo[i];
    }
    return 0;
}

/* A partition list of every partition of r, offsets unset. */
static rd_kafka_topic_partition_list_t *all_parts(const eg_lread *r) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->n);
    for (int i = 0; i < r->n; i++) rd_kafka_topic_partition_list_add(l, r->topic, r->part[i]);
    return l;
}

int eg_lread_seek_committed(eg_lread *r, char *err, size_t errlen) {
    rd_kafka_topic_partition_list_t *l = all_parts(r);
    rd_kafka_resp_err_t x = eg_committed(r->rk, l, META_TIMEOUT_MS);
    for (int i = 0; !x && i < l->cnt; i++) {
        int at = eg_lread_index(r, l->elems[i].partition);
        int64_t c = l->elems[i].offset;
        if (at < 0 || c < 0) continue;
        if (c < r->lo[at]) c = r->lo[at];
        if (c > r->hi[at]) c = r->hi[at];
        if (c > r->start[at]) r->start[at] = c;
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (x) snprintf(err, errlen, "%s: committed offsets: %s", r->topic, rd_kafka_err2str(x));
    return x ? -1 : 0;
}

int eg_lread_seek_time(eg_lread *r, int64_t since_ms, char *err, size_t errlen) {
    rd_kafka_topic_partition_list_t *l = all_parts(r);
    for (int i = 0; i < l->cnt; i++) l->elems[i].offset = since_ms;
    rd_kafka_resp_err_t x = rd_kafka_offsets_for_times(r->rk, l, META_TIMEOUT_MS);
    for (int i = 0; !x && i < l->cnt; i++) {
        int at = eg_lread_index(r, l->elems[i].partition);
        int64_t o = l->elems[i].offset;
        /* -1: no such record, or a broker that cannot tell (the mock) */
        if (at >= 0 && !l->elems[i].err && o > r->start[at]) r->start[at] = o < r->hi[at] ? o : r->hi[at];
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (x) snprintf(err, errlen, "%s: offsets for a time: %s", r->topic, rd_kafka_err2str(x));
    return x ? -1 : 0;
}

int eg_lread_start(eg_lread *r, int follow, char *err, size_t errlen) {
    r->follow = follow;
    r->remaining = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->n);
    for (int i = 0; i < r->n; i++) {
        r->caught_up[i] = r->start[i] >= r->hi[i];
        if (!r->caught_up[i]) r->remaining++;
        if (follow || !r->caught_up[i])
            rd_kafka_topic_partition_list_add(l, r->topic, r->part[i])->offset = r->start[i];
    }
    /* a fresh assignment: nothing fetched for an earlier one is delivered */
    rd_kafka_resp_err_t x = rd_kafka_assign(r->rk, NULL);
    if (!x && l->cnt) x = rd_kafka_assign(r->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (x) snprintf(err, errlen, "%s: assign: %s", r->topic, rd_kafka_err2str(x));
    return x ? -1 : 0;
}

int eg_lread_index(const eg_lread *r, int32_t p) {
    for (int i = 0; i < r->n; i++)
        if (r->part[i] == p) return i;
    return -1;
}

/* Marks partition i caught up once its position reaches hi. */
static void reached(eg_lread *r, int i, int64_t next) {
    if (i >= 0 && !r->caught_up[i] && next >= r->hi[i]) {
        r->caught_up[i] = 1;
        r->remaining--;
    }
}

int eg_lread_next(eg_lread *r, int timeout_ms, rd_kafka_message_t **out, char *err, size_t errlen) {
    *out = NULL;
    if (!r->follow && r->remaining == 0) return 2;
    int64_t t0 = eg_now_ms();
    rd_kafka_message_t *m = rd_kafka_consumer_poll(r->rk, timeout_ms);
    if (!m) {
        r->idle_ms += eg_now_ms() - t0;
        if (!r->follow && r->idle_ms > r->timeout_ms) {
            snprintf(err, errlen, "%s: no progress for %d ms", r->topic, r->timeout_ms);
            return -1;
        }
        return 0;
    }
    r->idle_ms = 0;
    int i = eg_lread_index(r, m->partition);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        reached(r, i, m->offset);
        rd_kafka_message_destroy(m);
        return !r->follow && r->remaining == 0 ? 2 : 0;
    }
    if (m->err) {
        snprintf(err, errlen, "%s: %s", r->topic, rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        return -1;
    }
    if (i < 0 || (!r->follow && r->caught_up[i]) || (!r->follow && m->offset >= r->hi[i])) {
        rd_kafka_message_destroy(m); /* past the bounded end: left for the next run */
        return 0;
    }
    reached(r, i, m->offset + 1);
    *out = m;
    return 1;
}

int eg_lread_commit(eg_lread *r, const int64_t *off, int async, char *err, size_t errlen) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->n);
    for (int i = 0; i < r->n; i++)
        if (off[i] >= 0) rd_kafka_topic_partition_list_add(l, r->topic, r->part[i])->offset = off[i];
    rd_kafka_resp_err_t x = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (l->cnt) x = rd_kafka_commit(r->rk, l, async);
    for (int i = 0; !x && !async && i < l->cnt; i++) x = l->elems[i].err;
    rd_kafka_topic_partition_list_destroy(l);
    if (x) snprintf(err, errlen, "%s: commit: %s", r->topic, rd_kafka_err2str(x));
    return x ? -1 : 0;
}

void eg_lread_close(eg_lread *r) {
    if (r->rk) {
        rd_kafka_consumer_close(r->rk);
        rd_kafka_destroy(r->rk);
    }
    free(r->topic);
    free(r->part);
    free(r->lo);
    free(r->hi);
    free(r->start);
    free(r->caught_up);
    memset(r, 0, sizeof *r);
}
