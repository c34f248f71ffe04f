/* lanes.c — the lane producer and the lane record format (see lanes.h).
 *
 * The error.message header is redacted here (redact.h): messages that come
 * from C (targets, fallbacks) have not been through the policy runtime's
 * redactor, and a lane topic is read by more people than the logs. Per lane
 * topic counters are kept for /lanes and /metrics.
 *
 * A fatal error of the (non-transactional) idempotent producer, such as
 * librdkafka 2.0.2's OUT_OF_ORDER_SEQUENCE_NUMBER after a broker lost the
 * tail of its log, replaces the producer in place, at most
 * EG_PRODUCER_REPLACE_MAX times in EG_PRODUCER_REPLACE_WINDOW_MS: the broken one's
 * queued and in-flight writes are purged (each comes back to the gateway as
 * a failed write, retried like any other: a write that had reached the
 * broker is then in its lane twice, never lost), a fresh producer (a new
 * producer id, sequences from zero) takes the next writes, and the old one
 * is destroyed once its last report is served. Past the bound, or in
 * transactional mode (a fatal error there is a fencing), the fatal callback
 * stops the gateway. */
#include "lanes.h"

#include "ctlsign.h"
#include "headers.h"
#include "history.h"
#include "lane_state.h"
#include "dlq_origin.h"
#include "kconf.h"
#include "lane_envelope.h"
#include "lane_profiles.h"
#include "log.h"
#include "protect.h"
#include "provenance.h"
#include "redact.h"
#include "refusal.h"
#include "replay_headers.h"
#include "text.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct lane_topic {
    eg_lane lane;
    char *src;  /* source topic */
    char *rung; /* rung name (EG_LANE_RETRY), else NULL */
    char *name; /* lane topic */
    rd_kafka_topic_t *rkt;
    rd_kafka_topic_t *old_rkt; /* the handle of a replaced producer, while it serves reports */
    uint64_t written, failed;
    int inflight;
} lane_topic;

struct eg_lanes {
    rd_kafka_t *rk;
    rd_kafka_queue_t *mainq;
    int pipefd[2];
    struct event *ev;
    const char *tmpl[EG_LANE__N]; /* borrowed from the config */
    int approval[EG_LANE__N];     /* lanes.*_approval: the lane's records need approval */
    char *group;
    unsigned profiles; /* lanes.profiles */
    int inbox;         /* source.inbox: original.* from the foreign DLQ headers */
    lane_topic *topics;
    int ntopics;
    rd_kafka_conf_t *conf;     /* the producer's configuration, for a replacement (NULL: transactional) */
    rd_kafka_t *old;           /* a producer replaced after a fatal error, until its last report is served */
    rd_kafka_queue_t *oldq;    /* its main queue (wakes the loop through the same pipe) */
    int replace;               /* a fatal error was reported: replace the producer after this poll */
    char fatal_msg[700];       /* what it was */
    eg_replace_bound replaced; /* replacements of the producer (kconf.h) */
    int outstanding;
    eg_lane_done_fn done;
    eg_lane_fatal_fn fatal;
    void *done_arg;
    eg_ctlkey ctlkey;  /* control_key_file: signs the state records it writes (n == 0: none) */
    int transactional; /* lanes.transactional: writes belong to transactions */
    /* lanes.protect (protect.h): the mode of the DLQ and quarantine lanes,
     * the paths mask replaces (NULL: none configured), the key ring (n == 0:
     * none) and what a payload mask cannot read becomes */
    int prot_mode[2];
    eg_prot_mask *mask;
    eg_prot_keys keys;
    int unmaskable;
    uint64_t *unprotectable; /* the gateway's counter, or NULL */
    eg_lane_env env;         /* app, stage, schema: the envelope's names (lane_envelope.h) */
};

int eg_lane_of(eg_action a) {
    return a == EG_ACT_DLQ                            ? EG_LANE_DLQ
           : a == EG_ACT_QUARANTINE                   ? EG_LANE_QUARANTINE
           : a == EG_ACT_LADDER || a == EG_ACT_REPLAY ? EG_LANE_RETRY
           : a == EG_ACT_REPUBLISH                    ? EG_LANE_OUT
           : a == EG_ACT_IGNORE                       ? EG_LANE_STATE
                                                      : -1;
}

int eg_lanes_writes(const eg_lanes *l, eg_action a) { return eg_lane_of(a) >= 0 && (a != EG_ACT_IGNORE || l->inbox); }

const char *eg_lane_name(eg_lane lane) {
    return lane == EG_LANE_DLQ          ? "dlq"
           : lane == EG_LANE_QUARANTINE ? "quarantine"
           : lane == EG_LANE_OUT        ? "replay"
           : lane == EG_LANE_STATE      ? "state"
                                        : "retry";
}

/* Delivery report (served by rd_kafka_poll on the loop thread): counts the
 * write for its lane topic (a purge is not a failure) and hands the record
 * back to the gateway through done. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    eg_lanes *l = opaque;
    rd_kafka_resp_err_t err = eg_delivery_err(m); /* delivered without an offset: not confirmed */
    l->outstanding--;
    for (int i = 0; i < l->ntopics; i++)
        if (l->topics[i].rkt == m->rkt || (l->topics[i].old_rkt && l->topics[i].old_rkt == m->rkt)) {
            lane_topic *t = &l->topics[i];
            t->inflight--;
            if (!err) t->written++;
            else if (err != RD_KAFKA_RESP_ERR__PURGE_QUEUE && err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT) t->failed++;
            break;
        }
    l->done((eg_record *)m->_private, err, l->done_arg);
}

