/* broker.c — `errgate broker`: an embedded Kafka-protocol broker with a
 * control socket, for local runs, demos and end-to-end tests.
 *
 * The broker is librdkafka's mock cluster (rdkafka_mock.h) hosted by a dummy
 * producer handle that never produces anything: the handle only owns the
 * mock's threads and listeners. Brokers get ids 1..N and listen on 127.0.0.1
 * on ports the kernel picks. On start the command prints exactly two lines
 * on stdout and flushes them at once:
 *
 *     bootstrap.servers=127.0.0.1:PORT[,127.0.0.1:PORT...]
 *     control=127.0.0.1:PORT
 *
 * Nothing else is ever written to stdout; logs go to stderr, one line each.
 * The process runs until SIGINT or SIGTERM, then closes the control socket,
 * destroys the cluster and exits 0. Bad arguments exit 2 with one line on
 * stderr; a broker that cannot start exits 1.
 *
 * Design. One thread of errgate's own (librdkafka runs the mock's): a
 * libevent loop serves the control socket and the signals, so a control
 * command runs between two events and never races another. The process
 * state (broker_state) lives on eg_cmd_broker's stack and owns everything
 * it points to: the hosting handle and its mock cluster, the listener, the
 * control connections (a list, each freed once its replies are written)
 * and the active topic faults (a list, each with its end timer); one
 * function, broker_shutdown, releases them in dependency order. A control
 * command is a row of a table (name, argument count, handler, usage): the
 * dispatcher checks the argument count, the handler parses and checks its
 * arguments and either acts on the mock or refuses with a reason, so a
 * reply is always one line. The file reads top-down: helpers that parse
 * arguments, topic faults, the control commands, the control connections,
 * start-up and shutdown, the entry point. Below: what the commands do,
 * then what librdkafka's mock does with injected produce failures (which
 * the commands are built on).
 *
 * Topics. Every topic a client asks about is auto-created by the mock with 4
 * partitions; that default is fixed inside librdkafka 2.0.2 (no property or
 * API changes it), so there is no --partitions flag. `--topic NAME:P` and the
 * `topic-create` command pre-create a topic with P partitions (replication
 * factor 1 is asked for; the mock lists min(3, N) replicas regardless).
 *
 * Control socket. A TCP listener on 127.0.0.1 (random port) served by the
 * libevent loop of the main thread; SIGINT/SIGTERM arrive through the same
 * loop. The protocol is line based: one command per line, exactly one reply
 * line per command, `ok` (maybe followed by text) or `error: <why>`; a
 * connection may send any number of commands. ERR arguments are librdkafka
 * error names without the RD_KAFKA_RESP_ERR_ prefix (UNKNOWN_TOPIC_OR_PART,
 * NO_ERROR, _TRANSPORT, ...), case-insensitive, or their numbers. APIKEY is a
 * Kafka request name (Produce, Fetch, ListOffsets, Metadata, OffsetCommit,
 * OffsetFetch, FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup,
 * ApiVersions, InitProducerId, ...) or its number. ID is a broker id or -1
 * (or `all`) for every broker.
 *
 *   ping                          ok
 *   help                          ok followed by the command list
 *   quit                          ok, then the server closes the connection
 *   topic-create NAME PARTITIONS  pre-create a topic
 *   topic-error NAME ERR          the error Metadata responses report for NAME
 *                                 (the mock uses it for nothing else: Produce
 *                                 and Fetch are not affected, see below;
 *                                 creates NAME with 4 partitions if missing)
 *   request-errors APIKEY COUNT ERR   the next COUNT requests of APIKEY, to
 *                                 any broker and for any topic, fail with ERR
 *   clear-request-errors APIKEY   drop the pending injected errors of APIKEY
 *   broker-down ID / broker-up ID disconnect a broker and refuse connections,
 *                                 or accept them again (no leader change)
 *   rtt ID MS                     delay every response of a broker by MS ms
 *   topic-fault NAME SECONDS [ERR]  make produces to NAME, and only NAME,
 *                                 fail for SECONDS (0: until topic-recover);
 *                                 ERR is LEADER_NOT_AVAILABLE (default) or
 *                                 UNKNOWN_TOPIC_OR_PART, see below
 *   topic-recover NAME            end a topic fault now
 *
 * Produce failure injection, as read in librdkafka 2.0.2's mock
 * (rdkafka_mock_handlers.c) and measured with an idempotent acks=all
 * producer sending one record every 100 ms:
 *
 *   - the topic error of rd_kafka_mock_topic_set_error (`topic-error`) is only
 *     reported by Metadata (and AddPartitionsToTxn) responses; the Produce
 *     handler never looks at it. A producer that already knows the topic goes
 *     on producing successfully (250 of 250 delivered) until its next
 *     metadata refresh (topic.metadata.refresh.interval.ms, 5 min by default);
 *   - `request-errors Produce ...` fails the next produce requests whatever
 *     their topics;
 *   - what the Produce handler does check per partition is leadership: a
 *     partition whose leader is not the receiving broker is answered with
 *     NOT_LEADER_FOR_PARTITION, which is retriable and makes the client
 *     refresh its metadata at once.
 *
 * topic-fault builds on the last point and touches no other topic: every
 * partition of NAME becomes leader-less (NAME is first created with the
 * mock's 4 partitions if it does not exist); with UNKNOWN_TOPIC_OR_PART,
 * Metadata also reports NAME as missing. After SECONDS (or on topic-recover)
 * the metadata error is cleared and partition P gets broker (P mod N) + 1 as
 * its leader. What a producer that had already produced to NAME observes:
 *
 *   LEADER_NOT_AVAILABLE (the default; a partition outage). produce() keeps
 *   succeeding and the records wait inside the client without a word. A
 *   record whose message.timeout.ms (300 s by default) runs out during the
 *   fault gets a delivery report _MSG_TIMED_OUT at that moment: with
 *   message.timeout.ms=3000 and a 10 s fault, the first failure comes 3.0 s
 *   after the fault began, and every record produced up to ~3 s before its
 *   end fails. The rest are delivered within ~0.1 s of recovery, once each
 *   (no duplicates in the log), and the producer carries on normally.
 *
 *   UNKNOWN_TOPIC_OR_PART (the topic vanished). ~0.25 s in, the records in
 *   flight fail with _UNKNOWN_PARTITION; from then on produce() itself
 *   returns _UNKNOWN_TOPIC (no delivery report) until ~0.1 s after recovery.
 *   librdkafka re-queries the topic every second, and a record produced in
 *   the instant between query and answer fails with UNKNOWN_TOPIC_OR_PART
 *   in its delivery report instead. Exception: while the producer's handle
 *   for the topic is younger than topic.metadata.propagation.max.ms (30 s by
 *   default) librdkafka takes the missing topic for one still being created:
 *   after ~0.6 s of _UNKNOWN_TOPIC, produce() succeeds again and the records
 *   wait silently, to be delivered ~1 s after recovery (or failed with
 *   UNKNOWN_TOPIC_OR_PART once that allowance has passed).
 *
 * The mock cannot fail one topic's produces with any other error: other
 * topic errors (tried: TOPIC_AUTHORIZATION_FAILED) keep the partition list in
 * Metadata, so clients see nothing but leader-less partitions. topic-fault
 * therefore refuses any other ERR rather than pretend.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define EG_MAX_BROKERS 32
#define EG_MAX_PARTITIONS 10000 /* per topic (the mock allocates them) */
#define EG_MOCK_DEFAULT_PARTS 4 /* the mock's auto-create partition count */
#define EG_MAX_TOPIC_NAME 249   /* Kafka's limit */
#define EG_CTL_MAX_LINE 1024    /* longer command lines are refused */
#define EG_CTL_MAX_ARGS 8
#define EG_REPLY_MAX 1024
#define EG_MAX_REQUEST_ERRORS 100000
#define EG_MAX_FAULT_SECONDS 86400.0

