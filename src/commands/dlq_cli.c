/* dlq_cli.c — the command plumbing `errgate replay` and `errgate dlq` share
 * (see dlq.h): SIGINT/SIGTERM turned into a stop flag the read loops poll,
 * the connection options of their argument loops, their producer, and the
 * column form of header values in their output. Each
 * command catches the signals for the length of its run only and gives the
 * previous handlers back. */
#include "dlq.h"
#include "ktxn.h"
#include "record.h"
#include "text.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile sig_atomic_t eg_dlq_stop;
static struct sigaction old_int, old_term;

/* SIGINT/SIGTERM handler: sets eg_dlq_stop (async-signal-safe). */
static void on_signal(int sig) {
    (void)sig;
    eg_dlq_stop = 1;
}

void eg_dlq_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    eg_dlq_stop = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
}

void eg_dlq_release_signals(void) {
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}

void eg_dlq_header_text(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = eg_header(m, name, &n);
    if (!v) eg_strlcpy(out, "-", outlen);
    else eg_printable(v, n, out, outlen);
}

void eg_dlq_column(char *s, size_t cap) {
    static const char dots[] = "...";
    size_t n = strlen(s), spaces = 0;
    if (n == 0 && cap >= 2) memcpy(s, "-", 2);
    for (size_t i = 0; i < n; i++) spaces += s[i] == ' ';
    if (!spaces || cap == 0) return;
    char *tmp = eg_xmalloc(cap);
    size_t room = cap - 1, o = 0, i = 0;
    int cut = n + 3 * spaces > room;
    if (cut) room = room > 3 ? room - 3 : 0;
    while (i < n) {
        /* one unit: a space (4 bytes out), an escape of eg_printable's
         * (\xNN, \n, \\: never split) or a byte */
        size_t k = s[i] == '\\' ? (s[i + 1] == 'x' ? 4 : 2) : 1, w = s[i] == ' ' ? 4 : k;
        if (i + k > n || o + w > room) break;
        if (s[i] == ' ') memcpy(tmp + o, "\\x20", 4);
        else memcpy(tmp + o, s + i, k);
        o += w;
        i += k;
    }
    if (cut && cap > 3) memcpy(tmp + o, dots, 3), o += 3;
    tmp[o] = '\0';
    memcpy(s, tmp, o + 1);
    free(tmp);
}

int eg_dlq_conn_opt(eg_kcli *k, int argc, char **argv, int *i, char *why, size_t whylen) {
    const char *o = argv[*i];
    int r = eg_kcli_opt(k, argc, argv, i);
    if (r < 0) snprintf(why, whylen, "%s needs a value", o);
    return r;
}

rd_kafka_t *eg_dlq_producer(const eg_kcli *k, const char *client_id,
                            void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *), void *opaque, char *err,
                            size_t errlen) {
    return eg_dlq_producer_txn(k, client_id, NULL, dr, opaque, err, errlen);
}

rd_kafka_t *eg_dlq_producer_txn(const eg_kcli *k, const char *client_id, const char *txn_id,
                                void (*dr)(rd_kafka_t *, const rd_kafka_message_t *, void *), void *opaque, char *err,
                                size_t errlen) {
    rd_kafka_conf_t *conf = eg_kcli_conf(k, client_id, err, errlen);
    if (!conf) return NULL;
    char e[512], v[64];
    size_t vlen = sizeof v;
    int bad = (txn_id && eg_ktxn_conf(conf, txn_id, EG_DLQ_TXN_TIMEOUT_MS, e, sizeof e) != 0) ||
              rd_kafka_conf_set(conf, "enable.idempotence", "true", e, sizeof e) ||
              rd_kafka_conf_set(conf, "acks", "all", e, sizeof e) ||
              rd_kafka_conf_set(conf, "partitioner", "murmur2_random", e, sizeof e);
    /* librdkafka waits 300 s by default; a command should say sooner */
    if (!bad && rd_kafka_conf_get(conf, "message.timeout.ms", v, &vlen) == RD_KAFKA_CONF_OK && !strcmp(v, "300000"))
        bad = rd_kafka_conf_set(conf, "message.timeout.ms", "30000", e, sizeof e);
    if (bad) {
        snprintf(err, errlen, "producer: %s", e);
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, opaque);
    rd_kafka_conf_set_dr_msg_cb(conf, dr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    if (!rk) {
        snprintf(err, errlen, "cannot create the producer: %s", e);
        rd_kafka_conf_destroy(conf);
    }
    return rk;
}
