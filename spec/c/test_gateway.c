/* test_gateway.c — the record path of `errgate run` in one process: the
 * gateway (gw_run.c's eg_gw_open, gateway.c) on librdkafka's mock cluster,
 * with a stub target the test drives.
 *
 * Design. The mock cluster runs on librdkafka's threads inside this
 * process; everything else runs on this thread. The gateway is built from a
 * real config file (written to a scratch directory) around a stub target:
 * the stub borrows each record it is given and keeps it until the test
 * completes it (success or an HTTP status), so the test decides what is at
 * the target and when it comes back. The consumer is not subscribed:
 * partitions are handed to the gateway through its rebalance entry point
 * (eg_gw_on_rebalance, the function librdkafka calls on a group's
 * assignment or revocation), which is deterministic and spares the mock's
 * 3 s group join; commits then go to the cluster as a simple (group-less)
 * consumer's, and the test reads them back with a client of its own
 * (rd_kafka_committed), not from the gateway.
 *
 * Nothing sleeps: `wait_until` steps the event loop (one pass at a time,
 * a 5 ms timer bounds each pass) until a condition holds or a generous
 * deadline passes. A condition that must stay false (a record that must
 * wait) is checked once the gateway has taken every message of the
 * partition, when nothing else could let it go.
 *
 * Cases: the ordering gates (partition, key), the pause reasons (retry,
 * hold, lane; each resumes only when its own reason clears), a revoke while
 * records are borrowed (the finished prefix is committed, the borrowed ones
 * are dropped when they come back: no commit past them, no lane write, and
 * they are consumed again after a new assignment), and the commit prefix
 * across out-of-order completion. */
#include "gw.h"
#include "log.h"
#include "tap.h"
#include "util.h"

#include <librdkafka/rdkafka_mock.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 15000       /* a condition's deadline: generous, the machine may be loaded */
#define KAFKA_API_PRODUCE 0 /* the Produce request's ApiKey (rdkafka_mock.h takes the number) */

static rd_kafka_t *mock_rk; /* hosts the mock cluster */
static rd_kafka_mock_cluster_t *mc;
static const char *bootstrap;
static rd_kafka_t *prod; /* produces the source records */
static char scratch[64]; /* the scratch directory */

/* ------------------------------------------------------------ stub target */

/* The stub target: every record submitted is borrowed until the test ends
 * its attempt (stub_end). Results are delivered from the loop (an event),
 * never from inside submit, as target.h asks. */
#define STUB_MAX 64
typedef struct stub {
    eg_target t;
    eg_record *held[STUB_MAX]; /* at the target, in submission order */
    int nheld;
    struct {
        eg_record *r;
        int status; /* 0 success, else an HTTP failure with this status */
    } ready[STUB_MAX];
    int nready;
    int capacity;
    int submits; /* attempts started so far */
    struct event *ev;
} stub;

static int stub_submit(eg_target *t, eg_record *r) {
    stub *s = (stub *)t;
    if (s->nheld + s->nready >= s->capacity) return -1;
    s->held[s->nheld++] = r;
    s->submits++;
    t->inflight++;
    return 0;
}

static int stub_available(const eg_target *t) {
    const stub *s = (const stub *)t;
    return s->capacity - s->nheld - s->nready;
}

/* Delivers the results the test asked for, in the order asked. */
static void stub_deliver(evutil_socket_t fd, short what, void *arg) {
    stub *s = arg;
    while (s->nready > 0) {
        eg_record *r = s->ready[0].r;
        int status = s->ready[0].status;
        memmove(&s->ready[0], &s->ready[1], (size_t)--s->nready * sizeof s->ready[0]);
        s->t.inflight--;
        if (status == 0) {
            s->t.done(r, NULL, 0, s->t.done_arg);
        } else {
            eg_failure f = {.kind = EG_FK_HTTP, .status = status, .retry_after_ms = -1};
            s->t.done(r, &f, 0, s->t.done_arg);
        }
    }
}

static void stub_cancel_all(eg_target *t) {
    stub *s = (stub *)t;
    stub_deliver(-1, 0, s);
    while (s->nheld > 0) {
        eg_record *r = s->held[--s->nheld];
        t->inflight--;
        t->done(r, NULL, 1, t->done_arg);
    }
}