typedef struct broker_state broker_state;

/* One control connection. Owned by the broker's connection list; freed by
 * ctl_conn_free (on error, after a graceful close has flushed its replies, or
 * at shutdown). */
typedef struct ctl_conn {
    broker_state *b;
    struct bufferevent *bev; /* owned; closes the socket when freed */
    int closing;             /* no more input; free once output drained */
    struct ctl_conn *prev, *next;
} ctl_conn;

/* One active topic fault. Owned by the broker's fault list. */
typedef struct topic_fault {
    broker_state *b;
    char *topic;             /* owned */
    int partitions;          /* partitions made leader-less */
    rd_kafka_resp_err_t err; /* metadata error set on the topic, or 0 */
    struct event *timer;     /* owned; NULL when the fault has no end */
    struct topic_fault *next;
} topic_fault;

/* The whole broker process state. Lives on eg_cmd_broker's stack; everything
 * it points to is owned by it and released by broker_shutdown. */
struct broker_state {
    rd_kafka_t *rk; /* dummy handle hosting the mock */
    rd_kafka_mock_cluster_t *mc;
    int broker_cnt;
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *sigint, *sigterm;
    ctl_conn *conns;
    topic_fault *faults;
};

/* A topic to pre-create, parsed from --topic NAME:P; name points into argv. */
typedef struct topic_spec {
    const char *name;
    size_t name_len;
    int partitions;
} topic_spec;

/* ---- small helpers ------------------------------------------------------- */

/* Writes one log line "errgate broker: <printf of fmt>" to stderr. */
static void broker_log(const char *fmt, ...) {
    char line[EG_REPLY_MAX + 256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "errgate broker: %s\n", line);
}

/* librdkafka's log callback for the hosting handle (called on librdkafka's
 * threads): each line as "errgate broker: rdkafka LEVEL FACILITY: text" on
 * stderr. */
static void rk_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    fprintf(stderr, "errgate broker: rdkafka %d %s: %s\n", level, fac, buf);
}

/* Parses all of s as a base-10 integer in [min, max] into *out (no leading
 * space, nothing after the digits). Returns 0, or -1 (and leaves *out alone)
 * if s is not such a number. */
static int parse_long(const char *s, long min, long max, long *out) {
    char *end;
    long v;

    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* Returns 1 when name[0..len) is a legal Kafka topic name
 * ([A-Za-z0-9._-]{1,249}, not "." or ".."), else 0. */
static int topic_name_ok(const char *name, size_t len) {
    size_t i;

    if (len == 0 || len > EG_MAX_TOPIC_NAME) return 0;
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) return 0;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-') return 0;
    }
    return 1;
}

/* Parses an error name (with or without the RD_KAFKA_RESP_ERR_ prefix,
 * case-insensitive) or number into *out, using librdkafka's own table.
 * Returns 0, or -1 if s names no error librdkafka knows. */
static int parse_err(const char *s, rd_kafka_resp_err_t *out) {
    const struct rd_kafka_err_desc *descs;
    size_t cnt, i;
    long num;
    int numeric;

    if (!strncasecmp(s, "RD_KAFKA_RESP_ERR_", 18)) s += 18;
    numeric = parse_long(s, INT_MIN, INT_MAX, &num) == 0;

    rd_kafka_get_err_descs(&descs, &cnt);
    for (i = 0; i < cnt; i++) {
        if (!descs[i].name) continue; /* a gap in the table */
        if (numeric ? (long)descs[i].code == num : !strcasecmp(descs[i].name, s)) {
            *out = descs[i].code;
            return 0;
        }
    }
    return -1;
}

