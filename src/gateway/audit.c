/* audit.c — the audit topic's producer and group-less consumer (see
 * audit.h).
 *
 * Design: the topic is small (one record per change, compacted to one per
 * key), so every instance simply reads all of it. At start, before the
 * gateway consumes anything, the consumer is assigned every partition from
 * the beginning and read synchronously up to the high watermarks it asked
 * for first: the state in force is known before the first source record is
 * decided (and a start that cannot read it fails, loudly, rather than
 * decide without the overrides an operator set). Then both clients are
 * served on the loop: their queues wake it through one pipe each, as the
 * lane producer does; fetch.wait.max.ms is short so that a change made
 * elsewhere applies here well within a second. The consumer never commits
 * and belongs to no group, so instances never share or move its
 * partitions. Partitions added to the topic later are not read (the topic
 * is created with one). An out-of-range position resets to the earliest
 * offset (auto.offset.reset), never to the end: re-reading applies the same
 * state again, skipping would lose changes and clears. A record at an
 * offset already read is a re-read (rec.reread): said once per partition
 * (control_reread), counted, never taken for a copy produced again (its
 * signature is in the ring because it is the same record), and applied as
 * at start (rec.live 0): what it holds is the state already in force,
 * unless the topic was recreated under the reader.
 *
 * A write's delivery report comes back on the loop through the producer's
 * main queue; each write carries its caller's request as the message
 * opaque and its done runs exactly once (purged writes at free included).
 * A producer that met a fatal error (idempotence broken, as the lane
 * producer's: lanes.c) is replaced by a fresh one at the next write, at most
 * EG_PRODUCER_REPLACE_MAX times in EG_PRODUCER_REPLACE_WINDOW_MS (kconf.h); the writes it
 * still held fail (their requests are answered 503) and past the bound a
 * write fails saying the gateway needs a restart.
 *
 * Signatures (ctlsign.h): with control_key_file, every write carries the
 * header errgate.sig over (kind "audit", key, value), and every record read
 * is verified before apply sees it: one unsigned, badly signed, or whose
 * signature was already read (a copy produced again) reaches apply with
 * that refusal, never as a change. The signatures read are remembered in
 * a ring of EG_AUDIT_SEEN (the compacted topic holds one record per
 * override, far fewer). Without a key nothing is signed or checked, and
 * the start says so in one warn line. */
#include "audit.h"

#include "ctlsign.h"
#include "lane_state.h"
#include "lanes.h"
#include "kconf.h"
#include "log.h"
#include "util.h"

#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct wreq {
    eg_audit_written done;
    void *req;
} wreq;

struct eg_audit {
    rd_kafka_t *prod, *cons;
    rd_kafka_conf_t *pconf;    /* the producer's configuration, for a replacement */
    eg_replace_bound replaced; /* replacements of the producer (kconf.h) */
    rd_kafka_queue_t *pq, *cq; /* the producer's main queue, the consumer's queue */
    int ppipe[2], cpipe[2];
    struct event *pev, *cev;
    char *topic;
    char kind[16]; /* the signatures' kind: "audit", or the caller's (eg_audit_open_topic) */
    int32_t nparts;
    int64_t *next;   /* per partition: the next offset to read (everything before it applied) */
    char *rereading; /* per partition: 1 while records before next are read again */
    uint64_t reread; /* records read again after an out-of-range reset */
    int live;
    eg_ctlkey key;             /* key.n == 0: unsigned deployment */
    unsigned char (*seen)[32]; /* EG_AUDIT_SEEN signatures read, a ring */
    int nseen, seen_at;        /* how many held, the next slot */
    eg_audit_apply apply;
    void *arg;
};

/* Delivery report (served by rd_kafka_poll on the loop thread). */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    wreq *w = m->_private;
    if (!w) return;
    w->done(w->req, m->partition, m->offset, m->err ? rd_kafka_err2str(m->err) : NULL);
    free(w);
}

/* The refusal of m's signature (ctlsign.h's reasons, or "replayed" for
 * one already read, unless m is a re-read of its own offset), or NULL when
 * it is good or the deployment has no key. A good signature is remembered. */
