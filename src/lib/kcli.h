/* kcli.h — what every Kafka-facing command shares: the connection options
 * (`-b BOOTSTRAP` or `-c CONFIG`), a topic reader (kread.c: explicit
 * start offsets, bounded or following, pull-style, progress kept in a group
 * without joining it).
 *
 * `-c CONFIG` takes the connection settings (every `kafka` property, e.g.
 * bootstrap.servers and security settings) from a gateway config file;
 * `--kafka-config FILE` (else $ERRGATE_KAFKA_CONFIG) adds librdkafka
 * properties over them, one KEY=VALUE a line: the operator's own
 * credentials (sasl.username, sasl.password, ssl.*) next to a gateway config
 * that holds the gateway's, kept out of the command line (and so out of
 * ps); `-b` overrides bootstrap.servers; the ERRGATE_BOOTSTRAP environment
 * variable is the last resort. */
#ifndef EG_KCLI_H
#define EG_KCLI_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct eg_kcli {
    const char *bootstrap;    /* borrowed from argv, or NULL */
    const char *config;       /* path borrowed from argv, or NULL */
    const char *key_file;     /* --key-file, borrowed from argv, or NULL */
    const char *kafka_config; /* --kafka-config, borrowed from argv, or NULL */
    const char *protect_key;  /* --protect-key-file, borrowed from argv, or NULL */
    const char *source;       /* --source: the source of a config with several (config.h), or NULL */
} eg_kcli;

/* Consumes a connection option at argv[*i] (-b/--bootstrap B, -c/--config F,
 * --key-file F, --kafka-config F, --protect-key-file F). Returns 1 when it was one (and advances *i past its
 * value), 0 when argv[*i] is something else, -1 when the option lacks its
 * value. */
int eg_kcli_opt(eg_kcli *k, int argc, char **argv, int *i);

struct eg_ctlkey;
/* The deployment's control key (ctlsign.h) for the DLQ commands: the file
 * of --key-file, else of $ERRGATE_CONTROL_KEY_FILE, else the config's
 * control_key_file (with -c). Returns 1 with *key loaded, 0 when none is
 * configured (key->n == 0), -1 with err when the file named cannot be
 * used. */
int eg_kcli_ctlkey(const eg_kcli *k, struct eg_ctlkey *key, char *err, size_t errlen);

struct eg_prot_keys;
/* The payload protection key ring (protect.h) that decrypts lane values:
 * the file of --protect-key-file, else of $ERRGATE_PROTECT_KEY_FILE, else
 * the config's lanes.protect.key_file (with -c). Returns 1 with *keys
 * loaded, 0 when none is configured (keys->n == 0), -1 with err when the
 * file named cannot be used. */
int eg_kcli_protkeys(const eg_kcli *k, struct eg_prot_keys *keys, char *err, size_t errlen);

/* A fresh client configuration: the config file's kafka properties (when -c),
 * then those of the --kafka-config file (or $ERRGATE_KAFKA_CONFIG), then
 * bootstrap.servers from -b or ERRGATE_BOOTSTRAP, errgate's log callback,
 * and client.id = client_id. Returns NULL with a one-line message in err
 * when there is no bootstrap or a file is bad (a message never quotes a
 * value of the properties file). The caller owns
 * the result (rd_kafka_new takes it, or rd_kafka_conf_destroy). */
rd_kafka_conf_t *eg_kcli_conf(const eg_kcli *k, const char *client_id, char *err, size_t errlen);

/* Sets on conf every KEY=VALUE line of the librdkafka properties file path
 * (blank lines and lines starting with # skipped, white space around key
 * and value trimmed; at most 64 KiB). *has_bootstrap (may be NULL) is set
 * when the file names bootstrap.servers. Returns 0, or -1 with err naming
 * the file, the line and the key, never the value. */
int eg_kcli_props_file(rd_kafka_conf_t *conf, const char *path, int *has_bootstrap, char *err, size_t errlen);

/* Reads the partitions of one topic from per-partition start offsets up to
 * the end offsets seen when it was opened (or on and on, with follow). The
 * consumer never joins its group: it assigns partitions, and the group id
 * only names where progress is committed (replay). */