/* Kafka request names accepted wherever an APIKEY is expected. */
static const struct {
    const char *name;
    int16_t key;
} api_keys[] = {
    {"Produce", 0},
    {"Fetch", 1},
    {"ListOffsets", 2},
    {"Metadata", 3},
    {"OffsetCommit", 8},
    {"OffsetFetch", 9},
    {"FindCoordinator", 10},
    {"JoinGroup", 11},
    {"Heartbeat", 12},
    {"LeaveGroup", 13},
    {"SyncGroup", 14},
    {"DescribeGroups", 15},
    {"ListGroups", 16},
    {"SaslHandshake", 17},
    {"ApiVersions", 18},
    {"CreateTopics", 19},
    {"DeleteTopics", 20},
    {"DeleteRecords", 21},
    {"InitProducerId", 22},
    {"OffsetForLeaderEpoch", 23},
    {"AddPartitionsToTxn", 24},
    {"AddOffsetsToTxn", 25},
    {"EndTxn", 26},
    {"TxnOffsetCommit", 28},
};

/* Parse a request name (case-insensitive) or number 0..127 into *OUT.
 * Returns 0, or -1 if S is neither. */
static int parse_api_key(const char *s, int16_t *out) {
    size_t i;
    long num;

    if (parse_long(s, 0, 127, &num) == 0) {
        *out = (int16_t)num;
        return 0;
    }
    for (i = 0; i < sizeof(api_keys) / sizeof(api_keys[0]); i++) {
        if (!strcasecmp(api_keys[i].name, s)) {
            *out = api_keys[i].key;
            return 0;
        }
    }
    return -1;
}

/* Parse a broker id (1..broker_cnt, or -1/"all" for every broker) into *OUT.
 * Returns 0, or -1 if S is neither. */
static int parse_broker_id(const broker_state *b, const char *s, int32_t *out) {
    long num;

    if (!strcasecmp(s, "all")) {
        *out = -1;
        return 0;
    }
    if (parse_long(s, -1, b->broker_cnt, &num) || num == 0) return -1;
    *out = (int32_t)num;
    return 0;
}

/* Returns 1 when err is one that topic-fault expresses by leadership alone
 * (LEADER_NOT_AVAILABLE, NOT_LEADER_FOR_PARTITION), else 0. */
static int err_is_leadership(rd_kafka_resp_err_t err) {
    return err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE || err == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
}

/* ---- topic faults -------------------------------------------------------- */

/* Makes every partition of topic leader-less (leaderless != 0), or gives
 * partition P broker (P mod N) + 1 as its leader. The topic must exist (the
 * mock would otherwise create it with one partition). Returns the number of
 * partitions changed, or -1 on a mock error (message in errbuf). */
static int topic_set_leaders(broker_state *b, const char *topic, int leaderless, char *errbuf, size_t errsz) {
    int32_t p;

    for (p = 0; p < EG_MAX_PARTITIONS; p++) {
        int32_t leader = leaderless ? -1 : (p % b->broker_cnt) + 1;
        rd_kafka_resp_err_t err = rd_kafka_mock_partition_set_leader(b->mc, topic, p, leader);
        if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) break; /* past the last partition */
        if (err) {
            snprintf(errbuf, errsz, "%s [%d]: %s", topic, (int)p, rd_kafka_err2name(err));
            return -1;
        }
    }
    return (int)p;
}

/* The active fault on topic, or NULL. Ownership stays with the list. */
static topic_fault *fault_find(broker_state *b, const char *topic) {
    topic_fault *f;

    for (f = b->faults; f; f = f->next)
        if (!strcmp(f->topic, topic)) return f;
    return NULL;
}

/* Unlinks f from its broker's list and frees it (its timer too). Does not
 * touch the mock. */
static void fault_free(topic_fault *f) {
    topic_fault **pp;

    for (pp = &f->b->faults; *pp; pp = &(*pp)->next) {
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    }
    if (f->timer) event_free(f->timer);
    free(f->topic);
    free(f);
}

/* Ends fault f: clears the topic's metadata error, gives its partitions
 * leaders again, logs the outcome and frees f. Returns 0, or -1 if the mock
 * refused (message in errbuf; f is freed either way). */
static int fault_recover(topic_fault *f, char *errbuf, size_t errsz) {
    broker_state *b = f->b;
    int n;

    if (f->err) rd_kafka_mock_topic_set_error(b->mc, f->topic, RD_KAFKA_RESP_ERR_NO_ERROR);
    n = topic_set_leaders(b, f->topic, 0, errbuf, errsz);
    if (n >= 0)
        broker_log("topic-fault %s: recovered, %d partition(s) have "
                   "leaders again",
                   f->topic, n);
    else broker_log("topic-fault %s: recovery failed: %s", f->topic, errbuf);
    fault_free(f);
    return n < 0 ? -1 : 0;
}

/* The end timer of a fault (arg): its time is up, it recovers (a failure
 * is logged by fault_recover; there is nobody to reply to). */
static void fault_timer_cb(evutil_socket_t fd, short what, void *arg) {
    char errbuf[256];

    fault_recover(arg, errbuf, sizeof(errbuf));
}

/* Starts (or replaces) a fault on topic lasting seconds (0: no end) with
 * err (see the file comment), creating the topic with the mock's default
 * partitions when it is missing. Returns 0 with a summary in out, or -1
 * with the reason in out (nothing changed). */
