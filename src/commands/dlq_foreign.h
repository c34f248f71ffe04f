/* dlq_foreign.h — what `dlq stats|tail` and `replay` show of a DLQ record
 * errgate did not write (Spring Kafka, Kafka Connect, Kafka Streams, a share
 * group, x-dlq-metadata): where errgate's own header is absent, the value
 * the foreign dialect states. The code and message come from
 * errgate.recorded.inbox (the one mapper of foreign failures, also behind
 * inbox mode), the original coordinates from dlq_origin.h. */
#ifndef EG_DLQ_FOREIGN_H
#define EG_DLQ_FOREIGN_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/* When out holds "-" or "" (errgate's header `name` was absent), replaces
 * it with the foreign reading of m for that header, as printable text:
 * EG_H_CODE (the innermost exception class), EG_H_MESSAGE, EG_H_ATTEMPTS
 * (the deliveries the dialect counts: a share group's delivery count,
 * Spring's retry_topic-attempts minus one),
 * EG_H_ORIG_TOPIC, EG_H_ORIG_PARTITION, EG_H_ORIG_OFFSET. Leaves out alone
 * for other names, and when m states nothing for it. The Lua state behind
 * it is made on first use (a failure to make it leaves out alone) and kept
 * until eg_dlq_foreign_done. Loop thread of a CLI command only. */
void eg_dlq_foreign_fill(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen);

/* Frees the Lua state eg_dlq_foreign_fill made, if any. */
void eg_dlq_foreign_done(void);

#endif