static int32_t same_partition(const rd_kafka_topic_t *rkt, const void *key, size_t keylen, int32_t partition_cnt,
                              void *rkt_opaque, void *msg_opaque);

/* Served by rd_kafka_poll from on_queue: on the loop thread. */
static void on_producer_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    eg_lanes *l = opaque;
    if (err != RD_KAFKA_RESP_ERR__FATAL) {
        eg_log_msg(EG_WARN, "lane_producer_error", "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
        return;
    }
    char why[512], msg[700];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof why);
    snprintf(msg, sizeof msg, "fatal lane producer error %s: %s", rd_kafka_err2name(orig), orig ? why : reason);
    eg_logline ll;
    int replace = l->conf && rk == l->rk && eg_replace_allowed(&l->replaced, eg_now_ms());
    if (eg_log_begin(&ll, EG_ERROR, "lane_producer_fatal")) {
        eg_log_str(&ll, "error", rd_kafka_err2name(orig));
        eg_log_str(&ll, "reason", orig ? why : reason);
        eg_log_str(&ll, "next",
                   replace ? "the producer is replaced; its unconfirmed writes are written again"
                           : "the gateway stops");
        eg_log_end(&ll);
    }
    if (rk != l->rk) return; /* a replaced producer: its writes are purged already */
    if (replace) {           /* after the poll that reported it (on_queue): its reports are still being served */
        l->replace = 1;
        eg_strlcpy(l->fatal_msg, msg, sizeof l->fatal_msg);
        return;
    }
    if (l->fatal) l->fatal(msg, l->done_arg);
}

/* Destroys the replaced producer once nothing of it is left to serve. */
static void reap_old(eg_lanes *l) {
    if (!l->old || rd_kafka_outq_len(l->old) > 0) return;
    for (int i = 0; i < l->ntopics; i++)
        if (l->topics[i].old_rkt) {
            rd_kafka_topic_destroy(l->topics[i].old_rkt);
            l->topics[i].old_rkt = NULL;
        }
    rd_kafka_queue_destroy(l->oldq);
    rd_kafka_destroy(l->old);
    l->old = NULL;
    l->oldq = NULL;
    eg_log_msg(EG_INFO, "lane_producer_reaped", "the replaced lane producer served its last report");
}

/* A topic handle for name on rk, with the lane partitioner. */
static rd_kafka_topic_t *topic_handle(rd_kafka_t *rk, const char *name) {
    rd_kafka_topic_conf_t *tc = rd_kafka_topic_conf_new();
    rd_kafka_topic_conf_set_partitioner_cb(tc, same_partition);
    return rd_kafka_topic_new(rk, name, tc);
}

/* Replaces the producer that raised a fatal error (see the top of the
 * file). Waits while an earlier replaced one still serves reports. A
 * producer that cannot be created is fatal. */
static void replace_producer(eg_lanes *l) {
    if (l->old) return; /* once it is reaped (on_queue) */
    char e[512];
    rd_kafka_conf_t *c = rd_kafka_conf_dup(l->conf);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    l->replace = 0;
    if (!rk) {
        rd_kafka_conf_destroy(c);
        char msg[1300];
        snprintf(msg, sizeof msg, "%s; no producer could replace it: %s", l->fatal_msg, e);
        if (l->fatal) l->fatal(msg, l->done_arg);
        return;
    }
    rd_kafka_purge(l->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT | RD_KAFKA_PURGE_F_NON_BLOCKING);
    l->old = l->rk;
    l->oldq = l->mainq;
    l->rk = rk;
    l->mainq = rd_kafka_queue_get_main(rk);
    rd_kafka_queue_io_event_enable(l->mainq, l->pipefd[1], "1", 1);
    for (int i = 0; i < l->ntopics; i++) {
        l->topics[i].old_rkt = l->topics[i].rkt;
        l->topics[i].rkt = topic_handle(rk, l->topics[i].name);
    }
    eg_replace_record(&l->replaced, eg_now_ms());
    eg_log_msg(EG_WARN, "lane_producer_replaced",
               "a fresh lane producer replaces the one that failed (%llu in all; at most %d in %d min): %s",
               (unsigned long long)l->replaced.n, EG_PRODUCER_REPLACE_MAX, EG_PRODUCER_REPLACE_WINDOW_MS / 60000,
               l->fatal_msg);
    event_active(l->ev, EV_READ, 0); /* reports queued on the new one before it was wired */
}

/* Readable pipe: librdkafka has reports for us. Serve them all. */
static void on_queue(evutil_socket_t fd, short what, void *arg) {
    eg_lanes *l = arg;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {}
    while (rd_kafka_poll(l->rk, 0) > 0) {}
    if (l->old) {
        while (rd_kafka_poll(l->old, 0) > 0) {}
        reap_old(l);
    }
    if (l->replace) replace_producer(l);
}

/* Partitioner: the source partition number when the lane has it. Runs on
 * librdkafka's threads too; it only reads the record's immutable partition. */
static int32_t same_partition(const rd_kafka_topic_t *rkt, const void *key, size_t keylen, int32_t partition_cnt,
                              void *rkt_opaque, void *msg_opaque) {
    const eg_record *rec = msg_opaque;
    if (partition_cnt <= 0) return RD_KAFKA_PARTITION_UA;
    int32_t p = rec->partition;
    /* a republished replay goes back to its original partition (set before the write, not changed during it) */
    if (rec->fail && rec->fail->decision.action == EG_ACT_REPUBLISH && rec->fail->decision.out_partition >= 0)
        p = rec->fail->decision.out_partition;
    return p < partition_cnt ? p : p % partition_cnt;
}