static int fault_start(broker_state *b, const char *topic, double seconds, rd_kafka_resp_err_t err, char *out,
                       size_t outsz) {
    topic_fault *f = fault_find(b, topic);
    rd_kafka_resp_err_t cerr, terr;
    int n;

    /* The topic must exist before its partitions are enumerated; create
         * it the way auto-creation would if a client has not yet. */
    cerr = rd_kafka_mock_topic_create(b->mc, topic, EG_MOCK_DEFAULT_PARTS, b->broker_cnt < 3 ? b->broker_cnt : 3);
    if (cerr && cerr != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        snprintf(out, outsz, "%s: %s", topic, rd_kafka_err2name(cerr));
        return -1;
    }

    if (!f) {
        if (!(f = calloc(1, sizeof(*f))) || !(f->topic = strdup(topic))) {
            free(f);
            snprintf(out, outsz, "out of memory");
            return -1;
        }
        f->b = b;
        f->next = b->faults;
        b->faults = f;
    } else if (f->timer) {
        event_free(f->timer);
        f->timer = NULL;
    }

    terr = err_is_leadership(err) ? RD_KAFKA_RESP_ERR_NO_ERROR : err;
    if (terr || f->err) rd_kafka_mock_topic_set_error(b->mc, topic, terr);
    f->err = terr;

    if ((n = topic_set_leaders(b, topic, 1, out, outsz)) < 0) {
        char ignored[256];
        fault_recover(f, ignored, sizeof(ignored));
        return -1;
    }
    f->partitions = n;

    if (seconds > 0) {
        struct timeval tv;
        tv.tv_sec = (time_t)seconds;
        tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
        if (!(f->timer = evtimer_new(b->base, fault_timer_cb, f)) || evtimer_add(f->timer, &tv)) {
            char ignored[256];
            fault_recover(f, ignored, sizeof(ignored));
            snprintf(out, outsz, "cannot arm the fault timer");
            return -1;
        }
    }

    snprintf(out, outsz, "%s: %d partition(s) leader-less%s%s, %s", topic, n, terr ? ", metadata error " : "",
             terr ? rd_kafka_err2name(terr) : "", seconds > 0 ? "recovering on timer" : "until topic-recover");
    if (seconds > 0) {
        size_t len = strlen(out);
        snprintf(out + len, outsz - len, " in %.3f s", seconds);
    }
    return 0;
}

/* ---- control commands ---------------------------------------------------- */

/* What a command handler hands back besides ok/error: the reply text
 * (without the ok/error prefix) and whether to close the connection. */
typedef struct ctl_reply {
    char text[EG_REPLY_MAX];
    int close;
} ctl_reply;

/* A command handler: argv[0] is the command name, argc is within the
 * table's bounds (the dispatcher checked). Parses and checks its arguments;
 * acts on the mock only when all are good. Fills r (text starts empty):
 * returns 0 for "ok TEXT", or -1 for "error: TEXT" with nothing changed. */
typedef int(ctl_fn)(broker_state *b, int argc, char **argv, ctl_reply *r);

static ctl_fn cmd_ping, cmd_help, cmd_quit, cmd_topic_create, cmd_topic_error, cmd_request_errors,
    cmd_clear_request_errors, cmd_broker_down, cmd_broker_up, cmd_rtt, cmd_topic_fault, cmd_topic_recover;

static const struct {
    const char *name;
    int min_args, max_args; /* counting the name itself */
    ctl_fn *fn;
    const char *usage;
} commands[] = {
    {"ping", 1, 1, cmd_ping, "ping"},
    {"help", 1, 1, cmd_help, "help"},
    {"quit", 1, 1, cmd_quit, "quit"},
    {"topic-create", 3, 3, cmd_topic_create, "topic-create NAME PARTITIONS"},
    {"topic-error", 3, 3, cmd_topic_error, "topic-error NAME ERR"},
    {"request-errors", 4, 4, cmd_request_errors, "request-errors APIKEY COUNT ERR"},
    {"clear-request-errors", 2, 2, cmd_clear_request_errors, "clear-request-errors APIKEY"},
    {"broker-down", 2, 2, cmd_broker_down, "broker-down ID"},
    {"broker-up", 2, 2, cmd_broker_up, "broker-up ID"},
    {"rtt", 3, 3, cmd_rtt, "rtt ID MS"},
    {"topic-fault", 3, 4, cmd_topic_fault, "topic-fault NAME SECONDS [LEADER_NOT_AVAILABLE|UNKNOWN_TOPIC_OR_PART]"},
    {"topic-recover", 2, 2, cmd_topic_recover, "topic-recover NAME"},
};
#define EG_NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* ping: answers ok; nothing else (liveness). */
static int cmd_ping(broker_state *b, int argc, char **argv, ctl_reply *r) { return 0; }

/* help: ok with the usage of every command, on one line. */
static int cmd_help(broker_state *b, int argc, char **argv, ctl_reply *r) {
    size_t i, len = 0;

    for (i = 0; i < EG_NCOMMANDS && len < sizeof(r->text); i++) {
        int n = snprintf(r->text + len, sizeof(r->text) - len, "%s%s", i ? " | " : "commands: ", commands[i].usage);
        if (n < 0) break;
        len += (size_t)n;
    }
    return 0;
}

/* quit: ok "bye", then the connection is closed once the reply is written. */
static int cmd_quit(broker_state *b, int argc, char **argv, ctl_reply *r) {
    snprintf(r->text, sizeof(r->text), "bye");
    r->close = 1;
    return 0;
}

/* topic-create NAME PARTITIONS: creates NAME with PARTITIONS (1..10000)
 * partitions. Refuses a bad name, a bad count, or what the mock refuses
 * (a topic that exists). */