static void stub_destroy(eg_target *t) {
    stub *s = (stub *)t;
    if (s->ev) event_free(s->ev);
    free(s);
}

static const eg_target_ops stub_ops = {
    .submit = stub_submit, .available = stub_available, .cancel_all = stub_cancel_all, .destroy = stub_destroy};

/* A stub with room for `capacity` attempts at once. Its event is made once
 * the gateway has set t.base (after eg_gw_open). */
static stub *stub_new(int capacity) {
    stub *s = eg_xcalloc(1, sizeof *s);
    s->t.ops = &stub_ops;
    s->capacity = capacity;
    return s;
}

/* The record at the target with this partition and offset, or NULL. */
static eg_record *stub_find(const stub *s, int32_t partition, int64_t offset) {
    for (int i = 0; i < s->nheld; i++)
        if (s->held[i]->partition == partition && s->held[i]->offset == offset) return s->held[i];
    return NULL;
}

/* Ends the attempt of the record at partition/offset: status 0 succeeds,
 * any other is an HTTP failure with that status. Returns 0, or -1 when no
 * such record is at the target. The result arrives on the next loop pass. */
static int stub_end(stub *s, int32_t partition, int64_t offset, int status) {
    for (int i = 0; i < s->nheld; i++) {
        if (s->held[i]->partition != partition || s->held[i]->offset != offset) continue;
        s->ready[s->nready].r = s->held[i];
        s->ready[s->nready++].status = status;
        memmove(&s->held[i], &s->held[i + 1], (size_t)(s->nheld - i - 1) * sizeof s->held[0]);
        s->nheld--;
        if (!s->ev) s->ev = event_new(s->t.base, -1, 0, stub_deliver, s);
        event_active(s->ev, 0, 0);
        return 0;
    }
    return -1;
}

/* "offsets at the target: 1 3" (for messages). */
static const char *stub_text(const stub *s) {
    static char buf[512];
    int n = snprintf(buf, sizeof buf, "at the target:");
    for (int i = 0; i < s->nheld && n < (int)sizeof buf - 24; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " %d@%lld", (int)s->held[i]->partition,
                      (long long)s->held[i]->offset);
    return buf;
}

/* ------------------------------------------------------------ the gateway */

typedef struct gwt {
    eg_config cfg;
    eg_gw gw;
    stub *st;
    struct event *tick; /* bounds each loop pass */
    rd_kafka_t *chk;    /* reads the group's commits from the cluster */
    const char *topic;
    const char *group;
    int loaded, opened; /* cfg loaded; eg_gw_open called (gw then needs eg_gw_close) */
} gwt;

static void on_tick(evutil_socket_t fd, short what, void *arg) {}

/* Writes f (printf-style) to scratch/name; returns the path (static). */
static const char *write_file(const char *name, const char *fmt, ...) {
    static char path[2][256];
    static int k;
    char *p = path[k++ % 2];
    snprintf(p, sizeof path[0], "%s/%s", scratch, name);
    FILE *f = fopen(p, "w");
    if (!f) return NULL;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    return p;
}

/* The policy every case runs: 503 retries in place every 20 ms, 429 holds
 * for 20 ms, 400 is dead-lettered. */
static const char policy_lua[] = "local policy = require \"errgate.policy\"\n"
                                 "return policy.define {\n"
                                 "  name = \"gateway-test\", version = \"1\",\n"
                                 "  classify = { { status = 503, class = \"transient\" },\n"
                                 "               { status = 429, class = \"busy\" },\n"
                                 "               { class = \"permanent\" } },\n"
                                 "  retry = { transient = { attempts = 1000, backoff = \"exponential\",\n"
                                 "            base_ms = \"20ms\", max_ms = \"20ms\", jitter = \"none\" } },\n"
                                 "  route = { transient = { retry = \"transient\", exhausted = \"dlq\" },\n"
                                 "            busy = { action = \"hold\", delay_ms = \"20ms\" },\n"
                                 "            default = \"dlq\" },\n"
                                 "}\n";

/* Builds a gateway for source topic `topic` (group `group`) with the given
 * ordering around a stub of `capacity`. Returns 0 or -1 (said). */
