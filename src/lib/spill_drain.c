/* spill_drain.c — the drainer: re-produces spill journal frames to Kafka and
 * retires a segment once every frame in it has a successful delivery report
 * (see spill.h).
 *
 * The drainer owns an idempotent acks=all producer. It keeps a few sealed
 * segments open at a time, in sequence order; for each it records every
 * frame read so far (its offset and state: waiting, in flight, delivered).
 * A step serves delivery reports, retires finished segments, then produces:
 * first frames whose delivery failed (read again with eg_spill_scan_at, so
 * nothing stays in memory but offsets), then the next frames of the segment
 * being read. A failed report puts its frame back to waiting and starts a
 * doubling back-off during which nothing is produced; a success resets it.
 * A segment is retired when it has been read to its end and all its frames
 * are delivered: deleted, or renamed *.corrupt when the scan skipped damaged
 * regions (each logged with its byte range; the scan goes on with the next
 * good frame). A frame Kafka refuses for good (refusal.h), at produce time
 * or in its report, causes no back-off: it is produced again as a stub, and
 * a refused stub is set aside into the segment's .refused file (durable
 * there, it then counts as delivered), so it never holds up later frames
 * or segments. Nothing is deleted on any other path, so a crash (or kill -9) at
 * any point leaves every undelivered frame on disk: re-draining may
 * duplicate, never drop. Failed frames are produced again after the frames
 * that went out meanwhile, so records of one partition can be reordered by
 * a failure (lane records carry no ordering promise).
 *
 * Partitioning: a frame goes to exactly its partition (an explicit
 * partition: librdkafka bypasses custom partitioners for records without a
 * key, so a partitioner cannot promise "the same partition"). When the topic
 * lacks that partition (_UNKNOWN_PARTITION, at once or in the report) the
 * frame is produced again unassigned, and the topic's partitioner maps it to
 * partition % count, lanes.c's rule (a record without a key lands where
 * librdkafka's sticky partitioner puts it); partition -1 is always produced
 * unassigned (consistent_random on the key). Each message carries a token
 * (segment, frame index, partition) as its opaque; the partitioner may run
 * on librdkafka's threads and reads only the token's immutable partition.
 * Everything else runs on the caller's thread (reports are served by
 * rd_kafka_poll from step, poll, free or the attached libevent loop).
 *
 * Sealed segments are found by listing the directory, again only when the
 * journal has sealed one since (only this process writes the journal while
 * it holds the lock). The active segment is sealed by the drainer itself
 * when nothing sealed is left and its first frame is seal_after_ms old, so
 * a gateway's spilled records reach Kafka about that long (plus whatever
 * back-off is running) after the lane comes back. */
#include "spill.h"
#include "kconf.h"
#include "log.h"
#include "refusal.h"
#include "util.h"

#include <event2/event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OPEN_SEGMENTS 4

enum { F_WAIT = 0, F_INFLIGHT, F_DONE };

typedef struct dframe {
    uint64_t off;
    uint32_t bytes; /* frame size, for the in-flight byte cap */
    uint8_t state;
    uint8_t remap; /* its topic lacks its partition: let the partitioner map it */
    uint8_t stub;  /* refused for good: produced as a stub (refusal.h) */
    uint8_t aside; /* the stub was refused too: set it aside, never produce it */
} dframe;

typedef struct dseg {
    uint64_t seq;
    char name[48];
    eg_spill_scan *scan;
    dframe *f;
    size_t n, cap;
    size_t ndone, nwait;
    size_t wait_lo;   /* no waiting frame below this index */
    int eof;          /* read to its end (or to a read error) */
    int corrupt;      /* damaged regions were skipped */
    char reason[160]; /* the first damage: why */
    char lost[160];   /* the damaged byte ranges, "A..B,C..D" (cut short: "...") */
    struct dseg *next;
} dseg;

typedef struct token {
    dseg *seg;
    size_t idx;
    int32_t partition;
} token;

typedef struct dtopic {
    char *name;
    rd_kafka_topic_t *rkt;
    int remap_logged;
} dtopic;

struct eg_spill_drain {
    eg_spill *j;
    rd_kafka_t *rk;
    rd_kafka_conf_t *conf;                    /* a copy of the producer's, to build a replacement from */
    rd_kafka_t *old[EG_PRODUCER_REPLACE_MAX]; /* replaced producers still serving reports */
    eg_replace_bound replaced;
    eg_spill_drain_opts o;
    dseg *segs, *tail; /* open segments, in sequence order */
    int nsegs;
    uint64_t last_seq; /* highest sequence number opened */
    uint64_t *queue;   /* sealed segments not yet opened, ascending */
    size_t nqueue, qhead;
    int listed;            /* the directory was listed at least once */
    uint64_t listed_seals; /* the journal's seal count at that listing */
    dtopic *topics;
    size_t ntopics;
    size_t inflight, inflight_bytes;
    int64_t backoff_ms, backoff_until;
    int fatal;
    int prod_fatal; /* fatal is the producer's (a replacement may cure it) */
    int done;
    char err[256];
    eg_spill_drain_stats st;
    /* attach */
    struct event_base *base;
    struct event *timer, *qev;
    rd_kafka_queue_t *mainq;
    int pipefd[2];
    int idle_ms;
};

