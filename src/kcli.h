/* kcli.h — what every Kafka-facing command shares: the connection options
 * (`-b BOOTSTRAP` or `-c CONFIG`), reading a topic from its start to its
 * current end, header lookup, and durations on the command line.
 *
 * `-c CONFIG` takes the connection settings (every `kafka` property, e.g.
 * bootstrap.servers and security settings) from a gateway config file;
 * `-b` overrides bootstrap.servers; the ERRGATE_BOOTSTRAP environment
 * variable is the last resort. Readers never join a consumer group: they
 * assign partitions and read, so they leave no trace on the cluster. */
#ifndef EG_KCLI_H
#define EG_KCLI_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct eg_kcli {
    const char *bootstrap;  /* borrowed from argv, or NULL */
    const char *config;     /* path borrowed from argv, or NULL */
} eg_kcli;

/* Consumes a connection option at argv[*i] (-b/--bootstrap B, -c/--config F).
 * Returns 1 when it was one (and advances *i past its value), 0 when argv[*i]
 * is something else, -1 when the option lacks its value. */
int eg_kcli_opt(eg_kcli *k, int argc, char **argv, int *i);

/* A fresh client configuration: the config file's kafka properties (when -c),
 * then bootstrap.servers from -b or ERRGATE_BOOTSTRAP, errgate's log
 * callback, and client.id = client_id. Returns NULL with a one-line message
 * in err when there is no bootstrap or the config is bad. The caller owns
 * the result (rd_kafka_new takes it, or rd_kafka_conf_destroy). */
rd_kafka_conf_t *eg_kcli_conf(const eg_kcli *k, const char *client_id, char *err, size_t errlen);

/* Called for each message read; return 0 to go on, 1 to stop reading. The
 * message is valid only during the call. */
typedef int (*eg_kcli_msg_fn)(const rd_kafka_message_t *m, void *arg);

typedef struct eg_kcli_read_opts {
    int64_t since_ms;     /* > 0: start at the first record at or after this wall time */
    int follow;           /* 1: keep reading new records until *stop becomes non-zero */
    volatile int *stop;   /* may be NULL; checked between polls */
    int timeout_ms;       /* metadata and fetch stall limit; 0 means 10 s */
} eg_kcli_read_opts;

/* Reads every partition of `topic` from the start (or since_ms) to the end
 * offsets seen when the read began (or forever, with follow), in partition
 * order interleaved as fetched, calling fn per message. Takes ownership of
 * conf. Returns 0 (also when fn stopped early), or -1 with err filled:
 * unknown topic, unreachable broker, a fetch error. */
int eg_kcli_read(rd_kafka_conf_t *conf, const char *topic, const eg_kcli_read_opts *opts,
                 eg_kcli_msg_fn fn, void *arg, char *err, size_t errlen);

/* The last header called name on m: its value and length, or NULL when
 * absent (a present header with a NULL value also gives NULL). */
const void *eg_kcli_header(const rd_kafka_message_t *m, const char *name, size_t *len);

/* The last header called name as a NUL-terminated string (truncated to
 * outlen - 1 bytes). Returns 0, or -1 (out = "") when absent. */
int eg_kcli_header_str(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen);

/* Parses a duration such as "90s", "15m", "1h", "2d", "250ms" or a bare
 * number of ms. Returns 0, or -1 on anything else. */
int eg_parse_duration_ms(const char *s, int64_t *ms);

#endif