static int gwt_open(gwt *g, const char *topic, const char *group, const char *ordering, int capacity) {
    memset(g, 0, sizeof *g);
    g->topic = topic;
    g->group = group;
    char pol[256], tgt[256], err[1024];
    snprintf(pol, sizeof pol, "%s", write_file("policy.lua", "%s", policy_lua));
    snprintf(tgt, sizeof tgt, "%s", write_file("target.lua", "return function(r) end\n"));
    const char *cfgpath =
        write_file("gw.lua",
                   "return { group = \"%s\", source = { topics = { \"%s\" }, ordering = \"%s\" },\n"
                   "  target = { lua = \"%s\" }, policy = \"%s\", commit_interval_ms = 10,\n"
                   "  shutdown_timeout_ms = 2000, log = { level = \"warn\" },\n"
                   "  kafka = { [\"bootstrap.servers\"] = \"%s\", [\"statistics.interval.ms\"] = 0 } }\n",
                   group, topic, ordering, tgt, pol, bootstrap);
    if (!cfgpath || eg_config_load(cfgpath, &g->cfg, err, sizeof err) != 0) {
        printf("# config: %s\n", cfgpath ? err : "not written");
        return -1;
    }
    g->loaded = 1;
    eg_log_setup((eg_level)g->cfg.log_level, 0);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", group, err, sizeof err) ||
        !(g->chk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err))) {
        printf("# the commit reader: %s\n", err);
        return -1;
    }
    g->st = stub_new(capacity);
    g->opened = 1;
    if (eg_gw_open(&g->gw, &g->cfg, &g->st->t, err, sizeof err) != 0) {
        printf("# eg_gw_open: %s\n", err);
        return -1;
    }
    g->tick = event_new(g->gw.base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 5000};
    event_add(g->tick, &tv);
    return 0;
}

/* Stops g's gateway as a stop does (attempts cancelled, finished work
 * committed, consumer closed) and frees everything gwt_open made, whatever
 * part of it exists. */
static void gwt_close(gwt *g) {
    if (g->chk) rd_kafka_destroy(g->chk);
    if (g->tick) event_free(g->tick);
    if (g->opened && g->gw.rk && g->gw.lanes && !g->gw.closed) eg_gw_finish_stop(&g->gw);
    if (g->opened) eg_gw_close(&g->gw);
    if (g->loaded) eg_config_free(&g->cfg);
}

/* Steps g's loop until cond(g, arg) holds; 1 when it did within ms. */
static int wait_until(gwt *g, int (*cond)(gwt *, void *), void *arg, int ms) {
    int64_t end = eg_now_ms() + ms;
    while (!cond(g, arg)) {
        if (eg_now_ms() >= end) return 0;
        event_base_loop(g->gw.base, EVLOOP_ONCE);
        eg_log_flush();
    }
    return 1;
}

/* Assigns (revoke = 0) or revokes (1) partitions 0..n-1 of g's topic the
 * way librdkafka's rebalance callback does. */
static void gwt_rebalance(gwt *g, int n, int revoke) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    for (int i = 0; i < n; i++) rd_kafka_topic_partition_list_add(l, g->topic, i)->offset = RD_KAFKA_OFFSET_INVALID;
    eg_gw_on_rebalance(g->gw.rk, revoke ? RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS : RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS,
                       l, &g->gw);
    rd_kafka_topic_partition_list_destroy(l);
}

static eg_part *part_of(gwt *g, int32_t partition) { return eg_gw_part_find(&g->gw, g->topic, partition); }

/* --------------------------------------------------------------- conditions */

typedef struct {
    int32_t partition;
    int64_t offset;
} at;

static int cond_at_target(gwt *g, void *arg) {
    const at *a = arg;
    return stub_find(g->st, a->partition, a->offset) != NULL;
}

/* Every message of partition 0 up to `n` records has been taken (received). */
static int cond_taken(gwt *g, void *arg) {
    eg_part *p = part_of(g, 0);
    return p && p->trk.next_offset >= *(int64_t *)arg;
}

static int cond_pause_has(gwt *g, void *arg) {
    eg_part *p = part_of(g, 0);
    return p && (p->pause & *(unsigned *)arg) == *(unsigned *)arg;
}

