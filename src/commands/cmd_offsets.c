/* cmd_offsets.c — `errgate offsets`: a group's committed offsets against the
 * end offsets of its topics, per partition, with the lag and totals.
 *
 * Output: one line per partition "TOPIC PARTITION COMMITTED END LAG"
 * (COMMITTED is -1 when the group has committed nothing there), then
 * "total COMMITTED_SUM END_SUM LAG_SUM", where a partition without a commit
 * counts its whole log as lag. Reads only: it never joins the group.
 *
 * Bounded: every request has its own timeout, yet librdkafka 2.0.2 can
 * wait for ever on a real cluster whose group coordinator's broker was
 * just killed (and in rd_kafka_destroy); the whole command has a deadline
 * (OFFSETS_DEADLINE_S), past which it says so on stderr and exits 1, or,
 * once its answer is printed, exits with that answer's status. */
#include "cli.h"
#include "kcli.h"
#include "kconf.h"

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OFFSETS_DEADLINE_S 60

/* The exit status once the answer is printed, -1 before. */
static volatile sig_atomic_t answered = -1;

/* SIGALRM past the deadline: async-signal-safe. */
static void on_deadline(int sig) {
    (void)sig;
    if (answered >= 0) _exit(answered);
    static const char msg[] = "errgate offsets: no answer from the cluster within 60 s\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(EG_EXIT_FAIL);
}

/* Prints the usage text of `errgate offsets` on stdout. */
static void usage(void) {
    printf("usage: errgate offsets (-b BOOTSTRAP | -c CONFIG) [--kafka-config F] -g GROUP TOPIC...\n"
           "\n"
           "  -b, --bootstrap B  broker address (else $ERRGATE_BOOTSTRAP)\n"
           "  -c, --config F     a gateway config whose kafka properties are used\n"
           "  --kafka-config F   librdkafka properties, KEY=VALUE a line (credentials;\n"
           "                     else $ERRGATE_KAFKA_CONFIG)\n"
           "  -g, --group G      the consumer group whose commits are shown\n"
           "\n"
           "Prints TOPIC PARTITION COMMITTED END LAG per partition, then a total line.\n");
}

int eg_cmd_offsets(int argc, char **argv) {
    const char *group = NULL;
    eg_kcli k = {0};
    int first_topic = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        if (eg_is_help(a)) {
            usage();
            return EG_EXIT_OK;
        }
        int kr = eg_kcli_opt(&k, argc, argv, &i);
        if (kr < 0) return eg_usage_error("offsets", "%s needs a value", a);
        if (kr > 0) continue;
        if (!strcmp(a, "-g") || !strcmp(a, "--group")) slot = &group;
        else if (a[0] == '-') return eg_usage_error("offsets", "unknown option '%s'%s", a, eg_dash_hint(a));
        else {
            first_topic = i;
            break;
        }
        if (i + 1 >= argc) return eg_usage_error("offsets", "%s needs a value", a);
        *slot = argv[++i];
    }
    if (k.key_file) return eg_usage_error("offsets", "unknown option '--key-file'");
    if (!group) return eg_usage_error("offsets", "missing -g GROUP");
    if (first_topic >= argc) return eg_usage_error("offsets", "missing TOPIC");
    char e[1024];
    rd_kafka_conf_t *conf = eg_kcli_conf(&k, "errgate-offsets", e, sizeof e);
    if (!conf) return eg_usage_error("offsets", "%s", e);
    if (rd_kafka_conf_set(conf, "group.id", group, e, sizeof e)) {
        fprintf(stderr, "errgate offsets: %s\n", e);
        rd_kafka_conf_destroy(conf);
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_deadline};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(OFFSETS_DEADLINE_S);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!rk) {
        fprintf(stderr, "errgate offsets: %s\n", e);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    int rc = 0;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(32);
    for (int i = first_topic; i < argc && rc == 0; i++) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[i], NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
        if (!err && md->topic_cnt == 1 && md->topics[0].err) err = md->topics[0].err;
        if (err) {
            fprintf(stderr, "errgate offsets: %s: %s\n", argv[i], rd_kafka_err2str(err));
            rc = 1;
        } else {
            for (int p = 0; p < md->topics[0].partition_cnt; p++)
                rd_kafka_topic_partition_list_add(l, argv[i], md->topics[0].partitions[p].id);
        }
        if (md) rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
    }
    if (rc == 0) {
        rd_kafka_resp_err_t err = eg_committed(rk, l, 10000);
        if (err) {
            fprintf(stderr, "errgate offsets: committed: %s\n", rd_kafka_err2str(err));
            rc = 1;
        }
    }
    long long tc = 0, te = 0, tl = 0;
    for (int i = 0; rc == 0 && i < l->cnt; i++) {
        rd_kafka_topic_partition_t *tp = &l->elems[i];
        int64_t lo = 0, hi = 0;
        rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, tp->topic, tp->partition, &lo, &hi, 10000);
        if (err) {
            fprintf(stderr, "errgate offsets: %s[%d]: %s\n", tp->topic, (int)tp->partition, rd_kafka_err2str(err));
            rc = 1;
            break;
        }
        long long committed = tp->offset >= 0 ? (long long)tp->offset : -1;
        long long lag = hi - (committed >= 0 ? committed : lo);
        printf("%s %d %lld %lld %lld\n", tp->topic, (int)tp->partition, committed, (long long)hi, lag);
        tc += committed >= 0 ? committed : 0;
        te += hi;
        tl += lag;
    }
    if (rc == 0) printf("total %lld %lld %lld\n", tc, te, tl);
    fflush(stdout);
    answered = rc;
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return rc;
}