/* Waits this long for a transaction coordinator at start. */
#define TXN_INIT_TIMEOUT_MS 60000

/* lanes.transactional: the producer's transactional.id, stable across the
 * instance's restarts (config.c checked lanes.instance's characters). */
static int txn_conf(const eg_config *cfg, rd_kafka_conf_t *conf, char *err, size_t errlen) {
    char id[512], e[256];
    snprintf(id, sizeof id, "errgate.%s.%s", cfg->scope, cfg->lanes_instance);
    if (eg_ktxn_conf(conf, id, 60000, e, sizeof e) != 0) {
        snprintf(err, errlen, "lanes.transactional: %s", e);
        return -1;
    }
    return 0;
}

/* lanes.transactional at start: refuses the embedded broker (librdkafka's
 * mock cluster, whose id starts with "mockCluster": it accepts transactions
 * but keeps no offsets of them and writes no abort markers), then
 * init_transactions. Returns 0, or -1 with err. */
static int txn_init(eg_lanes *l, char *err, size_t errlen) {
    if (eg_ktxn_on_mock(l->rk, 10000)) {
        snprintf(err, errlen,
                 "lanes.transactional: the embedded broker (errgate broker, librdkafka's mock cluster) "
                 "has no real transactions; exactly-once lanes need a Kafka cluster");
        return -1;
    }
    char e[400];
    if (eg_ktxn_init(l->rk, TXN_INIT_TIMEOUT_MS, e, sizeof e) != 0) {
        snprintf(err, errlen,
                 "lanes.transactional: the lane producer could not start transactions: %s (the cluster must "
                 "have a transaction coordinator; the principal needs WRITE and DESCRIBE on the transactional id)",
                 e);
        return -1;
    }
    l->transactional = 1;
    eg_log_msg(EG_INFO, "lanes_transactional", "lane records and source offsets commit in transactions");
    return 0;
}

/* lanes.protect: the paths parsed (the config checked them), the key
 * ring loaded. Returns 0, or -1 with a message in err. */
static int protect_init(eg_lanes *l, const eg_config *cfg, char *err, size_t errlen) {
    l->prot_mode[EG_LANE_DLQ] = cfg->protect_mode[0];
    l->prot_mode[EG_LANE_QUARANTINE] = cfg->protect_mode[1];
    l->unmaskable = cfg->protect_unmaskable ? cfg->protect_unmaskable : EG_PROT_POINTER;
    if (cfg->nprotect_paths) {
        l->mask = eg_xcalloc(1, sizeof *l->mask);
        eg_strlcpy(l->mask->token, cfg->protect_token ? cfg->protect_token : "[masked]", sizeof l->mask->token);
        l->mask->hash = cfg->protect_hash;
        for (int i = 0; i < cfg->nprotect_paths && i < EG_PROT_PATHS; i++) {
            char e[160];
            const char *p = cfg->protect_paths[i];
            if (eg_jpath_parse(p, strlen(p), &l->mask->paths[l->mask->npaths], e, sizeof e) != 0) {
                snprintf(err, errlen, "lanes.protect.paths[%d]: %s", i + 1, e);
                return -1;
            }
            l->mask->npaths++;
        }
    }
    if (cfg->protect_key_file && eg_prot_keys_load(cfg->protect_key_file, &l->keys, err, errlen) != 0) return -1;
    return 0;
}