static int cond_pause_lacks(gwt *g, void *arg) {
    eg_part *p = part_of(g, 0);
    return p && (p->pause & *(unsigned *)arg) == 0;
}

static int cond_resumed(gwt *g, void *arg) {
    eg_part *p = part_of(g, 0);
    return p && p->pause == 0 && !p->paused;
}

static int cond_nothing_unfinished(gwt *g, void *arg) { return g->gw.unfinished == 0 && g->st->nready == 0; }

/* Exactly *n records alive in the gateway, every result delivered. */
static int cond_unfinished(gwt *g, void *arg) { return g->gw.unfinished == *(int *)arg && g->st->nready == 0; }

/* The group's committed offset of g's topic[0] on the cluster, read with
 * g's own client (not the gateway's): -1 none, -2 when it could not be read. */
static int64_t committed(gwt *g) {
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, g->topic, 0);
    int64_t off = -2;
    if (rd_kafka_committed(g->chk, l, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR && !l->elems[0].err)
        off = l->elems[0].offset < 0 ? -1 : l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return off;
}

typedef struct {
    int64_t want;
} commit_want;

/* The cluster has the group's commit at `want` (checked every 20 ms of loop
 * time at most: each check is a round trip). */
static int cond_committed(gwt *g, void *arg) {
    static int64_t last;
    if (eg_now_ms() - last < 20) return 0;
    last = eg_now_ms();
    return committed(g) == ((commit_want *)arg)->want;
}

/* Records in topic[0] (its high watermark), -1 when unknown. */
static int64_t topic_records(const char *topic) {
    int64_t lo, hi;
    if (rd_kafka_query_watermark_offsets(prod, topic, 0, &lo, &hi, 5000)) return -1;
    return hi;
}

/* ------------------------------------------------------------ the cluster */

static int delivery_errors;
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    if (m->err) delivery_errors++;
}

/* The source topics of the cases: one partition each, with a DLQ, and the
 * records produced to them (keys[i] NULL: no key). */
static const char *const ko_keys[] = {"A", "B", "A", "C", NULL};
static const struct {
    const char *topic;
    int n;
    const char *const *keys;
} sources[] = {{"po", 3, NULL}, {"ko", 5, ko_keys}, {"pr", 2, NULL}, {"rv", 4, NULL}};

/* Creates the source topics and their DLQs and produces their records
 * (one flush for all: a producer learns of each new topic in ~0.5 s).
 * Returns 0 or -1. */
static int make_sources(void) {
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
        char dlq[128];
        snprintf(dlq, sizeof dlq, "%s.dlq", sources[i].topic);
        if (rd_kafka_mock_topic_create(mc, sources[i].topic, 1, 1) || rd_kafka_mock_topic_create(mc, dlq, 1, 1))
            return -1;
    }
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        for (int k = 0; k < sources[i].n; k++) {
            const char *key = sources[i].keys ? sources[i].keys[k] : NULL;
            char v[32];
            snprintf(v, sizeof v, "value-%d", k);
            if (rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(sources[i].topic), RD_KAFKA_V_PARTITION(0),
                                  RD_KAFKA_V_KEY(key, key ? strlen(key) : 0), RD_KAFKA_V_VALUE(v, strlen(v)),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
                return -1;
        }
    rd_kafka_flush(prod, 10000);
    return rd_kafka_outq_len(prod) == 0 && delivery_errors == 0 ? 0 : -1;
}

static int cluster_up(void) {
    char e[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", e, sizeof e);
    if (!(mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e))) return -1;
    if (!(mc = rd_kafka_mock_cluster_new(mock_rk, 1))) return -1;
    bootstrap = rd_kafka_mock_cluster_bootstraps(mc);
    conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, e, sizeof e);
    rd_kafka_conf_set(conf, "enable.idempotence", "true", e, sizeof e);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    if (!(prod = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e))) return -1;
    return 0;
}

static void cluster_down(void) {
    if (prod) rd_kafka_destroy(prod);
    if (mc) rd_kafka_mock_cluster_destroy(mc);
    if (mock_rk) rd_kafka_destroy(mock_rk);
}

