/* fuzz_dlq_origin.c — dlq_origin.c, the reader of a foreign DLQ record's
 * original coordinates (Spring's big-endian binary, decimal text, the
 * x-dlq-metadata JSON). Input: a header list (fuzz.h's format). Contract:
 * the topic and group are NUL-terminated inside their buffers, a found
 * origin has a known format and a legal topic name, the group holds no
 * control byte, partition, offset and timestamp are -1 or in range, and
 * adopt leaves h readable with original.topic equal to the origin's topic. */
#include "dlq_origin.h"
#include "fuzz.h"
#include "headers.h"
#include "record.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd_kafka_headers_t *h = fz_headers(data, size);
    eg_dlq_origin o;
    int rc = eg_dlq_origin_read(h, &o);
    FZ_CHECK(memchr(o.topic, '\0', sizeof o.topic) && memchr(o.group, '\0', sizeof o.group), "unterminated");
    FZ_CHECK(rc == 0 ? (o.format != NULL && o.topic[0]) : (o.format == NULL), "rc %d format %s", rc,
             o.format ? o.format : "-");
    if (rc == 0) {
        size_t tn = strlen(o.topic);
        FZ_CHECK(tn <= 249 &&
                     strspn(o.topic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == tn,
                 "topic is no topic name: %s", o.topic);
        for (const char *g = o.group; *g; g++)
            FZ_CHECK((unsigned char)*g >= 0x20 && *g != 0x7f, "control byte in group");
        FZ_CHECK(o.partition >= -1 && o.partition <= 2147483647 && o.offset >= -1 && o.timestamp_ms >= -1 &&
                     o.timestamp_ms <= 253402300799999LL,
                 "out of range: %lld %lld %lld", (long long)o.partition, (long long)o.offset,
                 (long long)o.timestamp_ms);
    }
    int had = eg_headers_get(h, EG_H_ORIG_TOPIC, &(size_t){0}) != NULL;
    eg_dlq_origin_adopt(h);
    size_t n = 0;
    const char *t = eg_headers_get(h, EG_H_ORIG_TOPIC, &n);
    if (rc == 0 && !had) FZ_CHECK(t && n == strlen(o.topic) && !memcmp(t, o.topic, n), "adopted topic differs");
    rd_kafka_headers_destroy(h);
    return 0;
}
