/* lane_cases.h — a lane topic read back as recorded failures: one JSON line
 * per record, for `errgate policy test FILE --from-topic LANE` (errgate.cli
 * and errgate.recorded turn each line into a case and replay it).
 *
 * This side knows header names and byte formats; the Lua side knows what
 * they mean. Each line is one JSON object:
 *   {"lane": {"topic": T, "partition": P, "offset": O, "timestamp": MS},
 *    "key": K,
 *    "errgate": {...}, "dlq": {...}, "origin": {...},
 *    "headers": {NAME: V, ...}}
 * "errgate" holds errgate's own lane headers (headers.h) under short names
 * (class, code, message, kind, status, retry_after_ms, retry_count, id,
 * policy, action, reason, timestamp, original_topic, original_partition,
 * original_offset), present only when the record carries one of them;
 * "dlq" every header of a foreign DLQ dialect (kafka_dlt-*,
 * __connect.errors.*, __streams.errors.*, __dlq.errors.*, x-dlq-metadata;
 * stack traces left out) under its own name, as errgate.recorded.inbox
 * reads them; "origin" where the record was born as dlq_origin.h reads it
 * ({format, topic, partition, offset, timestamp, group}, the known ones;
 * absent when no dialect states it). "headers" holds every other header
 * (the record's own, which a policy may match on); errgate.history is left
 * out. The last value of a repeated header name wins.
 * Values are JSON strings, {"hex": "..."} for bytes that are not UTF-8 text, or
 * null; each value is cut to EG_LANE_CASES_VALUE_MAX bytes. The record value
 * (payload) is never read into a case. */
#ifndef EG_LANE_CASES_H
#define EG_LANE_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "kcli.h"

#define EG_LANE_CASES_VALUE_MAX 4096

typedef struct eg_lane_cases_opts {
    int64_t since_ms; /* > 0: only records at or after this wall time (ms) */
    long limit;       /* > 0: stop after this many records */
} eg_lane_cases_opts;

typedef struct eg_lane_cases {
    char *text; /* JSON lines ('\n'-terminated), NUL-terminated; owned */
    size_t len;
    long records; /* lines in text */
    int limited;  /* 1: the read stopped at opts->limit */
} eg_lane_cases;

/* Reads lane topic `topic` (bounded: what it held when the read began, see
 * kcli.h's reader) through a client configured by conf (from eg_kcli_conf; this
 * takes ownership of it) and fills *out. Returns 0, or -1 with a one-line
 * message in err (unknown topic, unreachable broker, a fetch error); on
 * error *out is empty. The caller frees *out with eg_lane_cases_free. */
int eg_lane_cases_read(rd_kafka_conf_t *conf, const char *topic, const eg_lane_cases_opts *opts, eg_lane_cases *out,
                       char *err, size_t errlen);

void eg_lane_cases_free(eg_lane_cases *c);

struct evbuffer;

/* Appends the header part of one line to b: the ,"errgate", ,"spring" and
 * ,"connect" objects a record's headers h call for, then ,"headers":{...}
 * (h may be NULL: no headers). Each member starts with a comma, so this
 * follows the "key" member of the line. Reads h only. */
void eg_lane_cases_put_headers(struct evbuffer *b, const rd_kafka_headers_t *h);

#endif
