/* fuzz_dlq_origin.c — dlq_origin.c, the reader of a foreign DLQ record's
 * original coordinates (Spring's big-endian binary, decimal text, the
 * x-dlq-metadata JSON). Input: a header list (fuzz.h's format). Contract:
 * the topic and group are NUL-terminated inside their buffers, a found
 * origin has a non-empty topic and a known format, and adopt leaves h
 * readable with original.topic equal to the origin's topic. */
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
    int had = eg_headers_get(h, EG_H_ORIG_TOPIC, &(size_t){0}) != NULL;
    eg_dlq_origin_adopt(h);
    size_t n = 0;
    const char *t = eg_headers_get(h, EG_H_ORIG_TOPIC, &n);
    if (rc == 0 && !had) FZ_CHECK(t && n == strlen(o.topic) && !memcmp(t, o.topic, n), "adopted topic differs");
    rd_kafka_headers_destroy(h);
    return 0;
}