static int cmd_topic_create(broker_state *b, int argc, char **argv, ctl_reply *r) {
    rd_kafka_resp_err_t err;
    long parts;

    if (!topic_name_ok(argv[1], strlen(argv[1]))) {
        snprintf(r->text, sizeof(r->text), "bad topic name");
        return -1;
    }
    if (parse_long(argv[2], 1, EG_MAX_PARTITIONS, &parts)) {
        snprintf(r->text, sizeof(r->text), "PARTITIONS must be 1..%d", EG_MAX_PARTITIONS);
        return -1;
    }
    if ((err = rd_kafka_mock_topic_create(b->mc, argv[1], (int)parts, 1))) {
        snprintf(r->text, sizeof(r->text), "%s: %s", rd_kafka_err2name(err), rd_kafka_err2str(err));
        return -1;
    }
    snprintf(r->text, sizeof(r->text), "%s: %ld partition(s)", argv[1], parts);
    return 0;
}

/* topic-error NAME ERR: Metadata responses report ERR for NAME from now
 * on (NO_ERROR clears it). Refuses a bad name or an unknown error. */
static int cmd_topic_error(broker_state *b, int argc, char **argv, ctl_reply *r) {
    rd_kafka_resp_err_t err;

    if (!topic_name_ok(argv[1], strlen(argv[1]))) {
        snprintf(r->text, sizeof(r->text), "bad topic name");
        return -1;
    }
    if (parse_err(argv[2], &err)) {
        snprintf(r->text, sizeof(r->text), "unknown error '%s'", argv[2]);
        return -1;
    }
    rd_kafka_mock_topic_set_error(b->mc, argv[1], err);
    snprintf(r->text, sizeof(r->text), "%s: metadata error %s", argv[1], rd_kafka_err2name(err));
    return 0;
}

/* request-errors APIKEY COUNT ERR: the next COUNT (1..100000) requests of
 * APIKEY fail with ERR. Refuses an unknown key or error, a bad count. */
static int cmd_request_errors(broker_state *b, int argc, char **argv, ctl_reply *r) {
    rd_kafka_resp_err_t err, *errs;
    int16_t key;
    long cnt, i;

    if (parse_api_key(argv[1], &key)) {
        snprintf(r->text, sizeof(r->text), "unknown APIKEY '%s'", argv[1]);
        return -1;
    }
    if (parse_long(argv[2], 1, EG_MAX_REQUEST_ERRORS, &cnt)) {
        snprintf(r->text, sizeof(r->text), "COUNT must be 1..%d", EG_MAX_REQUEST_ERRORS);
        return -1;
    }
    if (parse_err(argv[3], &err)) {
        snprintf(r->text, sizeof(r->text), "unknown error '%s'", argv[3]);
        return -1;
    }
    if (!(errs = malloc((size_t)cnt * sizeof(*errs)))) {
        snprintf(r->text, sizeof(r->text), "out of memory");
        return -1;
    }
    for (i = 0; i < cnt; i++) errs[i] = err;
    rd_kafka_mock_push_request_errors_array(b->mc, key, (size_t)cnt, errs);
    free(errs);
    snprintf(r->text, sizeof(r->text), "next %ld request(s) of ApiKey %d fail with %s", cnt, (int)key,
             rd_kafka_err2name(err));
    return 0;
}

/* clear-request-errors APIKEY: drops the errors still queued for APIKEY.
 * Refuses an unknown key. */
static int cmd_clear_request_errors(broker_state *b, int argc, char **argv, ctl_reply *r) {
    int16_t key;

    if (parse_api_key(argv[1], &key)) {
        snprintf(r->text, sizeof(r->text), "unknown APIKEY '%s'", argv[1]);
        return -1;
    }
    rd_kafka_mock_clear_request_errors(b->mc, key);
    return 0;
}

/* broker-down and broker-up: takes broker arg (an id, -1 or all) down
 * (up == 0) or up. Returns 0, or -1 with the reason in r. */
static int broker_updown(broker_state *b, const char *arg, int up, ctl_reply *r) {
    rd_kafka_resp_err_t err;
    int32_t id;

    if (parse_broker_id(b, arg, &id)) {
        snprintf(r->text, sizeof(r->text), "ID must be 1..%d or all", b->broker_cnt);
        return -1;
    }
    err = up ? rd_kafka_mock_broker_set_up(b->mc, id) : rd_kafka_mock_broker_set_down(b->mc, id);
    if (err) {
        snprintf(r->text, sizeof(r->text), "%s", rd_kafka_err2name(err));
        return -1;
    }
    return 0;
}

/* broker-down ID: see broker_updown. */
static int cmd_broker_down(broker_state *b, int argc, char **argv, ctl_reply *r) {
    return broker_updown(b, argv[1], 0, r);
}

/* broker-up ID: see broker_updown. */
static int cmd_broker_up(broker_state *b, int argc, char **argv, ctl_reply *r) {
    return broker_updown(b, argv[1], 1, r);
}

/* rtt ID MS: delays every response of broker ID (or all) by MS (0..3600000)
 * ms. Refuses a bad id or delay. */
static int cmd_rtt(broker_state *b, int argc, char **argv, ctl_reply *r) {
    rd_kafka_resp_err_t err;
    int32_t id;
    long ms;

    if (parse_broker_id(b, argv[1], &id)) {
        snprintf(r->text, sizeof(r->text), "ID must be 1..%d or all", b->broker_cnt);
        return -1;
    }
    if (parse_long(argv[2], 0, 3600 * 1000, &ms)) {
        snprintf(r->text, sizeof(r->text), "MS must be 0..3600000");
        return -1;
    }
    if ((err = rd_kafka_mock_broker_set_rtt(b->mc, id, (int)ms))) {
        snprintf(r->text, sizeof(r->text), "%s", rd_kafka_err2name(err));
        return -1;
    }
    return 0;
}