/* ------------------------------------------------------------------ cases */

/* ordering = partition: one record of the partition at the target at a
 * time; an in-place retry pauses the partition (reason retry) until the
 * record is due again; the next record goes only when the first is done. */
static void partition_ordering(void) {
    gwt g;
    if (gwt_open(&g, "po", "g-po", "partition", 8) != 0) {
        CHECK(0, "partition ordering: set up");
        gwt_close(&g);
        return;
    }
    gwt_rebalance(&g, 1, 0);
    int64_t all = 3;
    at a0 = {0, 0}, a1 = {0, 1}, a2 = {0, 2};
    CHECK(wait_until(&g, cond_taken, &all, WAIT_MS), "partition: the gateway took offsets 0..2");
    CHECK(wait_until(&g, cond_at_target, &a0, WAIT_MS), "partition: offset 0 is at the target");
    CHECK(g.st->nheld == 1 && g.st->submits == 1, "partition: 1 and 2 wait while 0 is borrowed (%s)", stub_text(g.st));

    unsigned retry = PAUSE_RETRY;
    stub_end(g.st, 0, 0, 503);
    CHECK(wait_until(&g, cond_pause_has, &retry, WAIT_MS) && part_of(&g, 0)->paused,
          "partition: a 503 retries 0 in place and pauses the partition (reason retry)");
    CHECK(stub_find(g.st, 0, 1) == NULL, "partition: 1 does not pass 0 while it waits to retry");
    CHECK(wait_until(&g, cond_at_target, &a0, WAIT_MS) && stub_find(g.st, 0, 0)->attempt == 2,
          "partition: 0 is at the target again (attempt 2)");
    CHECK(wait_until(&g, cond_resumed, NULL, WAIT_MS), "partition: resumed once 0 is retried (no reason left)");
    CHECK(g.st->nheld == 1, "partition: still only 0 at the target (%s)", stub_text(g.st));

    stub_end(g.st, 0, 0, 0);
    CHECK(wait_until(&g, cond_at_target, &a1, WAIT_MS) && g.st->nheld == 1, "partition: 0 done, 1 goes alone (%s)",
          stub_text(g.st));
    stub_end(g.st, 0, 1, 0);
    CHECK(wait_until(&g, cond_at_target, &a2, WAIT_MS) && g.st->nheld == 1, "partition: 1 done, 2 goes");
    stub_end(g.st, 0, 2, 0);
    commit_want c3 = {3};
    CHECK(wait_until(&g, cond_committed, &c3, WAIT_MS), "partition: all done, the cluster has the commit at 3");
    CHECK(g.st->submits == 4, "partition: 4 attempts in all (%d)", g.st->submits);
    gwt_close(&g);
}

/* ordering = key, and the commit prefix across out-of-order completion:
 * offsets 0..4 with keys A B A C and none. 2 waits behind 0 (same key);
 * the rest go at once. 1 and 3 finish first: nothing past 0 is committed;
 * 0 finishes: the commit reaches 2 (borrowed now) and not 3 or 4 although
 * they are finished; 2 finishes: 5. */