typedef struct eg_lread {
    rd_kafka_t *rk;
    char *topic;
    int n; /* partitions, in id order */
    int32_t *part;
    int64_t *lo, *hi;         /* watermarks when opened */
    int64_t *start;           /* where each partition starts; lo until changed */
    unsigned char *caught_up; /* the partition reached hi */
    int remaining;            /* partitions not caught up */
    int follow;
    int64_t idle_ms; /* time polled without any message */
    int timeout_ms;  /* bounded reads fail after this long idle */
} eg_lread;

/* Partition count of topic (via a metadata request for every topic, which
 * never auto-creates one). Returns the count, 0 when the topic does not
 * exist, or -1 with err filled when the cluster cannot be asked. */
int eg_topic_partitions(rd_kafka_t *rk, const char *topic, char *err, size_t errlen);

/* The partition count md shows for topic: -1 when md lacks it, names it
 * with an error, or shows it without partitions. */
int eg_metadata_partitions(const struct rd_kafka_metadata *md, const char *topic);

/* rd_kafka_committed for the partitions of l (their offsets filled in),
 * asked again while the group's coordinator is moving or loading
 * (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
 * a transport error: seen on a real cluster under load) until timeout_ms
 * passed. Returns librdkafka's last error. */
rd_kafka_resp_err_t eg_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l, int timeout_ms);

/* Makes sure topic exists before it is written: when absent, creates it
 * through the Admin API with `partitions` partitions (at least 1), the
 * cluster's default replication factor, cleanup.policy=compact when
 * compact is set, and retention.ms = retention_ms when it is above 0. *existing (may be NULL) receives the partition count the
 * topic had (0: it was absent). Returns 1 when it created the topic, 0 when
 * it existed or could not be created, -1 with err only when the cluster
 * cannot be asked at all. When it could not be created (no reachable
 * controller, as on librdkafka's mock cluster, or CreateTopics refused: an
 * ACL, a policy) a one-line note says so and what happens instead ("" when
 * nothing is to be said). Blocks up to about 30 s. */
int eg_topic_ensure(rd_kafka_t *rk, const char *topic, int partitions, int compact, int64_t retention_ms, int *existing,
                    char *note, size_t notelen, char *err, size_t errlen);

/* The value of topic config `name` (e.g. "retention.ms") of topic, as the
 * cluster describes it (DescribeConfigs: the topic's own or the broker's
 * default), into out. Returns 0, or -1 with err (no controller, as on
 * librdkafka's mock cluster; the request refused; no such config).
 * Blocks up to about 20 s. */
int eg_topic_config(rd_kafka_t *rk, const char *topic, const char *name, char *out, size_t outlen, char *err,
                    size_t errlen);

/* Creates the consumer (takes conf), checks that topic exists and records
 * its partitions and watermarks. group may be NULL (a throw-away id).
 * Returns 0; -2 when the topic does not exist, -1 on other errors, both
 * with err filled and r closed. */
int eg_lread_open(eg_lread *r, rd_kafka_conf_t *conf, const char *group, const char *topic, char *err, size_t errlen);

/* Moves each start forward to the group's committed offset, when it has
 * one (clamped to [lo, hi]). Returns 0 or -1 with err. */
int eg_lread_seek_committed(eg_lread *r, char *err, size_t errlen);

/* Moves each start forward to the first offset whose timestamp is at or
 * after since_ms, where the broker can tell (librdkafka's mock cannot: it
 * answers -1, and then the start stays; callers still filter each record by
 * its timestamp). Returns 0 or -1 with err. */
int eg_lread_seek_time(eg_lread *r, int64_t since_ms, char *err, size_t errlen);

/* Starts reading at the starts. Partitions already at their end are caught
 * up at once. Returns 0 or -1 with err. */
int eg_lread_start(eg_lread *r, int follow, char *err, size_t errlen);

/* Polls for the next record for up to timeout_ms. Returns 1 with *out set
 * (the caller destroys it), 0 when none came, 2 when a bounded read has
 * reached every end offset, -1 with err on a fetch error or after
 * r->timeout_ms without progress in a bounded read. */
int eg_lread_next(eg_lread *r, int timeout_ms, rd_kafka_message_t **out, char *err, size_t errlen);

/* Commits, for each partition i whose off[i] >= 0, offset off[i] (the next
 * one to read) to the group. Returns 0 or -1 with err. */
int eg_lread_commit(eg_lread *r, const int64_t *off, int async, char *err, size_t errlen);

/* Index of partition p in r, or -1. */
int eg_lread_index(const eg_lread *r, int32_t p);

void eg_lread_close(eg_lread *r);

#endif