/* topic-fault NAME SECONDS [ERR]: starts a fault (fault_start) of SECONDS
 * (0..86400, 0: until topic-recover) with ERR, LEADER_NOT_AVAILABLE by
 * default or UNKNOWN_TOPIC_OR_PART; any other ERR is refused. */
static int cmd_topic_fault(broker_state *b, int argc, char **argv, ctl_reply *r) {
    rd_kafka_resp_err_t err;
    char *end;
    double secs;

    if (!topic_name_ok(argv[1], strlen(argv[1]))) {
        snprintf(r->text, sizeof(r->text), "bad topic name");
        return -1;
    }
    errno = 0;
    secs = strtod(argv[2], &end);
    if (errno || end == argv[2] || *end || !isfinite(secs) || secs < 0 || secs > EG_MAX_FAULT_SECONDS) {
        snprintf(r->text, sizeof(r->text), "SECONDS must be 0..%.0f", EG_MAX_FAULT_SECONDS);
        return -1;
    }
    err = RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
    if (argc > 3 &&
        (parse_err(argv[3], &err) || (!err_is_leadership(err) && err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART))) {
        /* The mock cannot fail one topic's produces with any other
                 * error; accepting it would silently mean "leader-less". */
        snprintf(r->text, sizeof(r->text),
                 "ERR must be LEADER_NOT_AVAILABLE or "
                 "UNKNOWN_TOPIC_OR_PART");
        return -1;
    }
    return fault_start(b, argv[1], secs, err, r->text, sizeof(r->text));
}

/* topic-recover NAME: ends the fault on NAME now. Refuses a topic without
 * a fault, or a recovery the mock refused (the fault is gone either way). */
static int cmd_topic_recover(broker_state *b, int argc, char **argv, ctl_reply *r) {
    topic_fault *f = fault_find(b, argv[1]);

    if (!f) {
        snprintf(r->text, sizeof(r->text), "no fault on topic '%s'", argv[1]);
        return -1;
    }
    if (fault_recover(f, r->text, sizeof(r->text))) return -1;
    snprintf(r->text, sizeof(r->text), "%s: recovered", argv[1]);
    return 0;
}

/* Runs one command line (NUL-terminated, split in place) and writes its one
 * reply line (with "\n") to reply: an empty or unknown command, or a wrong
 * argument count, is an error reply too. Returns 1 if the connection is to
 * be closed after the reply, else 0. */
static int ctl_execute(broker_state *b, char *line, char *reply, size_t replysz) {
    char *argv[EG_CTL_MAX_ARGS + 1];
    ctl_reply r;
    char *save = NULL, *tok;
    int argc = 0, rc = -1;
    size_t i;

    r.text[0] = '\0';
    r.close = 0;
    for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (argc == EG_CTL_MAX_ARGS + 1) break;
        argv[argc++] = tok;
    }

    if (argc == 0) {
        snprintf(r.text, sizeof(r.text), "empty command");
    } else if (argc > EG_CTL_MAX_ARGS) {
        snprintf(r.text, sizeof(r.text), "too many arguments");
    } else {
        for (i = 0; i < EG_NCOMMANDS; i++)
            if (!strcmp(commands[i].name, argv[0])) break;
        if (i == EG_NCOMMANDS) snprintf(r.text, sizeof(r.text), "unknown command '%.64s' (try help)", argv[0]);
        else if (argc < commands[i].min_args || argc > commands[i].max_args)
            snprintf(r.text, sizeof(r.text), "usage: %s", commands[i].usage);
        else rc = commands[i].fn(b, argc, argv, &r);
    }

    if (rc == 0) snprintf(reply, replysz, "ok%s%s\n", r.text[0] ? " " : "", r.text);
    else snprintf(reply, replysz, "error: %s\n", r.text);
    return r.close;
}

/* ---- control connections ------------------------------------------------- */

/* Closes c's socket and frees c; unlinks it from the broker's list. */
static void ctl_conn_free(ctl_conn *c) {
    broker_state *b = c->b;

    if (c->prev) c->prev->next = c->next;
    else b->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    bufferevent_free(c->bev);
    free(c);
}

/* Stops reading from c and frees it once its pending replies are written.
 * c may be freed before this returns: the caller must not touch it again. */
static void ctl_conn_close(ctl_conn *c) {
    c->closing = 1;
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) ctl_conn_free(c);
}

/* Handles one received line of n bytes (no terminator; not NUL-terminated
 * beyond n) and queues its reply on c; a line over EG_CTL_MAX_LINE is
 * refused. Returns 1 if the connection should be closed after the reply,
 * else 0. */
static int ctl_conn_line(ctl_conn *c, char *line, size_t n) {
    char reply[EG_REPLY_MAX + 16];
    char logline[EG_CTL_MAX_LINE + 1];
    int want_close = 0;

    if (n > EG_CTL_MAX_LINE) {
        snprintf(reply, sizeof(reply), "error: line too long\n");
    } else if (memchr(line, '\0', n)) {
        snprintf(reply, sizeof(reply), "error: NUL byte in line\n");
    } else {
        memcpy(logline, line, n);
        logline[n] = '\0';
        want_close = ctl_execute(c->b, line, reply, sizeof(reply));
        broker_log("control: %s -> %.*s", logline, (int)strcspn(reply, "\n"), reply);
    }
    bufferevent_write(c->bev, reply, strlen(reply));
    return want_close;
}

