/* replay_record.c — what `errgate replay` does to one lane record (see
 * dlq.h): whether the C filters select it, how many times it was replayed
 * already, and the headers of the record it sends back. Pure: no Kafka
 * client, no state; unit-tested in spec/c/test_dlq.c. */
#include "dlq.h"
#include "headers.h"
#include "parse.h"
#include "record.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int eg_replay_filter_match(const eg_replay_filter *f, const eg_lane_view *v) {
    if (f->since_ms > 0 && v->ts < f->since_ms) return 0;
    if (f->until_ms > 0 && v->ts > f->until_ms) return 0;
    if (f->klass && (!v->klass || strcmp(f->klass, v->klass) != 0)) return 0;
    if (f->code && (!v->code || strcmp(f->code, v->code) != 0)) return 0;
    if (f->key && (!v->key || v->keylen != strlen(f->key) || memcmp(v->key, f->key, v->keylen) != 0)) return 0;
    return 1;
}

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

/* True for the headers a replay sets afresh. */
static int rewritten(const char *name) {
    return !strcmp(name, EG_H_RETRY_COUNT) || !strcmp(name, EG_H_REPLAY_FROM) || !strcmp(name, EG_H_REPLAY_TS) ||
           !strcmp(name, EG_H_REPLAYS) || !strcmp(name, EG_H_ATTEMPTS);
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
