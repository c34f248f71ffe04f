/* skip_fetch.c — an LD_PRELOAD shim that makes librdkafka's consumer skip a
 * batch the log holds, once: a hostile test double of the client.
 *
 * rd_kafka_consume_queue (the call the gateway takes each partition's
 * messages with) is wrapped. The first time each message of partition
 * SKIP_PARTITION of topic SKIP_TOPIC at an offset in SKIP_FROM..SKIP_TO (inclusive) comes out,
 * it is destroyed and the next message is taken instead, as if librdkafka
 * had never fetched it; a later delivery of the same offset (after the
 * application sought back) passes. Without the environment variables the
 * shim passes everything. The number of messages it swallowed is written
 * to SKIP_COUNT_FILE (if set) after each one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef rd_kafka_message_t *(*consume_fn)(rd_kafka_queue_t *, int);

static long long env_ll(const char *name, long long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : dflt;
}

rd_kafka_message_t *rd_kafka_consume_queue(rd_kafka_queue_t *q, int timeout_ms) {
    static consume_fn real;
    static unsigned char *seen; /* offsets SKIP_FROM..SKIP_TO already swallowed */
    static long long swallowed;
    if (!real) real = (consume_fn)dlsym(RTLD_NEXT, "rd_kafka_consume_queue");
    long long from = env_ll("SKIP_FROM", -1), to = env_ll("SKIP_TO", -2), part = env_ll("SKIP_PARTITION", 0);
    const char *topic = getenv("SKIP_TOPIC");
    if (from < 0 || to < from || !topic) return real(q, timeout_ms);
    if (!seen) seen = calloc((size_t)(to - from + 1), 1);
    for (;;) {
        rd_kafka_message_t *m = real(q, timeout_ms);
        if (!m || m->err || m->partition != part || m->offset < from || m->offset > to || !seen ||
            seen[m->offset - from] || strcmp(rd_kafka_topic_name(m->rkt), topic) != 0)
            return m;
        seen[m->offset - from] = 1;
        rd_kafka_message_destroy(m);
        swallowed++;
        const char *f = getenv("SKIP_COUNT_FILE");
        FILE *out = f ? fopen(f, "w") : NULL;
        if (out) {
            fprintf(out, "%lld\n", swallowed);
            fclose(out);
        }
    }
}
