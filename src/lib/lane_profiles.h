/* lane_profiles.h — the compatibility header profiles a lane record may carry
 * besides errgate's own headers (DESIGN §4, `lanes.profiles`): the headers
 * Spring Kafka, Kafka Connect and Kafka Streams write on their dead-letter
 * records, and a single JSON `x-dlq-metadata` header, so that tools built for
 * those systems read errgate's lanes as their own.
 *
 * Every profile is derived from the errgate headers of the same lane record
 * (error.*, original.*), so the profiles can never disagree with them. */
#ifndef EG_LANE_PROFILES_H
#define EG_LANE_PROFILES_H

#include <librdkafka/rdkafka.h>

/* Profile bits of lanes.profiles. */
#define EG_PROFILE_SPRING 1u
#define EG_PROFILE_CONNECT 2u
#define EG_PROFILE_STREAMS 4u
#define EG_PROFILE_XDLQ 8u

/* The bit of a profile name ("spring", "connect", "streams",
 * "x-dlq-metadata"), or 0 for an unknown name. */
unsigned eg_profile_bit(const char *name);

/* The accepted profile names, comma-separated, for error messages. */
extern const char eg_profile_names[];

/* True when header `name` is one a profile in `mask` writes afresh on every
 * lane write (exception and error fields): a copy carried on from the source
 * record must then be dropped, as errgate drops its own error.* headers.
 * The original-record fields of a profile are written once and kept. */
int eg_profile_replaced(unsigned mask, const char *name);

/* Appends to h the headers of every profile in mask, reading the facts from
 * the errgate headers already in h (error.code, error.message, error.class,
 * original.*, original.consumer.group, errgate.*) and the source message m
 * (its timestamp type). h must hold a complete errgate header set. A
 * profile's original-record header that h already carries (from an earlier
 * stage) is not written again. */
void eg_profiles_add(rd_kafka_headers_t *h, unsigned mask, const rd_kafka_message_t *m);

#endif