/* ------------------------------------------------------------- callbacks */

static int32_t partitioner(const rd_kafka_topic_t *rkt, const void *key, size_t keylen, int32_t cnt, void *rkt_opaque,
                           void *msg_opaque) {
    const token *t = msg_opaque;
    if (cnt <= 0) return RD_KAFKA_PARTITION_UA;
    if (t->partition < 0)
        return rd_kafka_msg_partitioner_consistent_random(rkt, key, keylen, cnt, rkt_opaque, msg_opaque);
    return t->partition < cnt ? t->partition : t->partition % cnt;
}

static void set_backoff(eg_spill_drain *d) {
    int64_t now = eg_now_ms();
    if (now < d->backoff_until) return; /* one doubling per failed round */
    d->backoff_ms = d->backoff_ms ? d->backoff_ms * 2 : d->o.backoff_min_ms;
    if (d->backoff_ms > d->o.backoff_max_ms) d->backoff_ms = d->o.backoff_max_ms;
    d->backoff_until = now + d->backoff_ms;
}

static void frame_wait(dseg *s, size_t idx) {
    s->f[idx].state = F_WAIT;
    s->nwait++;
    if (s->nwait == 1 || idx < s->wait_lo) s->wait_lo = idx;
}

/* A frame whose topic lacks its partition: from now on it is produced
 * unassigned, so the partitioner maps it to partition % count (records
 * without a key: librdkafka's sticky partitioner, which bypasses custom
 * partitioners; still delivered, never stuck). Logged once per topic. */
static void remap(eg_spill_drain *d, dseg *s, size_t idx, const char *topic) {
    s->f[idx].remap = 1;
    for (size_t i = 0; i < d->ntopics; i++)
        if (strcmp(d->topics[i].name, topic) == 0 && !d->topics[i].remap_logged++) {
            eg_logline l;
            if (eg_log_begin(&l, EG_WARN, "spill_partition_remapped")) {
                eg_log_str(&l, "segment", s->name);
                eg_log_str(&l, "topic", topic);
                eg_log_str(&l, "msg", "the topic lacks a frame's partition: sent to partition % count");
                eg_log_end(&l);
            }
        }
}

/* A transient failure of a frame of s (err, at produce time or in its
 * report): counted, the back-off started (doubling once per failed round),
 * logged once per back-off step. */
static void drain_failed(eg_spill_drain *d, dseg *s, const char *topic, int32_t partition, rd_kafka_resp_err_t err,
                         int at_produce) {
    d->st.frames_failed++;
    int first = eg_now_ms() >= d->backoff_until;
    set_backoff(d);
    snprintf(d->err, sizeof d->err, "%s[%d] (%s): %s", topic, (int)partition, s->name, rd_kafka_err2str(err));
    eg_logline l;
    if (first && eg_log_begin(&l, EG_WARN, "spill_drain_failed")) {
        eg_log_str(&l, "segment", s->name);
        eg_log_str(&l, "topic", topic);
        eg_log_int(&l, "partition", partition);
        eg_log_str(&l, "error", rd_kafka_err2name(err));
        eg_log_str(&l, "when", at_produce ? "produce" : "delivery");
        eg_log_int(&l, "retry_in_ms", d->backoff_ms);
        eg_log_end(&l);
    }
}

/* Frame idx of s was refused for good (err, at produce time or in its
 * report): the next attempt is a stub, and a refused stub is set aside
 * (produce does both). Logged and counted each time; no back-off (the lane
 * is not down, and later frames must not wait on this one). */
static void refused(eg_spill_drain *d, dseg *s, size_t idx, const char *topic, int32_t partition,
                    rd_kafka_resp_err_t err, int at_produce) {
    dframe *f = &s->f[idx];
    d->st.frames_refused++;
    const char *next = f->stub ? "set aside" : "retried as a stub";
    snprintf(d->err, sizeof d->err, "%s[%d] (%s, frame at %llu): refused: %s", topic, (int)partition, s->name,
             (unsigned long long)f->off, rd_kafka_err2str(err));
    eg_logline l;
    if (eg_log_begin(&l, EG_ERROR, "spill_frame_refused")) {
        eg_log_str(&l, "segment", s->name);
        eg_log_int(&l, "frame_offset", (int64_t)f->off);
        eg_log_str(&l, "topic", topic);
        eg_log_int(&l, "partition", partition);
        eg_log_str(&l, "error", rd_kafka_err2name(err));
        eg_log_str(&l, "when", at_produce ? "produce" : "delivery");
        eg_log_int(&l, "stub", f->stub);
        eg_log_str(&l, "next", next);
        eg_log_end(&l);
    }
    if (f->stub) f->aside = 1;
    else f->stub = 1;
}