/* bufferevent read callback: runs every complete line received, in order,
 * and closes the connection (ctl_conn_close) after quit, or after an error
 * reply when an unterminated line grows past EG_CTL_MAX_LINE. */
static void ctl_read_cb(struct bufferevent *bev, void *arg) {
    ctl_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t n;

    while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF))) {
        int quit = ctl_conn_line(c, line, n);
        free(line);
        if (quit) {
            ctl_conn_close(c);
            return;
        }
    }
    if (evbuffer_get_length(in) > EG_CTL_MAX_LINE) {
        const char *msg = "error: line too long\n";
        bufferevent_write(bev, msg, strlen(msg));
        ctl_conn_close(c);
    }
}

/* bufferevent write callback: the output is drained; finishes a pending
 * close (frees the connection). */
static void ctl_write_cb(struct bufferevent *bev, void *arg) {
    ctl_conn *c = arg;

    if (c->closing) ctl_conn_free(c);
}

/* bufferevent event callback: at EOF runs a last unterminated line and
 * closes once its reply is written; an error drops the connection. */
static void ctl_event_cb(struct bufferevent *bev, short what, void *arg) {
    ctl_conn *c = arg;

    if (what & BEV_EVENT_EOF) {
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t n = evbuffer_get_length(in);

        if (n > 0 && n <= EG_CTL_MAX_LINE) {
            char line[EG_CTL_MAX_LINE + 1];
            evbuffer_remove(in, line, n);
            line[n] = '\0';
            ctl_conn_line(c, line, n);
        }
        ctl_conn_close(c);
        return;
    }
    if (what & BEV_EVENT_ERROR) ctl_conn_free(c);
}

/* evconnlistener callback: adopts a new control connection (owned by the
 * broker's list); one that cannot be set up is closed at once. */