static const char *check_sig(eg_audit *a, const rd_kafka_message_t *m, int reread) {
    if (!a->key.n || !m->payload) return NULL; /* a tombstone changes nothing */
    const void *sig = NULL;
    size_t siglen = 0;
    rd_kafka_headers_t *h = NULL;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, EG_CTLSIGN_HEADER, &sig, &siglen) != RD_KAFKA_RESP_ERR_NO_ERROR)
        sig = NULL;
    const char *why = NULL;
    if (eg_ctlsign_verify(&a->key, a->kind, m->key ? m->key : "", m->key ? m->key_len : 0, m->payload, m->len, sig,
                          sig ? siglen : 0, &why) != 0)
        return why;
    unsigned char mac[32];
    eg_hmac_sha256(a->key.k, a->key.n, sig, siglen, mac); /* a digest of the signature to remember */
    for (int i = 0; i < a->nseen; i++)
        if (!memcmp(a->seen[i], mac, 32)) return reread ? NULL : "replayed";
    memcpy(a->seen[a->seen_at], mac, 32);
    a->seen_at = (a->seen_at + 1) % EG_AUDIT_SEEN;
    if (a->nseen < EG_AUDIT_SEEN) a->nseen++;
    return NULL;
}

/* Applies one consumed message (or logs a consumer error). */
static void consume_one(eg_audit *a, rd_kafka_message_t *m) {
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            eg_log_msg(EG_WARN, "audit_consumer_error", "%s: %s", a->topic, rd_kafka_message_errstr(m));
    } else if (m->partition >= 0 && m->partition < a->nparts) {
        int32_t p = m->partition;
        int reread = m->offset < a->next[p];
        if (reread) {
            a->reread++;
            if (!a->rereading[p])
                eg_log_msg(EG_WARN, "control_reread",
                           "%s[%d]: its position was reset to offset %lld, below the %lld already applied: "
                           "re-reading (the same records change nothing)",
                           a->topic, (int)p, (long long)m->offset, (long long)a->next[p]);
        } else {
            a->next[p] = m->offset + 1; /* applied once apply returns */
        }
        a->rereading[p] = (char)(reread && m->offset + 1 < a->next[p]);
        eg_audit_rec r = {.key = m->key,
                          .klen = m->key_len,
                          .val = m->payload,
                          .vlen = m->len,
                          .partition = p,
                          .offset = m->offset,
                          .live = a->live && !reread,
                          .reread = reread,
                          .keyed = a->key.n > 0};
        r.refusal = check_sig(a, m, reread);
        a->apply(a->arg, &r);
    }
    rd_kafka_message_destroy(m);
}

void eg_audit_poll(eg_audit *a) {
    if (!a) return;
    rd_kafka_message_t *m;
    while ((m = rd_kafka_consumer_poll(a->cons, 0))) consume_one(a, m);
    while (rd_kafka_poll(a->prod, 0) > 0) {}
}

/* A client's queue woke the loop: drain the pipe, serve both. */
static void on_queue(evutil_socket_t fd, short what, void *arg) {
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {}
    eg_audit_poll(arg);
}

/* Wakes the loop through a new pipe when q has events. Returns 0 or -1. */
static int wire(struct event_base *base, rd_kafka_queue_t *q, int fds[2], struct event **ev, eg_audit *a) {
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    rd_kafka_queue_io_event_enable(q, fds[1], "1", 1);
    *ev = event_new(base, fds[0], EV_READ | EV_PERSIST, on_queue, a);
    return *ev && event_add(*ev, NULL) == 0 ? 0 : -1;
}

/* The topic's partition count, asking about it by name (a cluster that
 * auto-creates topics creates it then) until it has some, before deadline
 * (eg_now_ms). Returns the count, or -1 with err. */
