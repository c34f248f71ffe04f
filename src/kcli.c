/* kcli.c — shared plumbing of the Kafka-facing commands (see kcli.h).
 *
 * eg_kcli_read assigns every partition of a topic at its start offset (or
 * at the offset for since_ms), records the high watermarks once, and polls
 * until each partition has reached its watermark: a bounded read of "what
 * the topic held when the command started", which is what stats, replay
 * and policy regression checks want. With follow it keeps polling instead.
 * Partitions whose log is empty are finished before the first poll. */
#include "kcli.h"
#include "lanes.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eg_kcli_opt(eg_kcli *k, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char **slot = NULL;
    if (!strcmp(a, "-b") || !strcmp(a, "--bootstrap")) slot = &k->bootstrap;
    else if (!strcmp(a, "-c") || !strcmp(a, "--config")) slot = &k->config;
    else return 0;
    if (*i + 1 >= argc) return -1;
    *slot = argv[++*i];
    return 1;
}

rd_kafka_conf_t *eg_kcli_conf(const eg_kcli *k, const char *client_id, char *err, size_t errlen) {
    const char *bootstrap = k->bootstrap ? k->bootstrap : getenv("ERRGATE_BOOTSTRAP");
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (k->config) {
        /* the config loader wants a bootstrap; -b supplies it when the file has none */
        if (k->bootstrap) setenv("ERRGATE_BOOTSTRAP", k->bootstrap, 1);
        eg_config cfg;
        char e[512];
        if (eg_config_load(k->config, &cfg, e, sizeof e) != 0) {
            snprintf(err, errlen, "%s", e);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
        int bad = 0;
        for (int i = 0; i < cfg.nkafka && !bad; i++)
            bad = eg_kconf_set(conf, cfg.kafka[i].key, cfg.kafka[i].val, err, errlen) < 0;
        eg_config_free(&cfg);
        if (bad) {
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    } else if (!bootstrap || !*bootstrap) {
        snprintf(err, errlen, "no broker: give -b BOOTSTRAP or -c CONFIG (or set ERRGATE_BOOTSTRAP)");
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    if ((k->bootstrap && eg_kconf_set(conf, "bootstrap.servers", k->bootstrap, err, errlen) < 0) ||
        (!k->config && !k->bootstrap && eg_kconf_set(conf, "bootstrap.servers", bootstrap, err, errlen) < 0) ||
        eg_kconf_set(conf, "client.id", client_id, err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, eg_rdkafka_log_cb);
    return conf;
}

/* Fills parts with every partition of topic and its high watermark (in
 * ->offset, temporarily). Returns 0 or -1 with err. */
static int list_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                           rd_kafka_topic_partition_list_t *parts, char *err, size_t errlen) {
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    if (!e && md->topic_cnt == 1 && md->topics[0].err) e = md->topics[0].err;
    if (!e)
        for (int p = 0; p < md->topics[0].partition_cnt; p++)
            rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[p].id);
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (e) {
        snprintf(err, errlen, "%s: %s", topic, rd_kafka_err2str(e));
        return -1;
    }
    for (int i = 0; i < parts->cnt; i++) {
        int64_t lo = 0, hi = 0;
        e = rd_kafka_query_watermark_offsets(rk, topic, parts->elems[i].partition, &lo, &hi, timeout_ms);
        if (e) {
            snprintf(err, errlen, "%s[%d]: %s", topic, (int)parts->elems[i].partition, rd_kafka_err2str(e));
            return -1;
        }
        parts->elems[i].offset = hi;
    }
    return 0;
}

int eg_kcli_read(rd_kafka_conf_t *conf, const char *topic, const eg_kcli_read_opts *opts,
                 eg_kcli_msg_fn fn, void *arg, char *err, size_t errlen) {
    int timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
    char e[512];
    if (eg_kconf_set(conf, "group.id", "errgate-reader", err, errlen) < 0 ||
        eg_kconf_set(conf, "enable.auto.commit", "false", err, errlen) < 0 ||
        eg_kconf_set(conf, "enable.partition.eof", "true", err, errlen) < 0) {
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);
    if (!rk) {
        snprintf(err, errlen, "cannot create a consumer: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(16);
    int rc = list_partitions(rk, topic, timeout_ms, parts, err, errlen);
    int n = parts->cnt;
    int64_t *end = eg_xcalloc((size_t)(n ? n : 1), sizeof *end);
    int remaining = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        end[i] = parts->elems[i].offset;
        parts->elems[i].offset = opts->since_ms > 0 ? opts->since_ms : RD_KAFKA_OFFSET_BEGINNING;
    }
    if (rc == 0 && opts->since_ms > 0) {
        rd_kafka_resp_err_t x = rd_kafka_offsets_for_times(rk, parts, timeout_ms);
        if (x) {
            snprintf(err, errlen, "%s: offsets for --since: %s", topic, rd_kafka_err2str(x));
            rc = -1;
        }
        /* -1: no record at or after since_ms, or a broker that cannot look
         * offsets up by time (the embedded one): read from the start and
         * let the timestamp filter below decide */
        for (int i = 0; rc == 0 && i < n; i++)
            if (parts->elems[i].offset < 0) parts->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    for (int i = 0; rc == 0 && i < n; i++) {
        int64_t start = parts->elems[i].offset;
        if (opts->follow || start < 0 || start < end[i]) remaining++;
        else end[i] = -1; /* already done */
    }
    if (rc == 0 && remaining > 0) {
        rd_kafka_resp_err_t x = rd_kafka_assign(rk, parts);
        if (x) {
            snprintf(err, errlen, "%s: assign: %s", topic, rd_kafka_err2str(x));
            rc = -1;
        }
    }
    int64_t idle_since = eg_now_ms();
    while (rc == 0 && remaining > 0 && !(opts->stop && *opts->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m) {
            if (!opts->follow && eg_now_ms() - idle_since > timeout_ms) {
                snprintf(err, errlen, "%s: no progress for %d ms", topic, timeout_ms);
                rc = -1;
            }
            continue;
        }
        idle_since = eg_now_ms();
        int i = 0;
        while (i < n && parts->elems[i].partition != m->partition) i++;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (!opts->follow && i < n && end[i] >= 0 && m->offset >= end[i]) {
                end[i] = -1;
                remaining--;
            }
        } else if (m->err) {
            snprintf(err, errlen, "%s: %s", topic, rd_kafka_message_errstr(m));
            rc = -1;
        } else if (i < n && (opts->follow || (end[i] >= 0 && m->offset < end[i]))) {
            rd_kafka_timestamp_type_t tt;
            int early = opts->since_ms > 0 && rd_kafka_message_timestamp(m, &tt) < opts->since_ms;
            if (!early && fn(m, arg) != 0) remaining = 0;
            else if (!opts->follow && m->offset + 1 >= end[i]) {
                end[i] = -1;
                remaining--;
            }
        }
        rd_kafka_message_destroy(m);
    }
    free(end);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

const void *eg_kcli_header(const rd_kafka_message_t *m, const char *name, size_t *len) {
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    size_t n = 0;
    if (rd_kafka_message_headers(m, &h) != 0 || rd_kafka_header_get_last(h, name, &v, &n) != 0) return NULL;
    if (len) *len = n;
    return v;
}

int eg_kcli_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = eg_kcli_header(m, name, &n);
    if (!outlen) return -1;
    out[0] = '\0';
    if (!v) return -1;
    if (n >= outlen) n = outlen - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    return 0;
}

int eg_parse_duration_ms(const char *s, int64_t *ms) {
    static const struct { const char *unit; int64_t mult; } units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}, {"", 1}};
    char *end = NULL;
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || v > (unsigned long long)INT64_MAX / 86400000) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0) {
            *ms = (int64_t)v * units[i].mult;
            return 0;
        }
    return -1;
}