/* The current producer raised a fatal error (librdkafka's idempotence
 * state is broken: rd_kafka_fatal_error): the drainer stops until a step
 * replaces the producer (replace_producer). */
static void producer_fatal(eg_spill_drain *d) {
    char e[200];
    rd_kafka_fatal_error(d->rk, e, sizeof e);
    snprintf(d->err, sizeof d->err, "spill drain producer: fatal error: %s", e);
    d->fatal = d->prod_fatal = 1;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    eg_spill_drain *d = opaque;
    token *t = m->_private;
    dseg *s = t->seg;
    dframe *f = &s->f[t->idx];
    rd_kafka_resp_err_t err = eg_delivery_err(m); /* delivered without an offset: not confirmed */
    d->inflight--;
    d->inflight_bytes -= f->bytes;
    if (err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION && !f->remap && t->partition >= 0) {
        remap(d, s, t->idx, rd_kafka_topic_name(m->rkt));
        frame_wait(s, t->idx);
        free(t);
        return;
    }
    if (err && eg_refusal_of(err) != EG_REFUSAL_NONE) {
        refused(d, s, t->idx, rd_kafka_topic_name(m->rkt), t->partition, err, 0);
        frame_wait(s, t->idx);
        free(t);
        return;
    }
    if (!err) {
        f->state = F_DONE;
        s->ndone++;
        d->st.frames_drained++;
        if (f->stub) {
            d->st.frames_stubbed++;
            eg_logline l;
            if (eg_log_begin(&l, EG_ERROR, "spill_value_omitted")) {
                eg_log_str(&l, "segment", s->name);
                eg_log_int(&l, "frame_offset", (int64_t)f->off);
                eg_log_str(&l, "topic", rd_kafka_topic_name(m->rkt));
                eg_log_str(&l, "msg", "delivered as a stub without value and source headers");
                eg_log_end(&l);
            }
        }
        d->backoff_ms = 0;
        d->backoff_until = 0;
    } else {
        frame_wait(s, t->idx);
        int purged = err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
        if (!purged) drain_failed(d, s, rd_kafka_topic_name(m->rkt), t->partition, err, 0);
        if (err == RD_KAFKA_RESP_ERR__FATAL && rk == d->rk) producer_fatal(d);
    }
    free(t);
}

/* ------------------------------------------------------------------ create */

eg_spill_drain *eg_spill_drain_new(eg_spill *j, rd_kafka_conf_t *conf, const eg_spill_drain_opts *opts, char *err,
                                   size_t errlen) {
    static const char *const forced[][2] = {{"enable.idempotence", "true"}, {"acks", "all"}};
    char e[512];
    for (size_t i = 0; i < sizeof forced / sizeof forced[0]; i++)
        if (rd_kafka_conf_set(conf, forced[i][0], forced[i][1], e, sizeof e) != RD_KAFKA_CONF_OK) {
            snprintf(err, errlen, "spill drain: kafka.%s: %s", forced[i][0], e);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    eg_spill_drain *d = eg_xcalloc(1, sizeof *d);
    d->j = j;
    d->pipefd[0] = d->pipefd[1] = -1;
    d->o = opts ? *opts : (eg_spill_drain_opts){0};
    if (d->o.seal_after_ms == 0) d->o.seal_after_ms = 1000;
    if (d->o.backoff_min_ms <= 0) d->o.backoff_min_ms = 500;
    if (d->o.backoff_max_ms <= 0) d->o.backoff_max_ms = 30000;
    if (d->o.backoff_max_ms < d->o.backoff_min_ms) d->o.backoff_max_ms = d->o.backoff_min_ms;
    if (!d->o.max_inflight) d->o.max_inflight = 10000;
    if (!d->o.max_inflight_bytes) d->o.max_inflight_bytes = (size_t)32 << 20;
    rd_kafka_conf_set_opaque(conf, d);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    d->conf = rd_kafka_conf_dup(conf);
    d->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!d->rk) {
        snprintf(err, errlen, "spill drain: cannot create the producer: %s", e);
        rd_kafka_conf_destroy(conf);
        rd_kafka_conf_destroy(d->conf);
        free(d);
        return NULL;
    }
    return d;
}

const char *eg_spill_drain_error(const eg_spill_drain *d) { return d->err; }
int eg_spill_drain_done(const eg_spill_drain *d) { return d->done; }

void eg_spill_drain_stats_get(const eg_spill_drain *d, eg_spill_drain_stats *out) {
    *out = d->st;
    out->inflight = d->inflight;
    out->backoff_ms = eg_now_ms() < d->backoff_until ? d->backoff_ms : 0;
}

/* ---------------------------------------------------------------- segments */