static int topic_partitions(rd_kafka_t *rk, const char *topic, int64_t deadline, char *err, size_t errlen) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (!rkt) {
        snprintf(err, errlen, "not a valid topic name: %s", rd_kafka_err2str(rd_kafka_last_error()));
        return -1;
    }
    const char *why = "no such topic";
    char auth[300];
    int n = -1;
    /* a refused login is not waited out (as in eg_audit_open): every client
     * of the process logs in with the same credentials (kconf.h) */
    while (n < 0 && eg_now_ms() < deadline) {
        if (eg_kafka_auth_failure(auth, sizeof auth)) {
            why = auth;
            break;
        }
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
        if (e) why = rd_kafka_err2str(e);
        for (int i = 0; !e && i < md->topic_cnt; i++)
            if (md->topics[i].err) why = rd_kafka_err2str(md->topics[i].err);
            else if (md->topics[i].partition_cnt > 0) n = md->topics[i].partition_cnt;
        if (md) rd_kafka_metadata_destroy(md);
        if (n < 0) usleep(200 * 1000);
    }
    rd_kafka_topic_destroy(rkt);
    if (n < 0 && why == auth) snprintf(err, errlen, "cannot read its partitions: %s", why);
    else if (n < 0) snprintf(err, errlen, "cannot read its partitions within %d s: %s", EG_AUDIT_START_MS / 1000, why);
    return n;
}

/* Reads every partition from the beginning up to the high watermark it has
 * now, before deadline (eg_now_ms). Returns 0 or -1 with err. */