static void key_ordering_and_prefix(void) {
    gwt g;
    if (gwt_open(&g, "ko", "g-ko", "key", 8) != 0) {
        CHECK(0, "key ordering: set up");
        gwt_close(&g);
        return;
    }
    gwt_rebalance(&g, 1, 0);
    int64_t all = 5;
    at a4 = {0, 4}, a2 = {0, 2};
    CHECK(wait_until(&g, cond_taken, &all, WAIT_MS) && wait_until(&g, cond_at_target, &a4, WAIT_MS),
          "key: the gateway took offsets 0..4");
    CHECK(g.st->nheld == 4 && stub_find(g.st, 0, 0) && stub_find(g.st, 0, 1) && stub_find(g.st, 0, 3) &&
              !stub_find(g.st, 0, 2),
          "key: 0 (A), 1 (B), 3 (C), 4 (no key) at the target; 2 (A) waits behind 0 (%s)", stub_text(g.st));

    stub_end(g.st, 0, 1, 0);
    stub_end(g.st, 0, 3, 0);
    commit_want c0 = {0};
    CHECK(wait_until(&g, cond_committed, &c0, WAIT_MS), "prefix: 1 and 3 finished before 0: the commit stays at 0");
    CHECK(!stub_find(g.st, 0, 2), "key: 2 still waits behind 0");

    stub_end(g.st, 0, 0, 0);
    stub_end(g.st, 0, 4, 0);
    CHECK(wait_until(&g, cond_at_target, &a2, WAIT_MS), "key: 0 done, 2 (A) goes to the target");
    commit_want c2 = {2};
    CHECK(wait_until(&g, cond_committed, &c2, WAIT_MS), "prefix: 0, 1, 3, 4 finished, 2 borrowed: the commit is 2");
    eg_part *p = part_of(&g, 0);
    CHECK(p && p->committed == 2 && eg_tracker_commit_point(&p->trk) == 2,
          "prefix: the gateway's commit point is 2, not past the borrowed record");

    stub_end(g.st, 0, 2, 0);
    commit_want c5 = {5};
    CHECK(wait_until(&g, cond_committed, &c5, WAIT_MS), "prefix: 2 finished, the commit jumps to 5");
    gwt_close(&g);
}

/* Pause reasons under ordering = none: a dead letter whose lane write Kafka
 * refuses pauses the partition (reason lane); a hold adds reason hold. The
 * hold clears first: the partition stays paused (the lane still fails);
 * the lane recovers: it resumes. */
static void pause_reasons(void) {
    gwt g;
    if (gwt_open(&g, "pr", "g-pr", "none", 8) != 0) {
        CHECK(0, "pause reasons: set up");
        gwt_close(&g);
        return;
    }
    gwt_rebalance(&g, 1, 0);
    at a0 = {0, 0}, a1 = {0, 1};
    CHECK(wait_until(&g, cond_at_target, &a0, WAIT_MS) && wait_until(&g, cond_at_target, &a1, WAIT_MS),
          "pause: 0 and 1 at the target");
    CHECK(cond_resumed(&g, NULL), "pause: not paused while records are only at the target");

    rd_kafka_resp_err_t refusals[200];
    for (int i = 0; i < 200; i++) refusals[i] = RD_KAFKA_RESP_ERR_POLICY_VIOLATION;
    rd_kafka_mock_push_request_errors_array(mc, KAFKA_API_PRODUCE, 200, refusals);
    stub_end(g.st, 0, 1, 400);
    unsigned lane = PAUSE_LANE, hold = PAUSE_HOLD, both = PAUSE_LANE | PAUSE_HOLD;
    CHECK(wait_until(&g, cond_pause_has, &lane, WAIT_MS) && part_of(&g, 0)->paused,
          "pause: 1's dead letter is refused by the lane: paused (reason lane)");

    stub_end(g.st, 0, 0, 429);
    CHECK(wait_until(&g, cond_pause_has, &both, WAIT_MS), "pause: 0 is held: reasons lane and hold");
    CHECK(wait_until(&g, cond_at_target, &a0, WAIT_MS), "pause: 0 is at the target again after its hold");
    CHECK(part_of(&g, 0)->pause & PAUSE_HOLD, "pause: reason hold stays while the held record is tried again");
    stub_end(g.st, 0, 0, 0);
    CHECK(wait_until(&g, cond_pause_lacks, &hold, WAIT_MS), "pause: 0 succeeded: reason hold cleared");
    eg_part *p = part_of(&g, 0);
    CHECK(p->pause == PAUSE_LANE && p->paused, "pause: still paused for the lane alone (reasons %#x)", p->pause);
    commit_want c1 = {1};
    CHECK(wait_until(&g, cond_committed, &c1, WAIT_MS), "pause: the commit stops at 1, whose lane write fails");
    CHECK(topic_records("pr.dlq") == 0, "pause: nothing in the DLQ yet");

    rd_kafka_mock_clear_request_errors(mc, KAFKA_API_PRODUCE);
    CHECK(wait_until(&g, cond_resumed, NULL, WAIT_MS), "pause: the lane took 1: resumed");
    commit_want c2 = {2};
    CHECK(wait_until(&g, cond_committed, &c2, WAIT_MS), "pause: the commit reaches 2");
    CHECK(topic_records("pr.dlq") == 1, "pause: 1 is in the DLQ once");
    gwt_close(&g);
}

