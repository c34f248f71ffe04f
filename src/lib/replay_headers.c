/* replay_headers.c — the headers of a replayed record and how many times
 * it was replayed already (see replay_headers.h). Pure: no Kafka client, no
 * state; unit-tested in spec/c/test_dlq.c. */
#include "replay_headers.h"
#include "protect.h"
#include "provenance.h"
#include "headers.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

long eg_replays_parse(const void *val, size_t len) {
    if (!val) return 0;
    char buf[24];
    /* a NUL inside would end the text early: "0\0junk" is not a count */
    if (len == 0 || len >= sizeof buf || memchr(val, 0, len)) return -1;
    memcpy(buf, val, len);
    buf[len] = '\0';
    long n;
    return eg_parse_count(buf, &n) == 0 ? n : -1;
}

/* True for the headers a replay sets afresh, errgate.protect (a replayed
 * record holds its payload as it came: decrypted, or fetched) and
 * errgate.claims-refused (the claims it carries now are a replay's own,
 * signed: provenance.h). */
static int rewritten(const char *name) {
    return !strcmp(name, EG_H_PROTECT) || !strcmp(name, EG_PROV_REFUSED_HEADER) || !strcmp(name, EG_H_RETRY_COUNT) ||
           !strcmp(name, EG_H_REPLAY_FROM) || !strcmp(name, EG_H_REPLAY_TS) || !strcmp(name, EG_H_REPLAYS) ||
           !strcmp(name, EG_H_ATTEMPTS);
}

rd_kafka_headers_t *eg_replay_headers(const rd_kafka_headers_t *src, const char *from, int64_t now_ms, long replays) {
    size_t cnt = src ? rd_kafka_header_cnt(src) : 0;
    rd_kafka_headers_t *h = rd_kafka_headers_new(cnt + 4);
    const char *name;
    const void *val;
    size_t size;
    int64_t attempts = -1;
    for (size_t i = 0; src && rd_kafka_header_get_all(src, i, &name, &val, &size) == 0; i++) {
        if (!strcmp(name, EG_H_ATTEMPTS)) {
            int64_t a = eg_uint_parse(val, size);
            if (a > attempts && a < INT32_MAX) attempts = a;
        }
        if (!rewritten(name)) rd_kafka_header_add(h, name, -1, val, (ssize_t)size);
    }
    char ts[40], n[24];
    if (attempts >= 0) {
        snprintf(n, sizeof n, "%lld", (long long)attempts);
        rd_kafka_header_add(h, EG_H_ATTEMPTS, -1, n, -1);
    }
    eg_rfc3339(now_ms, ts, sizeof ts);
    snprintf(n, sizeof n, "%ld", replays);
    rd_kafka_header_add(h, EG_H_RETRY_COUNT, -1, "0", 1);
    rd_kafka_header_add(h, EG_H_REPLAY_FROM, -1, from, -1);
    rd_kafka_header_add(h, EG_H_REPLAY_TS, -1, ts, -1);
    rd_kafka_header_add(h, EG_H_REPLAYS, -1, n, -1);
    return h;
}