static int read_to_end(eg_audit *a, int64_t deadline, char *err, size_t errlen) {
    int64_t *high = eg_xcalloc((size_t)a->nparts, sizeof *high);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(a->nparts);
    int rc = -1;
    for (int32_t p = 0; p < a->nparts; p++) {
        int64_t lo = 0;
        rd_kafka_resp_err_t e;
        /* a leader may be moving (a broker down): asked again until the deadline */
        while ((e = rd_kafka_query_watermark_offsets(a->cons, a->topic, p, &lo, &high[p], 5000)) &&
               eg_now_ms() < deadline)
            usleep(200 * 1000);
        if (e) {
            snprintf(err, errlen, "%s[%d]: cannot read its watermarks: %s", a->topic, (int)p, rd_kafka_err2str(e));
            goto out;
        }
        a->next[p] = lo;
        rd_kafka_topic_partition_list_add(l, a->topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_resp_err_t e = rd_kafka_assign(a->cons, l);
    if (e) {
        snprintf(err, errlen, "%s: cannot assign its partitions: %s", a->topic, rd_kafka_err2str(e));
        goto out;
    }
    for (;;) {
        int behind = 0;
        for (int32_t p = 0; p < a->nparts; p++) behind |= a->next[p] < high[p];
        if (!behind) break;
        int64_t left = deadline - eg_now_ms();
        if (left <= 0) {
            snprintf(err, errlen, "%s: not read to its end within %d s", a->topic, EG_AUDIT_START_MS / 1000);
            goto out;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(a->cons, (int)(left < 100 ? left : 100));
        if (m) consume_one(a, m);
    }
    rc = 0;
out:
    rd_kafka_topic_partition_list_destroy(l);
    free(high);
    return rc;
}

eg_audit *eg_audit_open(const eg_config *cfg, struct event_base *base, eg_audit_apply apply, void *arg, char *err,
                        size_t errlen) {
    if (!cfg->audit_topic || !cfg->audit_topic[0] || strlen(cfg->audit_topic) > 249) {
        snprintf(err, errlen, "admin.audit_topic: a topic name of 1 to 249 characters is required");
        return NULL;
    }
    return eg_audit_open_topic(cfg, cfg->audit_topic, "audit", base, apply, arg, err, errlen);
}

/* Reads partition p until every record before offset `end` is applied, or
 * deadline (eg_now_ms) passes (-1 with err; timeout_ms is for the message). */
static int read_until(eg_audit *a, int32_t p, int64_t end, int64_t deadline, int timeout_ms, char *err, size_t errlen) {
    while (a->next[p] < end) {
        int64_t left = deadline - eg_now_ms();
        if (left <= 0) {
            snprintf(err, errlen, "%s[%d]: not read to %lld within %d ms (at %lld)", a->topic, (int)p, (long long)end,
                     timeout_ms, (long long)a->next[p]);
            return -1;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(a->cons, (int)(left < 100 ? left : 100));
        if (m) consume_one(a, m);
    }
    return 0;
}

int eg_audit_catch_up(eg_audit *a, int timeout_ms, char *err, size_t errlen) {
    int64_t deadline = eg_now_ms() + timeout_ms;
    for (int32_t p = 0; p < a->nparts; p++) {
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t e;
        /* asked again until the deadline: a partition whose leader was just killed has none for the
         * seconds an election takes ("not leader"), and a view read without it is not the topic */
        while ((e = rd_kafka_query_watermark_offsets(a->cons, a->topic, p, &lo, &hi,
                                                     (int)(deadline - eg_now_ms() > 0 ? deadline - eg_now_ms() : 1))) !=
                   0 &&
               eg_now_ms() + 200 < deadline)
            usleep(200 * 1000);
        if (e) {
            snprintf(err, errlen, "%s[%d]: cannot read its watermarks: %s", a->topic, (int)p, rd_kafka_err2str(e));
            return -1;
        }
        if (read_until(a, p, hi, deadline, timeout_ms, err, errlen) != 0) return -1;
    }
    return 0;
}

int eg_audit_read_past(eg_audit *a, int32_t partition, int64_t offset, int timeout_ms, char *err, size_t errlen) {
    if (partition < 0 || partition >= a->nparts) {
        snprintf(err, errlen, "%s has no partition %d", a->topic, (int)partition);
        return -1;
    }
    return read_until(a, partition, offset + 1, eg_now_ms() + timeout_ms, timeout_ms, err, errlen);
}

eg_audit *eg_audit_open_topic(const eg_config *cfg, const char *topic, const char *kind, struct event_base *base,
                              eg_audit_apply apply, void *arg, char *err, size_t errlen) {
    eg_audit *a = eg_xcalloc(1, sizeof *a);
    a->ppipe[0] = a->ppipe[1] = a->cpipe[0] = a->cpipe[1] = -1;
    a->topic = eg_xstrdup(topic);
    eg_strlcpy(a->kind, kind, sizeof a->kind);
    a->apply = apply;
    a->arg = arg;
    char e[512], note[512];
    if (cfg->control_key_file && cfg->control_key_file[0]) {
        if (eg_ctlsign_load(cfg->control_key_file, &a->key, err, errlen) != 0) goto fail;
        a->seen = eg_xcalloc(EG_AUDIT_SEEN, sizeof *a->seen);
    } else {
        eg_log_msg(EG_WARN, "control_unauthenticated",
                   "no control_key_file: the control topics (%s, LANE.state) are unauthenticated; anyone who can "
                   "produce to them steers this gateway, and a source record's errgate.id and original.* headers "
                   "are taken as they come (provenance.h)",
                   a->topic);
    }
    rd_kafka_conf_t *pc = eg_lanes_producer_conf(cfg, "errgate-audit", err, errlen);
    if (!pc) goto fail;
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%d", EG_AUDIT_WRITE_TIMEOUT_MS);
    rd_kafka_conf_set(pc, "message.timeout.ms", tmo, e, sizeof e);
    rd_kafka_conf_set(pc, "linger.ms", "0", e, sizeof e);
    rd_kafka_conf_set_dr_msg_cb(pc, on_delivery);
    a->pconf = rd_kafka_conf_dup(pc);
    if (!(a->prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, e, sizeof e))) {
        rd_kafka_conf_destroy(pc);
        snprintf(err, errlen, "audit producer: %s", e);
        goto fail;
    }
    static const char *const defaults[][2] = {{"client.id", "errgate-audit"}, {NULL, NULL}};
    static const char *const fixed[][2] = {{"enable.auto.commit", "false"},
                                           {"enable.auto.offset.store", "false"},
                                           {"enable.partition.eof", "false"},
                                           {"fetch.wait.max.ms", "100"},
                                           /* a position out of range (records deleted or compacted away
                                            * under it) re-reads from the earliest: skipping to the end
                                            * would miss changes and clears silently */
                                           {"auto.offset.reset", "earliest"},
                                           {"group.id", "errgate-audit-reader"}, /* never joined, never committed */
                                           {NULL, NULL}};
    rd_kafka_conf_t *cc = eg_kconf_build(cfg, defaults, fixed, err, errlen);
    if (!cc) goto fail;
    if (!(a->cons = rd_kafka_new(RD_KAFKA_CONSUMER, cc, e, sizeof e))) {
        rd_kafka_conf_destroy(cc);
        snprintf(err, errlen, "audit consumer: %s", e);
        goto fail;
    }
    rd_kafka_poll_set_consumer(a->cons);
    /* one start deadline for all of it; the brokers may be down while the
     * gateway starts: each step is asked again until then, unless the
     * cluster refused the credentials (not waited out: every client of the
     * process logs in with them, kconf.h's eg_kafka_auth_failure) */
    int64_t deadline = eg_now_ms() + EG_AUDIT_START_MS;
    int ensured;
    char auth[300];
    while ((ensured = eg_dlq_state_ensure(a->prod, a->topic, 1, note, sizeof note, err, errlen)) != 0 &&
           eg_now_ms() < deadline && !eg_kafka_auth_failure(auth, sizeof auth))
        usleep(500 * 1000);
    if (ensured != 0) goto fail;
    if (note[0]) eg_log_msg(EG_INFO, "audit_topic", "%s", note);
    int n = topic_partitions(a->cons, a->topic, deadline, err, errlen);
    if (n <= 0) goto fail;
    a->nparts = n;
    a->next = eg_xcalloc((size_t)n, sizeof *a->next);
    a->rereading = eg_xcalloc((size_t)n, 1);
    if (read_to_end(a, deadline, err, errlen) != 0) goto fail;
    a->live = 1;
    a->pq = rd_kafka_queue_get_main(a->prod);
    a->cq = rd_kafka_queue_get_consumer(a->cons);
    if (wire(base, a->pq, a->ppipe, &a->pev, a) != 0 || wire(base, a->cq, a->cpipe, &a->cev, a) != 0) {
        snprintf(err, errlen, "audit: cannot watch the Kafka queues");
        goto fail;
    }
    eg_log_msg(EG_INFO, "audit_topic", "%s read to its end (%d partitions); following it", a->topic, n);
    eg_audit_poll(a); /* what arrived meanwhile */
    return a;
fail:
    if (strncmp(err, "audit", 5) && strncmp(err, a->topic, strlen(a->topic))) {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "audit topic %s: %s", a->topic, err);
        eg_strlcpy(err, tmp, errlen);
    }
    eg_audit_free(a);
    return NULL;
}

/* Replaces a producer that met a fatal error (see the top of the file): its
 * writes are purged (each done with an error), then it is destroyed and a
 * fresh one wired in its place. Returns 0, or -1 with err when the bound is
 * reached or no producer can be created. */
static int replace_producer(eg_audit *a, char *err, size_t errlen) {
    char why[256], e[512];
    rd_kafka_fatal_error(a->prod, why, sizeof why);
    int64_t now = eg_now_ms();
    if (!eg_replace_allowed(&a->replaced, now)) {
        snprintf(err, errlen,
                 "the audit producer failed fatally (%.200s) after %d replacements in %d min: restart "
                 "the gateway",
                 why, EG_PRODUCER_REPLACE_MAX, EG_PRODUCER_REPLACE_WINDOW_MS / 60000);
        return -1;
    }
    rd_kafka_conf_t *c = rd_kafka_conf_dup(a->pconf);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    if (!rk) {
        rd_kafka_conf_destroy(c);
        snprintf(err, errlen, "the audit producer failed fatally (%.200s) and none could replace it: %.200s", why, e);
        return -1;
    }
    rd_kafka_purge(a->prod, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    for (int i = 0; i < 50 && rd_kafka_outq_len(a->prod) > 0; i++) rd_kafka_poll(a->prod, 20);
    rd_kafka_queue_io_event_enable(a->pq, -1, NULL, 0);
    rd_kafka_queue_destroy(a->pq);
    rd_kafka_destroy(a->prod);
    a->prod = rk;
    a->pq = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(a->pq, a->ppipe[1], "1", 1);
    eg_replace_record(&a->replaced, now);
    eg_log_msg(EG_WARN, "audit_producer_replaced", "a fresh audit producer replaces the one that failed fatally: %s",
               why);
    return 0;
}

int eg_audit_write(eg_audit *a, const char *key, const void *val, size_t vlen, eg_audit_written done, void *req,
                   char *err, size_t errlen) {
    return eg_audit_write_at(a, RD_KAFKA_PARTITION_UA, key, val, vlen, done, req, err, errlen);
}

int32_t eg_audit_partitions(const eg_audit *a) { return a ? a->nparts : 0; }

int eg_audit_write_at(eg_audit *a, int32_t partition, const char *key, const void *val, size_t vlen,
                      eg_audit_written done, void *req, char *err, size_t errlen) {
    if (rd_kafka_fatal_error(a->prod, NULL, 0) && replace_producer(a, err, errlen) != 0) return -1;
    wreq *w = eg_xcalloc(1, sizeof *w);
    w->done = done;
    w->req = req;
    rd_kafka_headers_t *h = rd_kafka_headers_new(1);
    if (a->key.n) {
        char sig[EG_CTLSIGN_LEN + 1];
        eg_ctlsign_sign(&a->key, a->kind, key, strlen(key), val, vlen, sig);
        rd_kafka_header_add(h, EG_CTLSIGN_HEADER, -1, sig, EG_CTLSIGN_LEN);
    }
    rd_kafka_resp_err_t e =
        rd_kafka_producev(a->prod, RD_KAFKA_V_TOPIC(a->topic), RD_KAFKA_V_PARTITION(partition),
                          RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE((void *)val, vlen), RD_KAFKA_V_HEADERS(h),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(w), RD_KAFKA_V_END);
    if (e) rd_kafka_headers_destroy(h); /* owned by the message once queued */
    if (e) {
        snprintf(err, errlen, "cannot queue the write to %s: %s", a->topic, rd_kafka_err2str(e));
        free(w);
        return -1;
    }
    return 0;
}

uint64_t eg_audit_reread(const eg_audit *a) { return a ? a->reread : 0; }

int eg_audit_applied(const eg_audit *a, int32_t partition, int64_t offset) {
    return partition >= 0 && partition < a->nparts && a->next[partition] > offset;
}

void eg_audit_free(eg_audit *a) {
    if (!a) return;
    if (a->prod) {
        rd_kafka_purge(a->prod, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        for (int i = 0; i < 50 && rd_kafka_outq_len(a->prod) > 0; i++) rd_kafka_poll(a->prod, 20);
    }
    if (a->pq) rd_kafka_queue_io_event_enable(a->pq, -1, NULL, 0);
    if (a->cq) rd_kafka_queue_io_event_enable(a->cq, -1, NULL, 0);
    if (a->pev) event_free(a->pev);
    if (a->cev) event_free(a->cev);
    if (a->pq) rd_kafka_queue_destroy(a->pq);
    if (a->cq) rd_kafka_queue_destroy(a->cq);
    if (a->cons) {
        rd_kafka_consumer_close(a->cons);
        rd_kafka_destroy(a->cons);
    }
    if (a->prod) rd_kafka_destroy(a->prod);
    if (a->pconf) rd_kafka_conf_destroy(a->pconf);
    for (int i = 0; i < 2; i++) {
        if (a->ppipe[i] >= 0) close(a->ppipe[i]);
        if (a->cpipe[i] >= 0) close(a->cpipe[i]);
    }
    free(a->next);
    free(a->rereading);
    free(a->seen);
    memset(&a->key, 0, sizeof a->key);
    free(a->topic);
    free(a);
}