static void seg_free(dseg *s) {
    eg_spill_scan_close(s->scan);
    free(s->f);
    free(s);
}

/* Refills the queue of sealed segments from the directory. */
static int relist(eg_spill_drain *d) {
    eg_spill_seg *v;
    size_t n;
    eg_spill_stats js;
    eg_spill_stats_get(d->j, &js);
    if (eg_spill_list(eg_spill_dir(d->j), &v, &n, d->err, sizeof d->err) != 0) return -1;
    uint64_t active = eg_spill_active_seq(d->j);
    free(d->queue);
    d->queue = eg_xmalloc((n ? n : 1) * sizeof *d->queue);
    d->nqueue = d->qhead = 0;
    for (size_t i = 0; i < n; i++)
        if (!v[i].corrupt && !v[i].refused && v[i].seq > d->last_seq && v[i].seq != active)
            d->queue[d->nqueue++] = v[i].seq;
    free(v);
    d->listed = 1;
    d->listed_seals = js.segments_sealed;
    return 0;
}

/* Opens the next sealed segment. Returns 1 when one was opened, 0 when none
 * is waiting, -1 on error. */
static int open_next(eg_spill_drain *d) {
    eg_spill_stats js;
    eg_spill_stats_get(d->j, &js);
    /* the queue holds what the last listing found; a segment sealed since
     * has a higher number, so listing again can wait until it is empty */
    if (d->qhead == d->nqueue && (!d->listed || js.segments_sealed != d->listed_seals) && relist(d) != 0) return -1;
    if (d->qhead == d->nqueue) return 0;
    uint64_t seq = d->queue[d->qhead++];
    dseg *s = eg_xcalloc(1, sizeof *s);
    s->seq = seq;
    snprintf(s->name, sizeof s->name, "spill-%016llu.eg", (unsigned long long)seq);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", eg_spill_dir(d->j), s->name);
    s->scan = eg_spill_scan_open(path, d->err, sizeof d->err);
    if (!s->scan) {
        free(s);
        return -1;
    }
    if (d->tail) d->tail->next = s;
    else d->segs = s;
    d->tail = s;
    d->nsegs++;
    d->last_seq = seq;
    return 1;
}

/* Retires every open segment that is read to its end with all its frames
 * delivered. Returns 0, or -1 when a retire failed. */
static int retire_finished(eg_spill_drain *d) {
    dseg **pp = &d->segs, *prev = NULL;
    while (*pp) {
        dseg *s = *pp;
        if (!s->eof || s->ndone != s->n) {
            prev = s;
            pp = &s->next;
            continue;
        }
        if (eg_spill_retire(d->j, s->seq, s->corrupt, d->err, sizeof d->err) != 0) return -1;
        eg_logline l;
        if (eg_log_begin(&l, s->corrupt ? EG_WARN : EG_INFO,
                         s->corrupt ? "spill_segment_corrupt_kept" : "spill_segment_drained")) {
            eg_log_str(&l, "segment", s->name);
            eg_log_int(&l, "frames", (int64_t)s->n);
            if (s->corrupt) {
                char kept[64];
                snprintf(kept, sizeof kept, "%s.corrupt", s->name);
                eg_log_str(&l, "kept_as", kept);
                eg_log_str(&l, "lost_ranges", s->lost);
                eg_log_int(&l, "lost_bytes", (int64_t)eg_spill_scan_state_get(s->scan)->damaged_bytes);
                eg_log_str(&l, "reason", s->reason);
                eg_log_str(&l, "msg", "every intact frame was delivered; the file is kept as evidence only");
            }
            eg_log_end(&l);
        }
        if (s->corrupt) d->st.segments_corrupt++;
        else d->st.segments_drained++;
        *pp = s->next;
        if (d->tail == s) d->tail = prev;
        d->nsegs--;
        seg_free(s);
    }
    return 0;
}

/* ----------------------------------------------------------------- produce */

static rd_kafka_topic_t *topic_get(eg_spill_drain *d, const char *name) {
    size_t i = 0;
    while (i < d->ntopics && strcmp(d->topics[i].name, name) != 0) i++;
    if (i < d->ntopics && d->topics[i].rkt) return d->topics[i].rkt;
    rd_kafka_topic_conf_t *tc = rd_kafka_default_topic_conf_dup(d->rk);
    rd_kafka_topic_conf_set_partitioner_cb(tc, partitioner);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(d->rk, name, tc);
    if (!rkt) return NULL; /* tc is destroyed by rd_kafka_topic_new on failure too */
    if (i == d->ntopics) { /* else a handle of a replaced producer was dropped: a fresh one */
        d->topics = eg_xrealloc(d->topics, (d->ntopics + 1) * sizeof *d->topics);
        d->topics[d->ntopics++] = (dtopic){.name = eg_xstrdup(name)};
    }
    d->topics[i].rkt = rkt;
    return rkt;
}