/* A revoke while 1 and 3 are borrowed (0 and 2 finished): the commit is the
 * finished prefix (1), the unborrowed records are dropped at once, the
 * borrowed ones when they come back (a success or a failure that would be
 * dead-lettered: neither commits nor writes a lane). Assigned again, the
 * partition is read from the commit: 1, 2 and 3 come again. */
static void revoke_while_borrowed(void) {
    gwt g;
    if (gwt_open(&g, "rv", "g-rv", "none", 8) != 0) {
        CHECK(0, "revoke: set up");
        gwt_close(&g);
        return;
    }
    gwt_rebalance(&g, 1, 0);
    at a3 = {0, 3};
    CHECK(wait_until(&g, cond_at_target, &a3, WAIT_MS) && g.st->nheld == 4, "revoke: 0..3 at the target");
    stub_end(g.st, 0, 0, 0);
    stub_end(g.st, 0, 2, 0);
    int two = 2;
    CHECK(wait_until(&g, cond_unfinished, &two, WAIT_MS) && g.st->nheld == 2,
          "revoke: 0 and 2 finished, 1 and 3 borrowed (%s)", stub_text(g.st));
    gwt_rebalance(&g, 1, 1);
    CHECK(committed(&g) == 1, "revoke: the revoke's commit is 1 (0 finished, 1 borrowed)");
    CHECK(part_of(&g, 0) == NULL && g.gw.unfinished == 2, "revoke: the partition is gone; 2 records still borrowed");

    stub_end(g.st, 0, 1, 0);
    stub_end(g.st, 0, 3, 400);
    CHECK(wait_until(&g, cond_nothing_unfinished, NULL, WAIT_MS), "revoke: the borrowed records are dropped on return");
    CHECK(committed(&g) == 1, "revoke: no commit past 1 after they came back");
    CHECK(topic_records("rv.dlq") == 0, "revoke: 3's failure wrote no dead letter");

    gwt_rebalance(&g, 1, 0);
    at a1 = {0, 1}, a2 = {0, 2};
    CHECK(wait_until(&g, cond_at_target, &a3, WAIT_MS) && stub_find(g.st, 0, 1) && stub_find(g.st, 0, 2) &&
              g.st->nheld == 3,
          "revoke: assigned again, 1, 2 and 3 come again from the commit (%s)", stub_text(g.st));
    stub_end(g.st, 0, a1.offset, 0);
    stub_end(g.st, 0, a2.offset, 0);
    stub_end(g.st, 0, 3, 0);
    commit_want c4 = {4};
    CHECK(wait_until(&g, cond_committed, &c4, WAIT_MS), "revoke: all done the second time: commit 4");
    gwt_close(&g);
}

int main(void) {
    int64_t t0 = eg_now_ms();
    snprintf(scratch, sizeof scratch, "/tmp/errgate-test-gateway.XXXXXX");
    if (!mkdtemp(scratch) || cluster_up() != 0 || make_sources() != 0) {
        CHECK(0, "the mock cluster, its topics and records, a scratch directory");
        return TAP_DONE();
    }
    setenv("ERRGATE_LUA_DIR", "lua", 0); /* the Lua runtime of the source tree (tests run from the top) */
    printf("# cluster, topics and records: %lld ms\n", (long long)(eg_now_ms() - t0));
    static const struct {
        const char *name;
        void (*run)(void);
    } cases[] = {{"partition ordering", partition_ordering},
                 {"key ordering and the commit prefix", key_ordering_and_prefix},
                 {"pause reasons", pause_reasons},
                 {"revoke while borrowed", revoke_while_borrowed}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t c0 = eg_now_ms();
        cases[i].run();
        printf("# %s: %lld ms\n", cases[i].name, (long long)(eg_now_ms() - c0));
    }
    int64_t c0 = eg_now_ms();
    cluster_down();
    printf("# cluster down: %lld ms\n", (long long)(eg_now_ms() - c0));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0) printf("# %s failed\n", cmd);
    printf("# %lld ms\n", (long long)(eg_now_ms() - t0));
    return TAP_DONE();
}
