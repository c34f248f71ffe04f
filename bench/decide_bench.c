/* decide_bench.c — nanoseconds per policy decision through the C path.
 *
 * The figure `make bench` reports as "decision cost": for each policy file
 * given on the command line, eg_policy_load it once, then time
 * eg_policy_decide — the exact call the gateway makes on a failure: hand the
 * failure and the attempt context (and the record, to a policy that reads
 * it) to the policy's decision function in the sandboxed VM, run it under
 * the wall-clock budget (JIT off, count hook on), read the decision back —
 * for a few representative failures. Each figure is the
 * median over BATCHES batches of ITERS calls (after a warm-up), in ns/call.
 * The attempt context is the one the gateway passes: the first failure at
 * now (or, for the second attempt, 150 ms ago after a 100 ms retry), no
 * circuit breaker, room in the retry budget — so 503 and the second timeout
 * are retried in place, as bench/README.md describes.
 *
 * A decision may need a real rd_kafka_message_t (a record's timestamp and
 * headers are read through librdkafka accessors that look past the public
 * struct), so the harness produces one record to an in-process mock cluster
 * and consumes it back once; no broker process is involved and nothing of
 * Kafka is timed. Output: one line per (policy, failure):
 *   decide policy=PATH failure=NAME action=A fallback=0 ns=N
 * Exit 1 if the setup fails or a decision fell back (a broken benchmark). */
#include "policy.h"
#include "record.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef WARMUP /* -D overrides make a short run for callgrind */
#define WARMUP 5000
#endif
#ifndef ITERS
#define ITERS 20000
#endif
#ifndef BATCHES
#define BATCHES 7
#endif
/* The call budget (the gateway's default is 50 ms). Its value does not change
 * a call's work (a deadline set and checked either way); 1 s, so that a
 * process descheduled for 50 ms on a busy machine (seen with three CPU-bound
 * processes on 2 cores) does not turn a timed decision into a budget
 * fallback, which fails the run. */
#ifndef BUDGET_MS
#define BUDGET_MS 1000
#endif

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One record with a key, a JSON value and a header, produced to a mock
 * cluster and consumed back. Returns NULL on failure (message on stderr). */
static rd_kafka_message_t *real_message(rd_kafka_t **prod_out, rd_kafka_t **cons_out) {
    char err[512];
    rd_kafka_conf_t *pc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(pc, "test.mock.num.brokers", "1", err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "decide_bench: %s\n", err);
        return NULL;
    }
    rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
    if (!prod) {
        fprintf(stderr, "decide_bench: producer: %s\n", err);
        return NULL;
    }
    *prod_out = prod;
    const char *bootstrap = rd_kafka_mock_cluster_bootstraps(rd_kafka_handle_mock_cluster(prod));
    const char *value = "{\"id\":\"r1\",\"mode\":\"permanent\",\"amount\":1250}";
    rd_kafka_resp_err_t e = rd_kafka_producev(
        prod, RD_KAFKA_V_TOPIC("bench"), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY("k42", 3),
        RD_KAFKA_V_VALUE((void *)value, strlen(value)),
        RD_KAFKA_V_HEADER("traceparent", "00-4bf92f3577b34da6-00f067aa0ba902b7-01", -1), RD_KAFKA_V_END);
    if (e) {
        fprintf(stderr, "decide_bench: produce: %s\n", rd_kafka_err2str(e));
        return NULL;
    }
    rd_kafka_flush(prod, 10000);

    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    if (rd_kafka_conf_set(cc, "bootstrap.servers", bootstrap, err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "group.id", "decide-bench", err, sizeof err) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(cc, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "decide_bench: %s\n", err);
        return NULL;
    }
    rd_kafka_t *cons = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
    if (!cons) {
        fprintf(stderr, "decide_bench: consumer: %s\n", err);
        return NULL;
    }
    *cons_out = cons;
    rd_kafka_poll_set_consumer(cons);
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, "bench", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(cons, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    for (int i = 0; i < 100; i++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(cons, 100);
        if (!m) continue;
        if (!m->err) return m;
        rd_kafka_message_destroy(m);
    }
    fprintf(stderr, "decide_bench: the record did not come back from the mock cluster\n");
    return NULL;
}