static int room(const eg_spill_drain *d) {
    return d->inflight < d->o.max_inflight && d->inflight_bytes < d->o.max_inflight_bytes;
}

/* Sets waiting frame idx of s (rec) aside into the segment's .refused file;
 * it then counts as delivered. Returns 0, or 2 (write error: logged,
 * back-off started, the frame stays waiting). */
static int set_aside(eg_spill_drain *d, dseg *s, size_t idx, const eg_spill_rec *rec) {
    char e[300];
    int rc = eg_spill_set_aside(d->j, s->seq, rec, e, sizeof e);
    eg_logline l;
    if (eg_log_begin(&l, EG_ERROR, rc ? "spill_set_aside_failed" : "spill_frame_set_aside")) {
        eg_log_str(&l, "segment", s->name);
        eg_log_int(&l, "frame_offset", (int64_t)s->f[idx].off);
        eg_log_str(&l, "topic", rec->topic);
        eg_log_int(&l, "partition", rec->partition);
        if (rc) {
            eg_log_str(&l, "error", e);
        } else {
            char side[64];
            snprintf(side, sizeof side, "%s.refused", s->name);
            eg_log_str(&l, "file", side);
        }
        eg_log_end(&l);
    }
    if (rc) {
        eg_strlcpy(d->err, e, sizeof d->err);
        set_backoff(d);
        return 2;
    }
    s->f[idx].state = F_DONE;
    s->nwait--;
    s->ndone++;
    d->st.frames_set_aside++;
    return 0;
}

/* Produces waiting frame idx of s (rec: the frame, already read, or NULL to
 * read it again), as a stub when it was refused for good, or sets it aside
 * when its stub was refused too. Returns 0 when produced (or set aside), 1
 * when the producer's queue is full (the frame stays waiting), 2 when
 * refused for now (counted as a failure, back-off started), -1 when the
 * drainer cannot go on. */
static int produce(eg_spill_drain *d, dseg *s, size_t idx, const eg_spill_rec *rec) {
    eg_spill_rec again;
    if (!rec) {
        if (eg_spill_scan_at(s->scan, s->f[idx].off, &again) != 1) {
            snprintf(d->err, sizeof d->err, "%s: frame at offset %llu no longer reads: %s", s->name,
                     (unsigned long long)s->f[idx].off, eg_spill_scan_state_get(s->scan)->reason);
            return -1;
        }
        rec = &again;
    }
    dframe *f = &s->f[idx];
    if (f->aside) return set_aside(d, s, idx, rec);
    rd_kafka_topic_t *rkt = topic_get(d, rec->topic);
    if (!rkt) { /* a name librdkafka refuses: refused for good (then set aside) */
        refused(d, s, idx, rec->topic, rec->partition, rd_kafka_last_error(), 1);
        return produce(d, s, idx, rec);
    }
    rd_kafka_headers_t *h = rd_kafka_headers_new(rec->nheaders ? rec->nheaders : 1);
    for (size_t i = 0; i < rec->nheaders; i++)
        rd_kafka_header_add(h, rec->headers[i].name, -1, rec->headers[i].value, (ssize_t)rec->headers[i].value_len);
    const void *value = rec->value, *key = rec->key;
    size_t vlen = rec->value_len, klen = rec->key_len;
    int64_t ts = rec->timestamp_ms > 0 ? rec->timestamp_ms : 0;
    if (f->stub) { /* no value, no source headers, stamped now (an old timestamp may be the refusal) */
        rd_kafka_headers_t *full = h;
        h = eg_stub_headers(full, rec->value_len, rec->key_len, NULL);
        rd_kafka_headers_destroy(full);
        value = NULL;
        vlen = ts = 0;
        if (!eg_stub_keeps_key(klen)) {
            key = NULL;
            klen = 0;
        }
    }
    token *t = eg_xmalloc(sizeof *t);
    t->seg = s;
    t->idx = idx;
    t->partition = rec->partition;
    int32_t part = rec->partition >= 0 && !f->remap ? rec->partition : RD_KAFKA_PARTITION_UA;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        d->rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(part), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)value, vlen), RD_KAFKA_V_KEY(key, klen), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_OPAQUE(t), RD_KAFKA_V_END);
    if (err) {
        rd_kafka_headers_destroy(h);
        free(t);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return 1;
        if (err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION && part >= 0) {
            remap(d, s, idx, rec->topic);
            return produce(d, s, idx, rec);
        }
        if (eg_refusal_of(err) != EG_REFUSAL_NONE) { /* at most twice: as a stub, then set aside */
            refused(d, s, idx, rec->topic, rec->partition, err, 1);
            return produce(d, s, idx, rec);
        }
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
            producer_fatal(d);
            return -1;
        }
        drain_failed(d, s, rec->topic, rec->partition, err, 1);
        return 2;
    }
    f->state = F_INFLIGHT;
    s->nwait--;
    d->inflight++;
    d->inflight_bytes += s->f[idx].bytes;
    d->st.frames_produced++;
    return 0;
}