static void ctl_accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg) {
    broker_state *b = arg;
    ctl_conn *c;

    if (!(c = calloc(1, sizeof(*c)))) {
        evutil_closesocket(fd);
        return;
    }
    if (!(c->bev = bufferevent_socket_new(b->base, fd, BEV_OPT_CLOSE_ON_FREE))) {
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->b = b;
    c->next = b->conns;
    if (b->conns) b->conns->prev = c;
    b->conns = c;
    bufferevent_setcb(c->bev, ctl_read_cb, ctl_write_cb, ctl_event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* evsignal callback: SIGINT or SIGTERM logs and ends the loop (the entry
 * point then shuts down and exits 0). */
static void on_signal(evutil_socket_t sig, short what, void *arg) {
    broker_state *b = arg;

    broker_log("%s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    event_base_loopbreak(b->base);
}

/* ---- lifecycle ----------------------------------------------------------- */

/* Prints the usage text to f. */
static void usage(FILE *f) {
    fprintf(f, "usage: errgate broker [--brokers N] [--topic NAME:PARTITIONS]...\n"
               "  Runs an embedded Kafka-protocol broker (librdkafka's mock\n"
               "  cluster) on 127.0.0.1 until SIGINT/SIGTERM. Prints\n"
               "  bootstrap.servers=... and control=127.0.0.1:PORT on stdout.\n"
               "  Auto-created topics get 4 partitions. Send `help` to the\n"
               "  control port for its commands.\n");
}

/* Parses `--topic NAME:P` into *t (the name points into arg). Returns 0, or
 * -1 with a one-line message on stderr. */
static int parse_topic_spec(const char *arg, topic_spec *t) {
    const char *colon = strrchr(arg, ':');
    long parts;

    if (!colon || !topic_name_ok(arg, (size_t)(colon - arg)) || parse_long(colon + 1, 1, EG_MAX_PARTITIONS, &parts)) {
        fprintf(stderr,
                "errgate broker: bad --topic '%s' (want NAME:PARTITIONS, "
                "PARTITIONS 1..%d)\n",
                arg, EG_MAX_PARTITIONS);
        return -1;
    }
    t->name = arg;
    t->name_len = (size_t)(colon - arg);
    t->partitions = (int)parts;
    return 0;
}

/* Parses the command line into *brokers and topics[0..*ntopics) (topics has
 * room for argc entries). Returns 0 to run, 1 after printing help, or -1
 * after a one-line error on stderr. */
static int parse_args(int argc, char **argv, int *brokers, topic_spec *topics, int *ntopics) {
    int i, j;

    *brokers = 1;
    *ntopics = 0;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        size_t optlen = strcspn(a, "=");
        int is_brokers, is_topic;

        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        is_brokers = optlen == 9 && !strncmp(a, "--brokers", 9);
        is_topic = optlen == 7 && !strncmp(a, "--topic", 7);
        if (optlen == 12 && !strncmp(a, "--partitions", 12)) {
            fprintf(stderr, "errgate broker: --partitions is not "
                            "supported: librdkafka's mock always "
                            "auto-creates 4 partitions; pre-create with "
                            "--topic NAME:PARTITIONS\n");
            return -1;
        }
        if (!is_brokers && !is_topic) {
            fprintf(stderr,
                    "errgate broker: unknown argument '%s'%s (see "
                    "--help)\n",
                    a, eg_dash_hint(a));
            return -1;
        }
        if (a[optlen] == '=') val = a + optlen + 1;
        else if (i + 1 < argc) val = argv[++i];
        else {
            fprintf(stderr, "errgate broker: %s needs a value\n", a);
            return -1;
        }

        if (is_brokers) {
            long n;
            if (parse_long(val, 1, EG_MAX_BROKERS, &n)) {
                fprintf(stderr,
                        "errgate broker: --brokers must be "
                        "1..%d\n",
                        EG_MAX_BROKERS);
                return -1;
            }
            *brokers = (int)n;
        } else { /* --topic */
            topic_spec *t = &topics[*ntopics];
            if (parse_topic_spec(val, t)) return -1;
            for (j = 0; j < *ntopics; j++) {
                if (topics[j].name_len == t->name_len && !memcmp(topics[j].name, t->name, t->name_len)) {
                    fprintf(stderr,
                            "errgate broker: topic '%.*s' "
                            "given twice\n",
                            (int)t->name_len, t->name);
                    return -1;
                }
            }
            (*ntopics)++;
        }
    }
    return 0;
}

/* Releases everything b owns, in dependency order: connections, faults,
 * listener, signal events, the mock cluster, its hosting handle, the loop.
 * Safe on a partly built b. */
static void broker_shutdown(broker_state *b) {
    while (b->conns) ctl_conn_free(b->conns);
    while (b->faults) fault_free(b->faults);
    if (b->listener) evconnlistener_free(b->listener);
    if (b->sigint) event_free(b->sigint);
    if (b->sigterm) event_free(b->sigterm);
    if (b->mc) rd_kafka_mock_cluster_destroy(b->mc);
    if (b->rk) rd_kafka_destroy(b->rk);
    if (b->base) event_base_free(b->base);
    memset(b, 0, sizeof(*b));
}

/* Creates the hosting handle and the mock cluster with `brokers` brokers
 * into b. Returns 0, or -1 after logging why (b keeps what was built, for
 * broker_shutdown). */
static int broker_start_cluster(broker_state *b, int brokers) {
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    rd_kafka_conf_set_log_cb(conf, rk_log_cb);
    /* The hosting handle never connects anywhere; keep it quiet. */
    if (rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        broker_log("cannot configure: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    if (!(b->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)))) {
        broker_log("cannot create the hosting handle: %s", errstr);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    if (!(b->mc = rd_kafka_mock_cluster_new(b->rk, brokers))) {
        broker_log("cannot create the mock cluster");
        return -1;
    }
    b->broker_cnt = brokers;
    return 0;
}

/* Opens the control listener on 127.0.0.1 (kernel-chosen port) on b's loop
 * and stores the port in *port. Returns 0, or -1 after logging why. */
static int broker_start_control(broker_state *b, unsigned *port) {
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;

    b->listener = evconnlistener_new_bind(b->base, ctl_accept_cb, b,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 16,
                                          (struct sockaddr *)&sin, sizeof(sin));
    if (!b->listener) {
        broker_log("cannot listen on 127.0.0.1: %s", strerror(errno));
        return -1;
    }
    if (getsockname(evconnlistener_get_fd(b->listener), (struct sockaddr *)&sin, &len)) {
        broker_log("getsockname: %s", strerror(errno));
        return -1;
    }
    *port = ntohs(sin.sin_port);
    return 0;
}

/* `errgate broker [--brokers N] [--topic NAME:PARTITIONS]...`
 * Returns the exit code: 0 after SIGINT/SIGTERM, 1 if the broker cannot
 * start, 2 on bad arguments. */
int eg_cmd_broker(int argc, char **argv) {
    broker_state b;
    topic_spec *topics;
    int brokers, ntopics, i, rc;
    unsigned port = 0;

    memset(&b, 0, sizeof(b));
    if (!(topics = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*topics)))) {
        broker_log("out of memory");
        return 1;
    }
    rc = parse_args(argc, argv, &brokers, topics, &ntopics);
    if (rc) {
        free(topics);
        return rc > 0 ? EG_EXIT_OK : EG_EXIT_USAGE;
    }

    /* A control client that hangs up early must not kill the broker. */
    signal(SIGPIPE, SIG_IGN);

    rc = 1;
    if (!(b.base = event_base_new())) {
        broker_log("cannot create the event loop");
        goto out;
    }
    if (broker_start_cluster(&b, brokers)) goto out;

    for (i = 0; i < ntopics; i++) {
        char name[EG_MAX_TOPIC_NAME + 1];
        rd_kafka_resp_err_t err;

        memcpy(name, topics[i].name, topics[i].name_len);
        name[topics[i].name_len] = '\0';
        if ((err = rd_kafka_mock_topic_create(b.mc, name, topics[i].partitions, 1))) {
            broker_log("cannot create topic %s: %s", name, rd_kafka_err2str(err));
            goto out;
        }
        broker_log("topic %s created with %d partition(s)", name, topics[i].partitions);
    }

    if (broker_start_control(&b, &port)) goto out;

    b.sigint = evsignal_new(b.base, SIGINT, on_signal, &b);
    b.sigterm = evsignal_new(b.base, SIGTERM, on_signal, &b);
    if (!b.sigint || !b.sigterm || evsignal_add(b.sigint, NULL) || evsignal_add(b.sigterm, NULL)) {
        broker_log("cannot install signal handlers");
        goto out;
    }

    printf("bootstrap.servers=%s\ncontrol=127.0.0.1:%u\n", rd_kafka_mock_cluster_bootstraps(b.mc), port);
    if (fflush(stdout) || ferror(stdout)) {
        broker_log("cannot write to stdout");
        goto out;
    }
    broker_log("%d broker(s) at %s, control at 127.0.0.1:%u", brokers, rd_kafka_mock_cluster_bootstraps(b.mc), port);

    if (event_base_dispatch(b.base) < 0) {
        broker_log("event loop failed");
        goto out;
    }
    rc = 0;

out:
    broker_shutdown(&b);
    free(topics);
    if (rc == 0) broker_log("stopped");
    return rc;
}
