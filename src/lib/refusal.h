/* refusal.h — produce errors that retrying cannot heal, and the stub record
 * that stands in for a record Kafka refuses as too large.
 *
 * A lane write (gateway) or a journal frame (drainer) refused for good must
 * neither be retried as if the lane were down nor block what comes after
 * it. eg_refusal_of sorts a produce error (returned by rd_kafka_produce* or
 * in a delivery report) into transient (everything else: the lane is down,
 * a time-out, a missing topic that may yet appear: retried with back-off and
 * spilled as before), a size refusal (the record is too large for the topic
 * or the broker: answered with a stub) and any other permanent refusal (the
 * topic refuses every record: invalid name, no authorisation, a policy
 * violation, a record the broker declares invalid, a local argument error).
 *
 * A stub is the lane record without its value and without the source's own
 * headers (they may be what is too large): the errgate lane headers only
 * (error.*, original.*, errgate.*, retry.count, previous.topic, replay.*;
 * the last of each, at most EG_STUB_HEADER_MAX bytes each), plus
 * errgate.value-omitted (the value's size in bytes) and
 * errgate.headers-omitted (how many headers were dropped). A key over
 * EG_STUB_KEY_MAX bytes is dropped too (errgate.key-omitted: its size). The
 * original can still be fetched from the source by original.topic,
 * original.partition and original.offset while the source retains it. */
#ifndef EG_REFUSAL_H
#define EG_REFUSAL_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

#define EG_H_VALUE_OMITTED "errgate.value-omitted"
#define EG_H_HEADERS_OMITTED "errgate.headers-omitted"
#define EG_H_KEY_OMITTED "errgate.key-omitted"
#define EG_STUB_KEY_MAX 1024
#define EG_STUB_HEADER_MAX 4096

typedef enum {
    EG_REFUSAL_NONE = 0,  /* transient: retry (back-off, spill) */
    EG_REFUSAL_SIZE,      /* the record is too large: write a stub instead */
    EG_REFUSAL_PERMANENT, /* the topic refuses it for good: hold, never spill */
} eg_refusal;

/* The class of produce error err (NO_ERROR: EG_REFUSAL_NONE). */
eg_refusal eg_refusal_of(rd_kafka_resp_err_t err);

/* 1 when a stub keeps a key of key_len bytes. */
int eg_stub_keeps_key(size_t key_len);

/* The stub's headers for a lane record whose full headers are `full`
 * (borrowed; NULL: none), whose value was value_len bytes and whose key was
 * key_len bytes. *dropped (may be NULL) gets the count of headers left out.
 * The caller owns the result (rd_kafka_headers_destroy, or hand it to a
 * produce call that succeeds). */
rd_kafka_headers_t *eg_stub_headers(const rd_kafka_headers_t *full, size_t value_len, size_t key_len, size_t *dropped);

#endif