/* Produces waiting (failed earlier or refused by a full queue) frames of
 * every open segment, in order. Returns frames produced, or -1; *stop is
 * set when producing must pause (full, refused, back-off). */
static int produce_waiting(eg_spill_drain *d, int budget, int *stop) {
    int produced = 0;
    for (dseg *s = d->segs; s && !*stop; s = s->next) {
        while (s->nwait > 0 && produced < budget && room(d)) {
            while (s->wait_lo < s->n && s->f[s->wait_lo].state != F_WAIT) s->wait_lo++;
            if (s->wait_lo >= s->n) break; /* cannot happen: nwait counts them */
            int rc = produce(d, s, s->wait_lo, NULL);
            if (rc < 0) return -1;
            if (rc > 0) {
                *stop = 1;
                break;
            }
            produced++;
        }
        if (produced >= budget || !room(d)) *stop = 1;
    }
    return produced;
}

/* Reads and produces new frames. Returns frames produced, or -1. */
static int produce_new(eg_spill_drain *d, int budget) {
    int produced = 0;
    while (produced < budget && room(d)) {
        dseg *s = d->tail;
        if (!s || s->eof) {
            if (d->nsegs >= MAX_OPEN_SEGMENTS) break;
            int rc = open_next(d);
            if (rc < 0) return -1;
            if (rc == 1) continue;
            /* nothing sealed is left: seal the active segment when it is due */
            uint64_t frames = eg_spill_active_frames(d->j);
            if (frames && d->o.seal_after_ms >= 0 &&
                eg_now_ms() - eg_spill_active_since_ms(d->j) >= d->o.seal_after_ms) {
                char e[256];
                if (eg_spill_seal(d->j, e, sizeof e) != 0) eg_log_msg(EG_WARN, "spill_seal_failed", "%s", e);
                continue;
            }
            break;
        }
        eg_spill_rec rec;
        int rc = eg_spill_scan_next(s->scan, &rec);
        if (rc == 0) {
            s->eof = 1;
            continue;
        }
        if (rc < 0) {
            const eg_spill_scan_state *ss = eg_spill_scan_state_get(s->scan);
            if (ss->ioerr) {
                snprintf(d->err, sizeof d->err, "%s: %s", s->name, ss->reason);
                return -1;
            }
            /* damage: the scan skipped it and goes on with the next good frame */
            if (!s->corrupt) eg_strlcpy(s->reason, ss->reason, sizeof s->reason);
            s->corrupt = 1;
            size_t used = strlen(s->lost);
            char range[48];
            snprintf(range, sizeof range, "%s%llu..%llu", used ? "," : "", (unsigned long long)ss->offset,
                     (unsigned long long)(ss->offset + ss->bad_len));
            if (used + strlen(range) + 4 < sizeof s->lost) eg_strlcpy(s->lost + used, range, sizeof s->lost - used);
            else if (!strstr(s->lost, "...")) eg_strlcpy(s->lost + used, ",...", sizeof s->lost - used);
            d->st.corrupt_frames++;
            d->st.damaged_bytes += ss->bad_len;
            eg_logline l;
            if (eg_log_begin(&l, EG_ERROR, "spill_frame_corrupt")) {
                eg_log_str(&l, "segment", s->name);
                eg_log_int(&l, "offset", (int64_t)ss->offset);
                eg_log_int(&l, "end", (int64_t)(ss->offset + ss->bad_len));
                eg_log_int(&l, "lost_bytes", (int64_t)ss->bad_len);
                eg_log_int(&l, "good_frames_before", (int64_t)ss->frames);
                eg_log_str(&l, "reason", ss->reason);
                eg_log_end(&l);
            }
            continue;
        }
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 256;
            s->f = eg_xrealloc(s->f, s->cap * sizeof *s->f);
        }
        size_t idx = s->n++;
        s->f[idx] = (dframe){.off = eg_spill_scan_state_get(s->scan)->offset,
                             .bytes = (uint32_t)eg_spill_scan_frame_bytes(s->scan)};
        frame_wait(s, idx);
        rc = produce(d, s, idx, &rec);
        if (rc < 0) return -1;
        if (rc > 0) break; /* stays waiting: produce_waiting takes it later */
        produced++;
    }
    return produced;
}

/* -------------------------------------------------------------------- step */

static void update_done(eg_spill_drain *d) {
    eg_spill_stats js;
    eg_spill_stats_get(d->j, &js);
    d->done = !d->segs && d->qhead == d->nqueue && d->listed && js.segments_sealed == d->listed_seals &&
              d->inflight == 0 && eg_spill_active_frames(d->j) == 0;
}

/* Serves the reports of replaced producers and destroys each once it has
 * none left (its frames are then back to waiting, or delivered). Returns
 * the reports served. */