eg_lanes *eg_lanes_new(const eg_config *cfg, struct event_base *base, eg_lane_done_fn done, eg_lane_fatal_fn fatal,
                       void *arg, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = eg_lanes_producer_conf(cfg, "errgate-lanes", err, errlen);
    char e[512];
    if (!conf) return NULL;
    eg_lanes *l = eg_xcalloc(1, sizeof *l);
    if (cfg->lanes_transactional && txn_conf(cfg, conf, err, errlen) != 0) {
        rd_kafka_conf_destroy(conf);
        free(l);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, l);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_producer_error);
    if (!cfg->lanes_transactional) l->conf = rd_kafka_conf_dup(conf);
    l->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!l->rk) {
        snprintf(err, errlen, "cannot create the lane producer: %s", e);
        if (l->conf) rd_kafka_conf_destroy(l->conf);
        free(l);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    l->done = done;
    l->fatal = fatal;
    l->done_arg = arg;
    if (cfg->control_key_file && eg_ctlsign_load(cfg->control_key_file, &l->ctlkey, err, errlen) != 0) {
        rd_kafka_destroy(l->rk);
        if (l->conf) rd_kafka_conf_destroy(l->conf);
        free(l);
        return NULL;
    }
    l->tmpl[EG_LANE_DLQ] = cfg->lane_dlq;
    l->tmpl[EG_LANE_QUARANTINE] = cfg->lane_quarantine;
    l->tmpl[EG_LANE_RETRY] = cfg->lane_retry;
    l->tmpl[EG_LANE_OUT] = "{topic}";         /* a republished replay: the decision's topic */
    l->tmpl[EG_LANE_STATE] = "{topic}.state"; /* dlq.h: eg_dlq_state_topic */
    l->approval[EG_LANE_DLQ] = cfg->dlq_approval;
    l->approval[EG_LANE_QUARANTINE] = cfg->quarantine_approval;
    l->group = eg_xstrdup(cfg->group);
    l->profiles = cfg->lane_profiles;
    l->inbox = cfg->inbox != NULL;
    eg_lane_env_init(&l->env, cfg);
    if (protect_init(l, cfg, err, errlen) != 0) {
        eg_lanes_free(l);
        return NULL;
    }
    if (pipe2(l->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %m");
        eg_lanes_free(l);
        return NULL;
    }
    l->mainq = rd_kafka_queue_get_main(l->rk);
    rd_kafka_queue_io_event_enable(l->mainq, l->pipefd[1], "1", 1);
    l->ev = event_new(base, l->pipefd[0], EV_READ | EV_PERSIST, on_queue, l);
    event_add(l->ev, NULL);
    /* librdkafka writes to the pipe only when the queue turns non-empty: a
     * report queued since rd_kafka_new (a broker refusing the connection)
     * would leave it non-empty and silent for good, so serve it once now */
    event_active(l->ev, EV_READ, 0);
    if (cfg->lanes_transactional && txn_init(l, err, errlen) != 0) {
        eg_lanes_free(l);
        return NULL;
    }
    return l;
}

/* The lane topic for (lane, source topic, rung), created with its topic
 * handle (and same_partition) on first use. Owned by l. */
static lane_topic *lookup(eg_lanes *l, eg_lane lane, const char *src, const char *rung) {
    if (lane != EG_LANE_RETRY) rung = NULL;
    for (int i = 0; i < l->ntopics; i++) {
        const lane_topic *t = &l->topics[i];
        if (t->lane == lane && strcmp(t->src, src) == 0 && (!rung || strcmp(t->rung, rung) == 0)) return &l->topics[i];
    }
    l->topics = eg_xrealloc(l->topics, (size_t)(l->ntopics + 1) * sizeof *l->topics);
    lane_topic *t = &l->topics[l->ntopics++];
    t->lane = lane;
    t->src = eg_xstrdup(src);
    t->rung = rung ? eg_xstrdup(rung) : NULL;
    t->name = eg_lane_topic(l->tmpl[lane], src, rung);
    t->rkt = topic_handle(l->rk, t->name);
    t->old_rkt = NULL;
    t->written = t->failed = 0;
    t->inflight = 0;
    return t;
}

const char *eg_lanes_topic(eg_lanes *l, eg_lane lane, const char *origin, const char *rung) {
    return lookup(l, lane, origin, rung)->name;
}

int eg_lanes_stats(const eg_lanes *l, int i, eg_lane_stats *out) {
    if (i < 0 || i >= l->ntopics) return -1;
    const lane_topic *t = &l->topics[i];
    out->topic = t->name;
    out->lane = t->lane;
    out->written = t->written;
    out->failed = t->failed;
    out->inflight = t->inflight;
    return 0;
}

int eg_lanes_outstanding(const eg_lanes *l) { return l->outstanding; }

/* True for the headers that each lane write sets afresh. */
static int replaced_header(const char *name) {
    if (strcmp(name, EG_H_PROTECT) == 0) return 1; /* said again by this lane's protection, or not at all */
    if (eg_lane_env_header(name)) return 1;        /* the envelope: said again by every lane write */
    static const char *const names[] = {
        EG_H_CLASS,      EG_H_CODE,        EG_H_MESSAGE,     EG_H_TIMESTAMP, EG_H_KIND,     EG_H_STATUS,
        EG_H_CLASS_HINT, EG_H_RETRY_AFTER, EG_H_RETRY_COUNT, EG_H_PREVIOUS,  EG_H_POLICY,   EG_H_ACTION,
        EG_H_REASON,     EG_H_HISTORY,     EG_H_NOT_BEFORE,  EG_H_REPLAY_TO, EG_H_ATTEMPTS, NULL};
    for (const char *const *p = names; *p; p++)
        if (strcmp(name, *p) == 0) return 1;
    /* decided afresh by each lane write */
    return strcmp(name, EG_H_APPROVAL) == 0 || strcmp(name, EG_H_OVERRIDE) == 0 || strcmp(name, EG_H_FENCED_BY) == 0;
}

/* Adds a NUL-terminated header value. */
static void add(rd_kafka_headers_t *h, const char *name, const char *val) { rd_kafka_header_add(h, name, -1, val, -1); }

/* Adds a header value of n bytes (its length is known: no strlen). */
static void add_n(rd_kafka_headers_t *h, const char *name, const char *val, size_t n) {
    rd_kafka_header_add(h, name, -1, val, (ssize_t)n);
}

/* Adds v in decimal (no printf: a dead letter's headers are built per record). */
static void add_int(rd_kafka_headers_t *h, const char *name, int64_t v) {
    char num[24];
    add_n(h, name, num, eg_fmt_i64(v, num, sizeof num));
}

/* Builds the lane headers for rec, bound for lane topic `lane_topic` (see
 * DESIGN §4 and headers.h). */
static rd_kafka_headers_t *lane_headers(eg_lanes *l, const eg_record *rec, const char *lane_topic,
                                        const char *policy_id) {
    const rd_kafka_headers_t *src = eg_record_headers(rec);
    rd_kafka_headers_t *h = rd_kafka_headers_new(src ? rd_kafka_header_cnt(src) + 20 : 20);
    const char *name;
    const void *val, *prev_hist = NULL;
    size_t size, prev_hist_len = 0;
    const void *v;
    /* the same reading as the policy's ctx.retry_count */
    long long retry_count = eg_record_retry_count(rec);
    int64_t attempts = 0; /* errgate.attempts of the lane the record came from */
    for (size_t i = 0; src && rd_kafka_header_get_all(src, i, &name, &val, &size) == 0; i++) {
        if (strcmp(name, EG_H_HISTORY) == 0) {
            prev_hist = val;
            prev_hist_len = size;
        } else if (strcmp(name, EG_H_ATTEMPTS) == 0) {
            /* repeated: the largest well-formed count; a malformed one counts for nothing */
            int64_t n = eg_uint_parse(val, size);
            if (n > attempts && n < INT32_MAX) attempts = n;
        }
        /* errgate.id is written below from eg_record_id: a malformed one is not carried on */
        if (!replaced_header(name) && strcmp(name, EG_H_ID) != 0 && !eg_profile_replaced(l->profiles, name))
            rd_kafka_header_add(h, name, -1, val, (ssize_t)size);
    }
    const eg_fail *fl = rec->fail;
    const eg_decision *d = &fl->decision;
    const eg_failure *f = &fl->failure;
    char ts[40];
    add(h, EG_H_CLASS, d->klass);
    add(h, EG_H_CODE, d->code);
    const char *msg = d->message[0] ? d->message : f->message ? f->message : "";
    char clean[1024];
    add_n(h, EG_H_MESSAGE, clean, eg_redact(msg, strlen(msg), clean, sizeof clean));
    eg_rfc3339(eg_wall_ms(), ts, sizeof ts);
    add(h, EG_H_TIMESTAMP, ts);
    int fenced = d->why == EG_RSN_FENCED; /* followed a parked record: no target attempt, no rung climbed */
    add(h, EG_H_KIND, fenced ? "fenced" : eg_failure_kind_name(f->kind));
    if (f->status) add_int(h, EG_H_STATUS, f->status);
    if (f->class_hint) add(h, EG_H_CLASS_HINT, f->class_hint);
    if (f->retry_after_ms >= 0) add_int(h, EG_H_RETRY_AFTER, f->retry_after_ms);
    retry_count += fl->virtual_rungs; /* rungs waited in place (ordering = partition) */
    if (d->action == EG_ACT_LADDER && !fenced) retry_count++;
    add_int(h, EG_H_RETRY_COUNT, retry_count);
    add_int(h, EG_H_ATTEMPTS, attempts + fl->nhist);
    add(h, EG_H_PREVIOUS, rec->topic);
    if (l->inbox) { /* a foreign DLQ record's birth place (and, for Connect and Streams, its own timestamp) */
        rd_kafka_timestamp_type_t itt;
        int64_t its = rd_kafka_message_timestamp(rec->msg, &itt);
        eg_dlq_origin_adopt_at(h, itt == RD_KAFKA_TIMESTAMP_CREATE_TIME ? its : -1);
    }
    /* written once: a record coming back from a lane keeps its birth place */
    if (rd_kafka_header_get_last(h, EG_H_ORIG_TOPIC, &v, &size) != 0) {
        add(h, EG_H_ORIG_TOPIC, rec->topic);
        add_int(h, EG_H_ORIG_PARTITION, rec->partition);
        add_int(h, EG_H_ORIG_OFFSET, rec->offset);
        rd_kafka_timestamp_type_t tt;
        int64_t t = rd_kafka_message_timestamp(rec->msg, &tt);
        eg_rfc3339(t >= 0 ? t : eg_wall_ms(), ts, sizeof ts);
        add(h, EG_H_ORIG_TIMESTAMP, ts);
    }
    if (rd_kafka_header_get_last(h, EG_H_ORIG_GROUP, &v, &size) != 0) add(h, EG_H_ORIG_GROUP, l->group);
    char id[320];
    eg_record_id(rec, id, sizeof id);
    add(h, EG_H_ID, id);
    add(h, EG_H_POLICY, policy_id);
    add(h, EG_H_ACTION, eg_action_name(d->action));
    add(h, EG_H_REASON, d->reason[0] ? d->reason : d->klass);
    int lane = eg_lane_of(d->action);
    if (lane >= 0 && (l->approval[lane] || d->approval)) add(h, EG_H_APPROVAL, EG_APPROVAL_REQUIRED);
    if ((d->action == EG_ACT_LADDER || d->action == EG_ACT_REPLAY) && d->not_before_ms > 0)
        add_int(h, EG_H_NOT_BEFORE, d->not_before_ms);
    if (d->action == EG_ACT_REPLAY) add(h, EG_H_REPLAY_TO, d->replay_to);
    if (d->override[0]) add(h, EG_H_OVERRIDE, d->override);
    if (fenced && fl->fenced_by[0]) add(h, EG_H_FENCED_BY, fl->fenced_by);
    if (fl->prot_hdr[0]) add(h, EG_H_PROTECT, fl->prot_hdr);
    char hist[EG_HISTORY_MAX_BYTES];
    int n = fl->nhist < EG_HIST_MAX ? fl->nhist : EG_HIST_MAX;
    int first = fl->nhist < EG_HIST_MAX ? 0 : fl->nhist % EG_HIST_MAX; /* ring: oldest kept */
    eg_attempt att[EG_HIST_MAX];
    for (int i = 0; i < n; i++) att[i] = fl->hist[(first + i) % EG_HIST_MAX];
    int bad = 0;
    size_t hl = eg_history_encode(prev_hist, prev_hist_len, att, n, lane_topic, hist, sizeof hist, &bad);
    if (bad)
        eg_log_msg(EG_WARN, "history_unreadable", "%s[%d]@%lld: previous errgate.history dropped", rec->topic,
                   (int)rec->partition, (long long)rec->offset);
    if (hl) rd_kafka_header_add(h, EG_H_HISTORY, -1, hist, (ssize_t)hl);
    eg_lane_env_add(&l->env, rec, src, bad ? NULL : prev_hist, bad ? 0 : prev_hist_len, h);
    eg_profiles_add(h, l->profiles, rec->msg); /* lanes.profiles, from the headers above */
    return h;
}

/* A republished replay (inbox mode): the record's own headers as `errgate
 * replay` writes them (replay.from-dlq = the replay rung's coordinates,
 * errgate.replays + 1; eg_replay_headers). */
static rd_kafka_headers_t *republish_headers(const eg_record *rec) {
    rd_kafka_headers_t *src = NULL;
    rd_kafka_message_headers(rec->msg, &src);
    size_t n = 0;
    const void *v = eg_headers_get(src, EG_H_REPLAYS, &n);
    long replays = eg_replays_parse(v, n);
    char from[320];
    snprintf(from, sizeof from, "%s/%d/%lld", rec->topic, (int)rec->partition, (long long)rec->offset);
    return eg_replay_headers(src, from, eg_wall_ms(), replays < 0 ? 1 : replays + 1);
}

/* The lane topic of rec's decision and the lane record's headers. */
static rd_kafka_headers_t *build(eg_lanes *l, const eg_record *rec, const char *origin, const char *policy_id,
                                 lane_topic **t) {
    const eg_decision *d = &rec->fail->decision;
    if (d->action == EG_ACT_REPUBLISH) {
        *t = lookup(l, EG_LANE_OUT, d->replay_to, NULL);
        return republish_headers(rec);
    }
    if (d->action == EG_ACT_IGNORE) { /* a state record: key and value say it all (eg_lanes_body) */
        *t = lookup(l, EG_LANE_STATE, origin, NULL);
        return rd_kafka_headers_new(0);
    }
    *t = lookup(l, (eg_lane)eg_lane_of(d->action), origin, d->rung);
    return lane_headers(l, rec, (*t)->name, policy_id);
}

/* Signs a built state record (an inbox's accepted loss) into h when the
 * deployment has a control key, as the DLQ commands sign theirs
 * (ctlsign.h): the DLQ readers refuse an unsigned state record then. */
static void sign_state(const eg_lanes *l, const eg_lane_body *b, rd_kafka_headers_t *h) {
    if (!b->built || !l->ctlkey.n) return;
    char sig[EG_CTLSIGN_LEN + 1];
    eg_ctlsign_sign(&l->ctlkey, "state", b->key, b->key_len, b->value, b->value_len, sig);
    rd_kafka_header_add(h, EG_CTLSIGN_HEADER, -1, sig, EG_CTLSIGN_LEN);
}

rd_kafka_headers_t *eg_lanes_record(eg_lanes *l, const eg_record *rec, const char *origin, const char *policy_id,
                                    const eg_lane_body *b, const char **topic) {
    lane_topic *t;
    rd_kafka_headers_t *h = build(l, rec, origin, policy_id, &t);
    sign_state(l, b, h);
    if (rec->fail->decision.action == EG_ACT_REPUBLISH)
        eg_prov_sign(&l->ctlkey, h, b->key, b->key_len, b->value, b->value_len);
    *topic = t->name;
    return h;
}

void eg_lanes_count_unprotectable(eg_lanes *l, uint64_t *ctr) { l->unprotectable = ctr; }

/* Counts and logs that rec's payload could not be protected as asked and
 * what it became instead (the header says it on the record too). */
static void protect_log(const eg_lanes *l, const eg_record *rec, const char *asked, const char *why,
                        const char *became) {
    if (l->unprotectable) (*l->unprotectable)++;
    eg_logline ll;
    if (!eg_log_begin(&ll, EG_WARN, "payload_unprotectable")) return;
    eg_log_str(&ll, "topic", rec->topic);
    eg_log_int(&ll, "partition", rec->partition);
    eg_log_int(&ll, "offset", rec->offset);
    eg_log_str(&ll, "asked", asked);
    eg_log_str(&ll, "why", why);
    eg_log_str(&ll, "written_as", became);
    eg_log_end(&ll);
}

/* Encrypts rec's payload into its fail state; `extra` is appended to the
 * header (";unmasked=..."). Returns 0, or -1 (no key, libcrypto failed). */
static int protect_encrypt(const eg_lanes *l, const eg_record *rec, const char *extra) {
    eg_fail *fl = rec->fail;
    size_t len = 0;
    if (eg_prot_encrypt(&l->keys, rec->msg->payload, rec->msg->len, &fl->prot_value, &len, fl->prot_hdr) != 0)
        return -1;
    fl->prot_len = len;
    fl->prot_mode = EG_PROT_ENCRYPT;
    size_t hl = strlen(fl->prot_hdr);
    snprintf(fl->prot_hdr + hl, sizeof fl->prot_hdr - hl, "%s", extra);
    return 0;
}

/* Makes rec's protected lane value once per lane (protect.h): the route's
 * protect, else the lane's. A payload that cannot be protected as asked
 * (not JSON for mask, no paths, no key, libcrypto failing) never goes out
 * as it came: it is encrypted when lanes.protect.unmaskable says so and a
 * key is there, else written as a pointer; the header says which and why. */
static void protect(const eg_lanes *l, const eg_record *rec) {
    eg_fail *fl = rec->fail;
    const eg_decision *d = &fl->decision;
    int lane = eg_lane_of(d->action);
    if (lane == EG_LANE_OUT || lane == EG_LANE_STATE || lane < 0) return; /* OUT: eg_lanes_unprotect made it */
    if (fl->prot_lane == lane + 1) return;
    free(fl->prot_value);
    fl->prot_value = NULL;
    fl->prot_len = 0;
    fl->prot_hdr[0] = 0;
    fl->prot_lane = lane + 1;
    /* a lane record read again (inbox mode) is protected already: its
     * value and its header go on as they are (protected twice, the first
     * header would be lost and the value unreadable). Only there: on a
     * source record the header is its producer's claim (a plain payload
     * saying "encrypt" would reach the lane as it came), and a rung record
     * holds the payload as it came, never one */
    const void *pv;
    size_t pn;
    const rd_kafka_headers_t *src = eg_record_headers(rec);
    if (l->inbox && src && rd_kafka_header_get_last(src, EG_H_PROTECT, &pv, &pn) == 0 && pv) {
        fl->prot_mode = EG_PROT_NONE;
        eg_printable(pv, pn, fl->prot_hdr, sizeof fl->prot_hdr);
        return;
    }
    if (lane != EG_LANE_DLQ && lane != EG_LANE_QUARANTINE) return; /* a rung holds the payload */
    int mode = d->protect ? d->protect - 1 : l->prot_mode[lane];
    fl->prot_mode = mode;
    if (mode == EG_PROT_NONE) return;
    const char *why = NULL;
    if (mode == EG_PROT_MASK) {
        char *out = NULL;
        size_t olen = 0;
        int masked = 0;
        if (!l->mask) why = "no_paths";
        else if (l->mask->hash && !l->keys.n) why = "no_key";
        else if (eg_prot_mask_json(l->mask, &l->keys, rec->msg->payload, rec->msg->len, &out, &olen, &masked, &why) ==
                 0) {
            fl->prot_value = (unsigned char *)out;
            fl->prot_len = olen;
            if (l->mask->hash)
                snprintf(fl->prot_hdr, sizeof fl->prot_hdr, "mask;masked=%d;hash=%s", masked, l->keys.kid[0]);
            else snprintf(fl->prot_hdr, sizeof fl->prot_hdr, "mask;masked=%d", masked);
            return;
        }
        char extra[48];
        snprintf(extra, sizeof extra, ";unmasked=%s", why);
        if (l->unmaskable == EG_PROT_ENCRYPT && l->keys.n && protect_encrypt(l, rec, extra) == 0) {
            protect_log(l, rec, "mask", why, "encrypt");
            return;
        }
        fl->prot_mode = EG_PROT_POINTER;
        snprintf(fl->prot_hdr, sizeof fl->prot_hdr, "pointer%s", extra);
        protect_log(l, rec, "mask", why, "pointer");
        return;
    }
    if (mode == EG_PROT_ENCRYPT) {
        if (protect_encrypt(l, rec, "") == 0) return;
        why = l->keys.n ? "encrypt_failed" : "no_key";
        fl->prot_mode = EG_PROT_POINTER;
        snprintf(fl->prot_hdr, sizeof fl->prot_hdr, "pointer;unencrypted=%s", why);
        protect_log(l, rec, "encrypt", why, "pointer");
        return;
    }
    fl->prot_mode = EG_PROT_POINTER;
    snprintf(fl->prot_hdr, sizeof fl->prot_hdr, "pointer");
}

int eg_lanes_unprotect(const eg_lanes *l, eg_record *rec, char *why, size_t whylen) {
    eg_fail *fl = rec->fail;
    free(fl->prot_value);
    fl->prot_value = NULL;
    fl->prot_len = 0;
    fl->prot_hdr[0] = 0;
    fl->prot_mode = EG_PROT_NONE;
    fl->prot_lane = EG_LANE_OUT + 1;
    size_t hn = 0;
    const void *h = eg_header(rec->msg, EG_H_PROTECT, &hn);
    int mode = eg_prot_header_mode(h, hn);
    if (mode == EG_PROT_NONE) return 0;
    if (mode == EG_PROT_ENCRYPT) {
        if (eg_prot_decrypt(&l->keys, h, hn, rec->msg->payload, rec->msg->len, &fl->prot_value, &fl->prot_len, why,
                            whylen) != 0)
            return -1;
        fl->prot_mode = EG_PROT_ENCRYPT; /* the value written is the plaintext (eg_lanes_body) */
        return 0;
    }
    char shown[EG_PROT_HDR_MAX];
    eg_printable(h, hn, shown, sizeof shown);
    snprintf(why, whylen, "%s is %s: the lane holds no payload as it came (errgate replay fetches it from the source)",
             EG_H_PROTECT, shown);
    return -1;
}

void eg_lanes_body(const eg_lanes *l, const eg_record *rec, const char *policy_id, eg_lane_body *b) {
    const rd_kafka_message_t *m = rec->msg;
    const eg_decision *d = &rec->fail->decision;
    b->built = d->action == EG_ACT_IGNORE;
    if (!b->built) {
        protect(l, rec);
        const eg_fail *fl = rec->fail;
        b->key = m->key;
        b->key_len = m->key_len;
        b->value = fl->prot_mode != EG_PROT_NONE ? fl->prot_value : m->payload;
        b->value_len = fl->prot_mode != EG_PROT_NONE ? fl->prot_len : m->len;
        return;
    }
    /* the id `dlq stats` and `replay` give the inbox item: its errgate.id, or its coordinates */
    eg_dlq_item_id(m, b->kbuf, sizeof b->kbuf);
    char by[320];
    snprintf(by, sizeof by, "policy %s", policy_id);
    int n = eg_dlq_state_json(EG_DLQ_ACCEPTED_LOSS, d->reason[0] ? d->reason : d->klass, eg_wall_ms(), by, -1, b->vbuf,
                              sizeof b->vbuf);
    if (n < 0)
        n = eg_dlq_state_json(EG_DLQ_ACCEPTED_LOSS, "ignore", eg_wall_ms(), "policy", -1, b->vbuf, sizeof b->vbuf);
    b->key = b->kbuf;
    b->key_len = strlen(b->kbuf);
    b->value = b->vbuf;
    b->value_len = n > 0 ? (size_t)n : 0;
}

rd_kafka_resp_err_t eg_lanes_write(eg_lanes *l, eg_record *rec, const char *origin, const char *policy_id) {
    lane_topic *t;
    const rd_kafka_message_t *m = rec->msg;
    eg_lane_body b;
    eg_lanes_body(l, rec, policy_id, &b); /* first: the protection it makes goes into the headers */
    rd_kafka_headers_t *h = build(l, rec, origin, policy_id, &t);
    void *value = (void *)b.value;
    const void *key = b.key;
    size_t vlen = b.value_len, klen = b.key_len;
    if (rec->fail->lane_stub && !b.built) { /* the lane refused the record's size */
        rd_kafka_headers_t *full = h;
        h = eg_stub_headers(full, m->len, m->key_len, NULL);
        rd_kafka_headers_destroy(full);
        value = NULL;
        vlen = 0;
        if (!eg_stub_keeps_key(klen)) {
            key = NULL;
            klen = 0;
        }
    }
    sign_state(l, &b, h);
    /* a republished record's id and birth place hold at its source only signed (provenance.h) */
    if (rec->fail->decision.action == EG_ACT_REPUBLISH) eg_prov_sign(&l->ctlkey, h, key, klen, value, vlen);
    /* No copy flag for the record's own key and value: they stay owned by
     * rec->msg, which outlives the write (the gateway frees the record only
     * after the delivery report), and a protected value by rec->fail, which
     * lives as long; a built state record's are copied. */
    rd_kafka_resp_err_t err =
        rd_kafka_producev(l->rk, RD_KAFKA_V_RKT(t->rkt), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
                          RD_KAFKA_V_MSGFLAGS(b.built ? RD_KAFKA_MSG_F_COPY : 0), RD_KAFKA_V_VALUE(value, vlen),
                          RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_OPAQUE(rec), RD_KAFKA_V_END);
    if (err) {
        rd_kafka_headers_destroy(h);
        t->failed++;
        return err;
    }
    t->inflight++;
    l->outstanding++;
    return RD_KAFKA_RESP_ERR_NO_ERROR;
}

void eg_lanes_purge(eg_lanes *l, int timeout_ms) {
    if (!l->outstanding) return;
    rd_kafka_purge(l->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    if (l->old) rd_kafka_purge(l->old, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    int64_t until = eg_now_ms() + timeout_ms;
    while (l->outstanding > 0 && eg_now_ms() < until) {
        rd_kafka_poll(l->rk, l->old ? 10 : 50);
        if (l->old) rd_kafka_poll(l->old, 10);
    }
}

void eg_lanes_free(eg_lanes *l) {
    if (!l) return;
    for (int i = 0; i < l->ntopics; i++) {
        rd_kafka_topic_destroy(l->topics[i].rkt);
        if (l->topics[i].old_rkt) rd_kafka_topic_destroy(l->topics[i].old_rkt);
        free(l->topics[i].src);
        free(l->topics[i].rung);
        free(l->topics[i].name);
    }
    free(l->topics);
    if (l->ev) event_free(l->ev);
    if (l->mainq) rd_kafka_queue_destroy(l->mainq);
    if (l->rk) rd_kafka_destroy(l->rk);
    if (l->oldq) rd_kafka_queue_destroy(l->oldq);
    if (l->old) rd_kafka_destroy(l->old);
    if (l->conf) rd_kafka_conf_destroy(l->conf);
    if (l->pipefd[0] > 0) close(l->pipefd[0]);
    if (l->pipefd[1] > 0) close(l->pipefd[1]);
    free(l->group);
    free(l->mask);
    memset(&l->ctlkey, 0, sizeof l->ctlkey);
    memset(&l->keys, 0, sizeof l->keys);
    free(l);
}

int eg_lanes_transactional(const eg_lanes *l) { return l->transactional; }

uint64_t eg_lanes_replaced(const eg_lanes *l) { return l->replaced.n; }
const eg_ctlkey *eg_lanes_ctlkey(const eg_lanes *l) { return &l->ctlkey; }

eg_txn_result eg_lanes_txn_begin(eg_lanes *l, char *err, size_t errlen) { return eg_ktxn_begin(l->rk, err, errlen); }

int eg_lanes_txn_flush(eg_lanes *l, int timeout_ms) {
    int64_t until = eg_now_ms() + timeout_ms;
    while (l->outstanding > 0 && eg_now_ms() < until) rd_kafka_poll(l->rk, 10);
    return l->outstanding;
}

eg_txn_result eg_lanes_txn_abort(eg_lanes *l, int timeout_ms, char *err, size_t errlen) {
    return eg_ktxn_abort(l->rk, timeout_ms, err, errlen);
}

eg_txn_result eg_lanes_txn_commit(eg_lanes *l, rd_kafka_t *consumer, const rd_kafka_topic_partition_list_t *offsets,
                                  int timeout_ms, char *err, size_t errlen) {
    return eg_ktxn_commit(l->rk, consumer, offsets, timeout_ms, err, errlen);
}