typedef struct {
    const char *name;
    eg_failure f;
    eg_ctx ctx;
    int64_t first_ago_ms; /* ctx.first_failure_ms = ctx.now_ms - this */
} bench_case;

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: decide_bench POLICY.lua...\n");
        return 2;
    }
    rd_kafka_t *prod = NULL, *cons = NULL;
    rd_kafka_message_t *m = real_message(&prod, &cons);
    if (!m) return 1;

    eg_record r;
    memset(&r, 0, sizeof r);
    r.msg = m;
    r.topic = "payments";
    r.partition = 7;
    r.offset = 123456;
    r.attempt = 1;

    static char body400[] = "bad request: field amount must be positive";
    bench_case cases[] = {
        {"http_400",
         {.kind = EG_FK_HTTP,
          .status = 400,
          .body = body400,
          .body_len = sizeof body400 - 1,
          .retry_after_ms = -1,
          .latency_ms = 3},
         {.attempt = 1, .ordering = EG_ORDER_PARTITION, .breaker = "closed", .retry_budget = 1},
         0},
        {"http_503",
         {.kind = EG_FK_HTTP, .status = 503, .retry_after_ms = -1, .latency_ms = 2},
         {.attempt = 1, .ordering = EG_ORDER_PARTITION, .breaker = "closed", .retry_budget = 1},
         0},
        {"timeout",
         {.kind = EG_FK_TIMEOUT, .retry_after_ms = -1, .latency_ms = 5000},
         {.attempt = 2,
          .last_class = "transient",
          .class_attempts = 1,
          .last_delay_ms = 100,
          .ordering = EG_ORDER_PARTITION,
          .breaker = "closed",
          .retry_budget = 1},
         150},
    };
    int rc = 0;
    for (int a = 1; a < argc; a++) {
        char err[512];
        eg_policy *p = eg_policy_load(argv[a], BUDGET_MS, err, sizeof err);
        if (!p) {
            fprintf(stderr, "decide_bench: %s\n", err);
            rc = 1;
            continue;
        }
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            bench_case *bc = &cases[c];
            eg_decision d;
            int fallbacks = 0;
            char why[sizeof d.message] = ""; /* the first fallback's message */
            for (int i = 0; i < WARMUP; i++) {
                bc->ctx.now_ms = 1700000000000 + i;
                bc->ctx.first_failure_ms = bc->ctx.now_ms - bc->first_ago_ms;
                eg_policy_decide(p, &bc->f, &r, &bc->ctx, &d);
                if (d.fallback && fallbacks++ == 0) snprintf(why, sizeof why, "%s", d.message);
            }
            double ns[BATCHES];
            for (int b = 0; b < BATCHES; b++) {
                double t0 = now_ns();
                for (int i = 0; i < ITERS; i++) {
                    bc->ctx.now_ms = 1700000000000 + i;
                    bc->ctx.first_failure_ms = bc->ctx.now_ms - bc->first_ago_ms;
                    eg_policy_decide(p, &bc->f, &r, &bc->ctx, &d);
                    if (d.fallback && fallbacks++ == 0) snprintf(why, sizeof why, "%s", d.message);
                }
                ns[b] = (now_ns() - t0) / ITERS;
            }
            qsort(ns, BATCHES, sizeof ns[0], cmp_dbl);
            printf("decide policy=%s failure=%s action=%s fallback=%d ns=%.0f\n", argv[a], bc->name,
                   eg_action_name(d.action), fallbacks, ns[BATCHES / 2]);
            if (fallbacks) {
                fprintf(stderr, "decide_bench: %s fell back on %s (%d times; the first: %s)\n", argv[a], bc->name,
                        fallbacks, why);
                rc = 1;
            }
        }
        eg_policy_free(p);
    }
    rd_kafka_message_destroy(m);
    rd_kafka_consumer_close(cons);
    rd_kafka_destroy(cons);
    rd_kafka_destroy(prod);
    return rc;
}