static int reap_old(eg_spill_drain *d) {
    int work = 0;
    for (int i = 0; i < EG_PRODUCER_REPLACE_MAX; i++) {
        if (!d->old[i]) continue;
        work += rd_kafka_poll(d->old[i], 0);
        if (rd_kafka_outq_len(d->old[i]) > 0) continue;
        rd_kafka_destroy(d->old[i]);
        d->old[i] = NULL;
        eg_log_msg(EG_INFO, "spill_drain_producer_reaped", "the replaced spill drain producer served its last report");
    }
    return work;
}

/* Replaces a producer that raised a fatal error, within the bound of
 * kconf.h: its queued and in-flight frames are purged (their reports put
 * them back to waiting, and the fresh producer sends them again: a
 * duplicate lane record at worst, never a loss), it is kept until it has
 * served its last report (reap_old), and a fresh one from the saved
 * configuration takes its place. Returns 0, or -1 with d->err when the
 * bound is reached or no producer can be created (the drainer stops for
 * good: prod_fatal is cleared so nothing tries again). */
static int replace_producer(eg_spill_drain *d) {
    char why[256], e[512];
    eg_strlcpy(why, d->err, sizeof why);
    int slot = 0;
    while (slot < EG_PRODUCER_REPLACE_MAX && d->old[slot]) slot++;
    d->prod_fatal = 0; /* from here on, a failure is for good */
    if (!eg_replace_allowed(&d->replaced, eg_now_ms()) || slot == EG_PRODUCER_REPLACE_MAX) {
        snprintf(d->err, sizeof d->err,
                 "%.150s; after %d replacements in %d min the drainer stops: restart the gateway", why,
                 EG_PRODUCER_REPLACE_MAX, EG_PRODUCER_REPLACE_WINDOW_MS / 60000);
        return -1;
    }
    rd_kafka_conf_t *c = rd_kafka_conf_dup(d->conf);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, sizeof e);
    if (!rk) {
        rd_kafka_conf_destroy(c);
        snprintf(d->err, sizeof d->err, "%.120s; no producer could replace it: %.100s", why, e);
        return -1;
    }
    rd_kafka_purge(d->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT | RD_KAFKA_PURGE_F_NON_BLOCKING);
    for (size_t i = 0; i < d->ntopics; i++) { /* the messages hold their own references */
        rd_kafka_topic_destroy(d->topics[i].rkt);
        d->topics[i].rkt = NULL;
    }
    d->old[slot] = d->rk;
    d->rk = rk;
    if (d->mainq) {
        rd_kafka_queue_io_event_enable(d->mainq, -1, NULL, 0);
        rd_kafka_queue_destroy(d->mainq);
        d->mainq = rd_kafka_queue_get_main(rk);
        rd_kafka_queue_io_event_enable(d->mainq, d->pipefd[1], "1", 1);
    }
    eg_replace_record(&d->replaced, eg_now_ms());
    d->st.producers_replaced++;
    d->fatal = 0;
    eg_logline l;
    if (eg_log_begin(&l, EG_WARN, "spill_drain_producer_replaced")) {
        eg_log_str(&l, "cause", why);
        eg_log_int(&l, "replaced", (int64_t)d->replaced.n);
        eg_log_str(&l, "msg", "a fresh producer sends the frames the failed one had not confirmed");
        eg_log_end(&l);
    }
    return 0;
}

static int step_once(eg_spill_drain *d, int max_frames);

int eg_spill_drain_step(eg_spill_drain *d, int max_frames) {
    int work = reap_old(d);
    if (d->fatal && !(d->prod_fatal && replace_producer(d) == 0)) return -1;
    int rc = step_once(d, max_frames);
    if (rc < 0 && d->prod_fatal && replace_producer(d) == 0) return work + 1; /* call again soon */
    return rc < 0 ? rc : rc + work;
}

/* eg_spill_drain_step without the producer's replacement. */
static int step_once(eg_spill_drain *d, int max_frames) {
    int work = rd_kafka_poll(d->rk, 0);
    if (d->fatal || retire_finished(d) != 0) {
        d->fatal = 1;
        return -1;
    }
    int produced = 0;
    if (eg_now_ms() >= d->backoff_until) {
        int stop = 0;
        int n = produce_waiting(d, max_frames, &stop);
        if (n < 0) {
            d->fatal = 1;
            return -1;
        }
        produced += n;
        if (!stop && eg_now_ms() >= d->backoff_until) {
            n = produce_new(d, max_frames - produced);
            if (n < 0) {
                d->fatal = 1;
                return -1;
            }
            produced += n;
        }
        if (retire_finished(d) != 0) { /* segments with no frame at all */
            d->fatal = 1;
            return -1;
        }
    }
    update_done(d);
    return produced + work;
}

void eg_spill_drain_poll(eg_spill_drain *d, int timeout_ms) {
    reap_old(d);
    rd_kafka_poll(d->rk, timeout_ms);
}

int eg_spill_drain_next_ms(const eg_spill_drain *d) {
    if (d->fatal) return -1;
    int64_t now = eg_now_ms();
    if (now < d->backoff_until) return (int)(d->backoff_until - now);
    int waiting = 0;
    for (const dseg *s = d->segs; s; s = s->next) waiting |= s->nwait > 0 || !s->eof;
    eg_spill_stats js;
    eg_spill_stats_get(d->j, &js);
    waiting |= d->qhead < d->nqueue || !d->listed || js.segments_sealed != d->listed_seals;
    if (waiting) return room(d) ? 0 : -1;
    if (eg_spill_active_frames(d->j) && d->o.seal_after_ms >= 0) {
        int64_t due = eg_spill_active_since_ms(d->j) + d->o.seal_after_ms - now;
        return due > 0 ? (int)due : 0;
    }
    return -1;
}

/* ------------------------------------------------------------------ attach */

static void run_attached(eg_spill_drain *d) {
    if (d->fatal && !d->prod_fatal) return; /* stopped (logged once) */
    int rc = eg_spill_drain_step(d, 1000);
    if (rc < 0) {
        eg_log_msg(EG_ERROR, "spill_drain_stopped", "%s", d->err);
        return;
    }
    int next = eg_spill_drain_next_ms(d);
    if (next < 0 || next > d->idle_ms) next = d->idle_ms;
    struct timeval tv = {next / 1000, (next % 1000) * 1000};
    evtimer_add(d->timer, &tv);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) { run_attached(arg); }

static void on_queue(evutil_socket_t fd, short what, void *arg) {
    eg_spill_drain *d = arg;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {}
    run_attached(d);
}

int eg_spill_drain_attach(eg_spill_drain *d, struct event_base *base, int idle_ms, char *err, size_t errlen) {
    if (d->base) {
        snprintf(err, errlen, "spill drain: already attached");
        return -1;
    }
    if (pipe2(d->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "spill drain: pipe: %m");
        d->pipefd[0] = d->pipefd[1] = -1;
        return -1;
    }
    d->base = base;
    d->idle_ms = idle_ms > 0 ? idle_ms : 1000;
    d->mainq = rd_kafka_queue_get_main(d->rk);
    rd_kafka_queue_io_event_enable(d->mainq, d->pipefd[1], "1", 1);
    d->qev = event_new(base, d->pipefd[0], EV_READ | EV_PERSIST, on_queue, d);
    d->timer = evtimer_new(base, on_timer, d);
    event_add(d->qev, NULL);
    struct timeval now = {0, 0};
    evtimer_add(d->timer, &now);
    return 0;
}

/* -------------------------------------------------------------------- free */

void eg_spill_drain_free(eg_spill_drain *d, int timeout_ms) {
    if (!d) return;
    if (d->timer) event_free(d->timer);
    if (d->qev) event_free(d->qev);
    if (d->mainq) {
        rd_kafka_queue_io_event_enable(d->mainq, -1, NULL, 0);
        rd_kafka_queue_destroy(d->mainq);
    }
    int64_t until = eg_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (d->inflight > 0 && eg_now_ms() < until) {
        reap_old(d); /* a replaced producer's frames count as in flight too */
        rd_kafka_poll(d->rk, 50);
        if (retire_finished(d) != 0) break;
    }
    if (d->inflight > 0) {
        rd_kafka_purge(d->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        /* purged reports come back at once; in-flight ones when their
         * requests end: bounded all the same */
        until = eg_now_ms() + 10000;
        while (d->inflight > 0 && eg_now_ms() < until) {
            reap_old(d);
            rd_kafka_poll(d->rk, 50);
        }
    }
    for (int i = 0; i < EG_PRODUCER_REPLACE_MAX; i++) /* their frames were purged: reports due at once */
        for (int k = 0; d->old[i] && k < 200 && rd_kafka_outq_len(d->old[i]) > 0; k++) rd_kafka_poll(d->old[i], 50);
    if (!d->fatal) retire_finished(d);
    if (d->inflight > 0)
        eg_log_msg(EG_WARN, "spill_drain_abandoned", "%zu frames still in flight at close (they stay in the journal)",
                   d->inflight);
    for (size_t i = 0; i < d->ntopics; i++) {
        if (d->topics[i].rkt) rd_kafka_topic_destroy(d->topics[i].rkt);
        free(d->topics[i].name);
    }
    free(d->topics);
    rd_kafka_destroy(d->rk);
    for (int i = 0; i < EG_PRODUCER_REPLACE_MAX; i++)
        if (d->old[i]) rd_kafka_destroy(d->old[i]);
    rd_kafka_conf_destroy(d->conf);
    while (d->segs) {
        dseg *s = d->segs;
        d->segs = s->next;
        seg_free(s);
    }
    free(d->queue);
    if (d->pipefd[0] >= 0) close(d->pipefd[0]);
    if (d->pipefd[1] >= 0) close(d->pipefd[1]);
    free(d);
}
