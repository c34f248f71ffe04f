/* cmd_replay.c — `errgate replay`: send lane records back to a topic.
 *
 *   errgate replay --from LANE --to TOPIC (-b BOOTSTRAP | -c CONFIG)
 *   errgate replay -c CONFIG [--from LANE] [--to TOPIC] ...
 *       [--since DUR] [--until TIME] [--class C] [--code X] [--key K]
 *       [--where LUA_EXPR] [--dry-run] [--rate N] [--limit N]
 *       [--max-replays N] [--force] [--group G] [--allow-to PATTERN ...]
 *       [--state open|approved|...] [--include-resolved] [--transactional]
 *
 * The lane is read from the group's committed progress (or its start) up to
 * the end offsets seen at start; records that arrive meanwhile are left for
 * the next run. Each record passes the filters (all must hold; --since and
 * --until look at the lane record's timestamp, i.e. when it was
 * dead-lettered) and the loop guard (errgate.replays >= --max-replays, or a
 * value that is not a count, is refused unless --force), then goes to TOPIC
 * with key and value untouched and its headers kept, except retry.count=0,
 * replay.from-dlq=LANE/PARTITION/OFFSET, replay.timestamp and
 * errgate.replays+1 (eg_replay_headers). Partition: the record's
 * original.partition when TOPIC is its original.topic and has that
 * partition (the record goes home, next to its siblings), otherwise by key
 * with the murmur2 partitioner (Java clients' default, so a replayed record
 * lands where a Java producer would put the same key; random without a key).
 *
 * Durability: one idempotent producer, acks=all, every delivery report
 * checked. A record is finished when its delivery succeeded, or when it was
 * filtered out or refused; the group's offset moves over finished records
 * only (a contiguous prefix per partition, tracker.h), every 200 ms and at
 * the end, so an interrupted replay (SIGINT/SIGTERM: in-flight deliveries
 * are awaited, then committed) resumes where it stopped without sending
 * anything twice; after kill -9 only the deliveries of the last 200 ms can
 * be sent again (at-least-once, each carrying its errgate.id). The first
 * failed delivery stops the run: nothing past it is committed, the summary
 * says what failed, and the next run retries it. What was replayed is then
 * marked `replayed` in the lane's state topic (dlq.h).
 *
 * --transactional (a real Kafka cluster; refused on the embedded broker,
 * whose transactions are not real): the producer is transactional
 * (transactional.id errgate-replay.GROUP, so a rerun of the same command
 * fences a killed one and aborts what it left open) and each batch (about
 * TXN_EVERY_MS of records) is one transaction (ktxn.h) holding the
 * republished records, their `replayed` state records and the group's
 * progress (send_offsets_to_transaction with the lane reader's group
 * metadata). A kill -9 at any point leaves all three or none, so a
 * read_committed reader of the destination sees each record exactly once
 * across reruns. A failed delivery, state write or commit aborts the whole
 * batch and stops the run (exit 1); the next run replays the batch again.
 * Readers that read uncommitted still see the aborted copies.
 *
 * Defaults from a config (-c): without --from, the lanes are the config's
 * DLQ lanes (lanes.dlq expanded for each literal source topic; a regex
 * source cannot be expanded and is named in a note), replayed one after the
 * other, each with its own group and summary (several sources with a
 * shared lanes.dlq are one lane); the exit code is the worst of the runs.
 * Without --to, each record goes back to its own original topic: the one
 * the dialect it is read as states (dlq_origin.h: errgate's original.topic
 * for errgate's records, a Spring DLT record's kafka_dlt-original-topic
 * even when it also carries a copied original.topic). A record with none,
 * one whose original topic is the lane itself, or one whose original topic
 * does not exist is unroutable: not replayed, said on stderr, counted, and
 * not finished, so the group's progress stops before it (records replayed
 * after it are marked `replayed` and skipped by the rerun) and the run
 * exits 1.
 *
 * Where a replay may write (replay_dest.h, issue 28: the original topic is
 * bytes anyone producing the failed record could set). Internal topics are
 * refused always: `__*`, `*.state`, the audit topic, and with -c the
 * gateway's lanes and rungs and an inbox's own sources; a --to naming one
 * is a usage error. Without --to a record's original topic must also be
 * allowed: by --allow-to PATTERN (repeatable: a topic name with `*` for any
 * run, or a ^regex), else by the config's source.replay_allow, else its
 * default (the config's sources; for an inbox config the topics its
 * sources are DLQs of). A refused record is said on stderr, counted
 * (`refused-destination`) and not finished, like an unroutable one: the
 * group stays before it until it is allowed, replayed with --to, or
 * resolved (dlq resolve).
 *
 * Stubs. A record dead-lettered without its value (errgate.value-omitted,
 * refusal.h) is never republished as an empty record: its original is
 * fetched from original.topic/partition/offset (a consumer of its own,
 * assign and seek, up to FETCH_TIMEOUT_MS), and when that record is there
 * and is the one (its offset is original.offset and its item id, errgate.id
 * or coordinates, is the stub's errgate.id) it is replayed with its own key,
 * value and headers plus the stub's errgate headers. Otherwise the stub is
 * refused by name on stderr, counted (`stubs-refused`) and not finished.
 *
 * The default group is errgate-replay.LANE.TOPIC.HASH (TOPIC "original"
 * without --to), HASH covering the
 * filter options as typed: rerunning the same command resumes it, while a
 * replay with other filters is not blinded by records an earlier one
 * committed as filtered out. It is printed on the first line.
 *
 * Lifecycle. The states of the lane's items are read from LANE.state at
 * start (dlq.h). By default only open and approved items are replayed;
 * replayed, accepted-loss, closed and pending-approval items are skipped
 * and counted per state. --state S replays only items in state S (open or
 * approved; any other state needs --include-resolved); --include-resolved
 * is the explicit override that replays whatever state an item is in. A
 * skipped item whose state is final (resolved) is finished; one that can
 * still become replayable (pending-approval, or open/approved outside
 * --state) is not, so the group's progress stops before it and the same
 * command replays it once it has been approved.
 *
 * --where is compiled by errgate.where in a bounded Lua VM (luavm.h: the
 * policy sandbox, JIT off, 50 ms per record, 64 MiB). Because a bad
 * expression must be an error before anything is replayed, a --where run
 * reads its range twice: first evaluating the expression on every record
 * that passes the other filters (any error stops the command, exit 2),
 * then replaying with the remembered verdicts.
 *
 * Output: "replay LANE -> TOPIC, group G" first; with --dry-run an aligned
 * table of what would be replayed or refused, in lane partition and offset
 * order; then the counts. Exit 0 when
 * nothing failed, 1 when a delivery, state write or commit failed or the run
 * was interrupted, 2 for bad arguments, a missing topic or a bad --where. */
#include "cli.h"
#include "dlq.h"
#include "dlq_foreign.h"
#include "dlq_origin.h"
#include "headers.h"
#include "kcli.h"
#include "ktxn.h"
#include "provenance.h"
#include "protect.h"
#include "parse.h"
#include "record.h"
#include "refusal.h"
#include "replay_dest.h"
#include "text.h"
#include "tracker.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INFLIGHT 1000
#define COMMIT_EVERY_MS 200
#define TXN_EVERY_MS 1000 /* --transactional: a transaction's length */
#define TXN_STEP_MS 30000 /* --transactional: a step's timeout */
#define FETCH_TIMEOUT_MS 10000
#define MAX_ALLOW 64

typedef struct opts {
    eg_kcli k;
    const char *from, *to, *group, *where, *since, *until;
    eg_replay_filter f;
    int dry, force, include_resolved;
    int txn;                      /* --transactional */
    int four_eyes;                /* --four-eyes: an approved item is never replayed by its approver */
    int state;                    /* --state: the only state replayed, or -1 */
    int home;                     /* no --to: each record goes to its original topic */
    const char *allow[MAX_ALLOW]; /* --allow-to patterns (borrowed from argv) */
    int nallow;
    eg_config *cfg; /* -c: the config (owned), for the internal topics and the default allow-list */
    double rate;
    long limit, max_replays;
} opts;

/* One produce in flight: a replayed record or its state write. */
typedef struct pending {
    int state;    /* 1: a state write */
    int pidx;     /* lane partition index */
    uint64_t seq; /* tracker sequence */
    int64_t lane_off;
    char to[EG_TOPIC_NAME_MAX + 1]; /* the topic it went to */
    char id[];                      /* item id */
} pending;

/* A --dry-run table row, kept until the end to be printed in lane order. */
typedef struct drow {
    int32_t partition;
    int64_t offset;
    char *cell[7];
} drow;

typedef struct replay {
    const opts *o;
    eg_lread r;
    rd_kafka_t *prod;
    eg_tracker *trk;         /* per lane partition */
    int64_t *committed;      /* per partition: the offset last sent in a commit (or the start) */
    unsigned char **verdict; /* --where results per partition, bit (offset - start) */
    int64_t *start0;         /* the starts the verdicts are indexed from */
    int target_parts;        /* of --to */
    struct {
        char topic[EG_TOPIC_NAME_MAX + 1];
        int parts; /* 0: does not exist */
    } * homes;     /* no --to: the original topics asked about */
    size_t nhomes;
    char state_topic[512];
    char by[300];
    long four_eyes_refused; /* --four-eyes: approved items left for someone else */
    long read, matched, replayed, refused, failed, state_failed, commit_failed, unroutable, dest_refused, stub_refused,
        stubs_fetched, protected_refused, decrypted;
    eg_prot_keys keys; /* decrypts encrypted lane values (n == 0: no key) */
    rd_kafka_t *fetch; /* fetches the originals of stubs (made on first use) */
    long inflight, state_inflight;
    int abort;   /* a delivery failed: read no further */
    int closing; /* teardown: purged deliveries are not counted */
    int64_t last_commit_ms;
    struct {                      /* --transactional */
        int open;                 /* a transaction is open */
        int dead;                 /* fenced or broken: no transaction step again */
        long replayed;            /* delivered in the open transaction (counted replayed at its commit) */
        long aborted;             /* records whose transaction aborted */
        long commits;             /* transactions committed */
        int64_t ms_total, ms_max; /* of the send_offsets + commit steps */
    } txn;
    double next_due;         /* --rate: when the next record may go, ms */
    long skipped[EG_DLQ__N]; /* per state: left alone because of it */
    eg_dlq_states states;    /* of the lane's items, read at start */
    drow *rows;              /* --dry-run */
    size_t nrows;
    eg_where *where; /* --where */
} replay;

/* Prints the usage text of `errgate replay` on stdout. */
static void usage(void) {
    printf("usage: errgate replay --from LANE --to TOPIC (-b BOOTSTRAP | -c CONFIG)\n"
           "       errgate replay -c CONFIG [--from LANE] [--to TOPIC]\n"
           "         [--since DUR] [--until TIME] [--class C] [--code X] [--key K] [--where LUA_EXPR]\n"
           "         [--dry-run] [--rate N] [--limit N] [--max-replays N] [--force] [--group G]\n"
           "         [--state S] [--include-resolved] [--four-eyes] [--allow-to PATTERN ...]\n"
           "         [--transactional]\n"
           "\n"
           "  --from LANE        the lane topic to read (a DLQ, quarantine or rung topic);\n"
           "                     also spelled --from-topic. Default with -c: each of the\n"
           "                     config's DLQ lanes in turn\n"
           "  --to TOPIC         the topic to republish to (must exist); also --to-topic.\n"
           "                     Default with -c: each record's own original topic\n"
           "  -b, -c             broker address, or a gateway config to take the kafka\n"
           "                     settings from (else $ERRGATE_BOOTSTRAP)\n"
           "  --since DUR        only records written in the last DUR (90s, 15m, 2h, 7d)\n"
           "  --until TIME       only records written before TIME (RFC 3339 or epoch ms)\n"
           "  --class, --code    only records with this error.class / error.code\n"
           "                     (--error-class is --class)\n"
           "  --key K            only records with this key\n"
           "  --where LUA_EXPR   only records for which the sandboxed expression is true\n"
           "                     (headers, topic, partition, offset, timestamp, key)\n"
           "  --dry-run          print what would be republished, publish nothing\n"
           "  --rate N           at most N records per second\n"
           "  --limit N          at most N records\n"
           "  --max-replays N    refuse records already replayed N times (default 3)\n"
           "  --force            replay them anyway\n"
           "  --state S          only items in lifecycle state S (open, approved; others need\n"
           "                     --include-resolved). Default: open and approved items; replayed,\n"
           "                     accepted-loss, closed and pending-approval ones are skipped\n"
           "  --include-resolved replay items whatever their state\n"
           "  --protect-key-file F  decrypts encrypted lane values (errgate.protect: encrypt); default\n"
           "                     $ERRGATE_PROTECT_KEY_FILE, then the config's lanes.protect.key_file. A value\n"
           "                     it cannot decrypt, and a pointer or masked one whose original the source\n"
           "                     no longer holds, is refused by name and left in the lane\n"
           "  --four-eyes        an approved item is not replayed by its approver (its approval's by,\n"
           "                     against user@host; also the config's replay_four_eyes): left for another\n"
           "                     person, counted (four-eyes-refused), exit 1\n"
           "  --group G          the consumer group that keeps the progress\n"
           "  --transactional    each batch's records, their replayed states and the progress in one\n"
           "                     Kafka transaction: exactly once for read_committed readers, also\n"
           "                     across a kill -9 and a rerun (a Kafka cluster; not the embedded broker)\n"
           "  --allow-to PATTERN without --to: where records may go back to (a topic name,\n"
           "                     * for any run, or a ^regex; repeatable). Default: the config's\n"
           "                     source.replay_allow, else its sources (an inbox's: the topics\n"
           "                     its sources are DLQs of). __*, *.state, the audit topic and the\n"
           "                     gateway's lanes are refused always\n"
           "\n"
           "Prints matched, replayed, refused, failed, and the items skipped per state. Exit 0 when\n"
           "nothing failed.\n");
}

/* One line naming what is wrong on stderr; returns the exit code 2. */
static int usage_error(const char *why) { return eg_usage_error("replay", "%s", why); }

/* Parses argv into o. Returns 0, -1 after printing the help, or the exit
 * code after printing why. */
static int parse(int argc, char **argv, opts *o) {
    memset(o, 0, sizeof *o);
    o->max_replays = EG_REPLAY_MAX_REPLAYS;
    o->limit = -1;
    o->state = -1;
    const char *state = NULL;
    char why[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int k = eg_dlq_conn_opt(&o->k, argc, argv, &i, why, sizeof why);
        if (k < 0) return usage_error(why);
        if (k > 0) continue;
        if (eg_is_help(a)) {
            usage();
            return -1;
        }
        if (!strcmp(a, "--dry-run")) {
            o->dry = 1;
            continue;
        }
        if (!strcmp(a, "--force")) {
            o->force = 1;
            continue;
        }
        if (!strcmp(a, "--include-resolved")) {
            o->include_resolved = 1;
            continue;
        }
        if (!strcmp(a, "--four-eyes")) {
            o->four_eyes = 1;
            continue;
        }
        if (!strcmp(a, "--transactional")) {
            o->txn = 1;
            continue;
        }
        /* the names other DLQ tools use for the same options */
        static const char *const alias[][2] = {
            {"--from-topic", "--from"}, {"--to-topic", "--to"}, {"--error-class", "--class"}, {NULL, NULL}};
        for (int j = 0; alias[j][0]; j++)
            if (!strcmp(a, alias[j][0])) a = alias[j][1];
        static const char *const valued[] = {"--from",  "--to",          "--since", "--until",    "--class",
                                             "--code",  "--key",         "--where", "--rate",     "--limit",
                                             "--group", "--max-replays", "--state", "--allow-to", NULL};
        int known = 0;
        for (const char *const *v = valued; *v; v++) known |= !strcmp(a, *v);
        if (!known) {
            snprintf(why, sizeof why, "unknown option '%s'%s", a, eg_dash_hint(a));
            return usage_error(why);
        }
        if (i + 1 >= argc) {
            snprintf(why, sizeof why, "%s needs a value", a);
            return usage_error(why);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--from")) o->from = v;
        else if (!strcmp(a, "--to")) o->to = v;
        else if (!strcmp(a, "--class")) o->f.klass = v;
        else if (!strcmp(a, "--code")) o->f.code = v;
        else if (!strcmp(a, "--key")) o->f.key = v;
        else if (!strcmp(a, "--where")) o->where = v;
        else if (!strcmp(a, "--group")) o->group = v;
        else if (!strcmp(a, "--allow-to")) {
            if (!eg_topic_pattern_ok(v) || o->nallow >= MAX_ALLOW) {
                snprintf(why, sizeof why,
                         "--allow-to '%s' is not a topic pattern (a topic name with * for any run, or a ^regex; at "
                         "most %d)",
                         v, MAX_ALLOW);
                return usage_error(why);
            }
            o->allow[o->nallow++] = v;
        } else if (!strcmp(a, "--state")) {
            if ((o->state = eg_dlq_state_parse(v)) < 0) {
                snprintf(why, sizeof why,
                         "--state '%s' is not one of open, pending-approval, approved, replayed, accepted-loss, "
                         "closed",
                         v);
                return usage_error(why);
            }
            state = v;
        } else if (!strcmp(a, "--since")) {
            int64_t d;
            if (eg_parse_duration_ms(v, &d) < 0 || d == 0) {
                snprintf(why, sizeof why, "--since '%s' is not a duration (e.g. 90s, 15m, 1h, 2d)", v);
                return usage_error(why);
            }
            o->since = v;
            o->f.since_ms = eg_wall_ms() - d;
        } else if (!strcmp(a, "--until")) {
            if (eg_parse_time_ms(v, &o->f.until_ms) < 0 || o->f.until_ms <= 0) {
                snprintf(why, sizeof why, "--until '%s' is not an RFC 3339 time or ms since the epoch", v);
                return usage_error(why);
            }
            o->until = v;
        } else if (!strcmp(a, "--rate")) {
            char *end = NULL;
            o->rate = strtod(v, &end);
            if (end == v || *end || !(o->rate > 0) || o->rate > 1e7) {
                snprintf(why, sizeof why, "--rate '%s' is not a positive number of records per second", v);
                return usage_error(why);
            }
        } else if (!strcmp(a, "--limit") || !strcmp(a, "--max-replays")) {
            long n;
            if (eg_parse_count(v, &n) < 0) {
                snprintf(why, sizeof why, "%s '%s' is not a count", a, v);
                return usage_error(why);
            }
            if (!strcmp(a, "--limit")) o->limit = n;
            else o->max_replays = n;
        }
    }
    if (!o->from && !o->k.config) return usage_error("--from LANE is required (or -c CONFIG: its DLQ lanes)");
    if (!o->to && !o->k.config)
        return usage_error("--to TOPIC is required (or -c CONFIG: each record's original topic)");
    o->home = !o->to;
    if (o->from && o->to && !strcmp(o->from, o->to))
        return usage_error("--to must differ from --from (that would replay the lane into itself)");
    if (o->where && !*o->where) return usage_error("--where: the expression is empty");
    if (o->f.klass && !*o->f.klass) return usage_error("--class is empty");
    if (o->f.code && !*o->f.code) return usage_error("--code is empty");
    if (state && o->state != EG_DLQ_OPEN && o->state != EG_DLQ_APPROVED && !o->include_resolved) {
        snprintf(why, sizeof why,
                 "--state %s needs --include-resolved (only open and approved items are replayed "
                 "without it)",
                 state);
        return usage_error(why);
    }
    return 0;
}

/* The default progress group (see the file comment) into out. */
static void default_group(const opts *o, char *out, size_t outlen) {
    const char *parts[] = {o->f.klass,
                           o->f.code,
                           o->f.key,
                           o->where,
                           o->since,
                           o->until,
                           o->state >= 0 ? eg_dlq_status_name((eg_dlq_status)o->state) : NULL,
                           o->include_resolved ? "all" : NULL};
    char buf[8192];
    size_t len = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (i >= 6 && !parts[i]) continue; /* the state options joined later: unset, the hash is as before */
        int n = snprintf(buf + len, sizeof buf - len, "%s%c", parts[i] ? parts[i] : "", 0x1f);
        if (n < 0 || (size_t)n >= sizeof buf - len) break;
        len += (size_t)n;
    }
    snprintf(out, outlen, "errgate-replay.%s.%s.%08x", o->from, o->home ? "original" : o->to,
             (unsigned)(eg_hash64(buf, len) & 0xffffffffu));
}

/* ---- per record ----------------------------------------------------------- */

static int64_t ts_of(const rd_kafka_message_t *m) {
    rd_kafka_timestamp_type_t tt;
    return rd_kafka_message_timestamp(m, &tt);
}

/* 1 when m passes the C filters. */
static int passes(const replay *rp, const rd_kafka_message_t *m) {
    char klass[256], code[256];
    eg_lane_view v = {.ts = ts_of(m), .key = m->key, .keylen = m->key_len};
    if (eg_header_str(m, EG_H_CLASS, klass, sizeof klass) == 0) v.klass = klass;
    if (eg_header_str(m, EG_H_CODE, code, sizeof code) == 0) v.code = code;
    else if (rp->o->f.code && (eg_dlq_foreign_fill(m, EG_H_CODE, code, sizeof code), code[0])) v.code = code;
    return eg_replay_filter_match(&rp->o->f, &v);
}

/* First pass of a --where run: evaluates the expression on every record of
 * the range that passes the C filters and remembers the verdicts. Returns 0,
 * or -1 with err naming the record. */
static int where_pass(replay *rp, char *err, size_t errlen) {
    eg_lread *r = &rp->r;
    rp->verdict = eg_xcalloc((size_t)r->n, sizeof *rp->verdict);
    rp->start0 = eg_xcalloc((size_t)r->n, sizeof *rp->start0);
    for (int i = 0; i < r->n; i++) {
        rp->start0[i] = r->start[i];
        int64_t span = r->hi[i] > r->start[i] ? r->hi[i] - r->start[i] : 0;
        rp->verdict[i] = eg_xcalloc((size_t)(span / 8 + 1), 1);
    }
    if (eg_lread_start(r, 0, err, errlen) < 0) return -1;
    rd_kafka_message_t *m;
    int rc;
    char e[512];
    while (!eg_dlq_stop && (rc = eg_lread_next(r, 200, &m, err, errlen)) != 2) {
        if (rc < 0) return -1;
        if (rc == 0) continue;
        int i = eg_lread_index(r, m->partition), v = 0;
        if (passes(rp, m)) v = eg_where_eval(rp->where, m, e, sizeof e);
        if (v < 0) {
            snprintf(err, errlen, "--where failed on %s/%d/%lld: %s", r->topic, (int)m->partition, (long long)m->offset,
                     e);
            rd_kafka_message_destroy(m);
            return -1;
        }
        int64_t bit = m->offset - rp->start0[i];
        if (v && bit >= 0) rp->verdict[i][bit / 8] |= (unsigned char)(1u << (bit % 8));
        rd_kafka_message_destroy(m);
    }
    if (eg_dlq_stop) {
        snprintf(err, errlen, "interrupted while evaluating --where; nothing was replayed");
        return -1;
    }
    return 0;
}

/* 1 when --where selected the record at offset off of partition index i
 * (the verdicts of the first pass, one bit per offset from start0). */
static int where_verdict(const replay *rp, int i, int64_t off) {
    int64_t bit = off - rp->start0[i];
    return bit >= 0 && (rp->verdict[i][bit / 8] >> (bit % 8)) & 1;
}

/* Commits the finished prefix of the partitions that moved: async, those
 * that moved since the last commit; sync (the final one, retried), every
 * partition that moved at all, so that an async commit that failed
 * unnoticed is made good. */
static void txn_commit(replay *rp);
static void commit(replay *rp, int sync) {
    if (rp->o->txn) {
        txn_commit(rp);
        return;
    }
    eg_lread *r = &rp->r;
    int64_t *off = eg_xcalloc((size_t)r->n, sizeof *off);
    int any = 0;
    for (int i = 0; i < r->n; i++) {
        int64_t cp = eg_tracker_commit_point(&rp->trk[i]);
        off[i] = cp > (sync ? r->start[i] : rp->committed[i]) ? cp : -1;
        any |= off[i] >= 0;
    }
    char err[512];
    for (int attempt = 0; any && attempt < (sync ? 3 : 1); attempt++) {
        if (eg_lread_commit(r, off, !sync, err, sizeof err) == 0) {
            for (int i = 0; i < r->n; i++)
                if (off[i] >= 0) rp->committed[i] = off[i];
            any = 0;
        } else if (sync && attempt == 2) {
            fprintf(stderr, "errgate replay: %s\n", err);
            rp->commit_failed++;
        }
    }
    free(off);
    rp->last_commit_ms = eg_now_ms();
}

/* Commits (async) when COMMIT_EVERY_MS passed since the last commit; never
 * in a dry run. */
static void maybe_commit(replay *rp) {
    if (!rp->o->dry && eg_now_ms() - rp->last_commit_ms >= (rp->o->txn ? TXN_EVERY_MS : COMMIT_EVERY_MS)) commit(rp, 0);
}

/* --transactional: opens a transaction unless one is open. Returns 0, or
 * -1 after saying why (the run stops: rp->abort). */
static int txn_ensure(replay *rp) {
    if (rp->txn.open) return 0;
    char err[600] = "the producer was fenced or broke earlier";
    eg_ktxn_result res = rp->txn.dead ? EG_KTXN_FATAL : eg_ktxn_begin(rp->prod, err, sizeof err);
    if (res == EG_KTXN_OK) {
        rp->txn.open = 1;
        return 0;
    }
    fprintf(stderr, "errgate replay: --transactional: %s\n", err);
    if (res == EG_KTXN_FATAL) rp->txn.dead = 1;
    rp->commit_failed++;
    rp->abort = 1;
    return -1;
}

/* --transactional: ends the open batch. Waits for its deliveries (and the
 * state writes they queue), then commits the records with the progress
 * (the trackers' commit points that moved) in the transaction, or aborts it
 * when a delivery failed or stayed unreported: its records count as aborted
 * and the run stops (rp->abort), the progress unmoved. A batch of filtered
 * records only (no transaction open, progress moved) is a transaction of
 * offsets alone. */
static void txn_commit(replay *rp) {
    rp->last_commit_ms = eg_now_ms();
    if (rp->txn.dead) return;
    eg_lread *r = &rp->r;
    int64_t until = eg_now_ms() + 60000;
    while ((rp->inflight > 0 || rp->state_inflight > 0) && eg_now_ms() < until) rd_kafka_poll(rp->prod, 20);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->n);
    for (int i = 0; i < r->n; i++) {
        int64_t cp = eg_tracker_commit_point(&rp->trk[i]);
        if (cp > rp->committed[i]) rd_kafka_topic_partition_list_add(l, r->topic, r->part[i])->offset = cp;
    }
    if (!rp->txn.open && (l->cnt == 0 || rp->abort || txn_ensure(rp) != 0)) {
        rd_kafka_topic_partition_list_destroy(l);
        return;
    }
    char err[1200] = "";
    eg_ktxn_result res;
    int64_t t0 = eg_now_ms();
    if (rp->inflight > 0 || rp->state_inflight > 0 || rp->abort) {
        snprintf(err, sizeof err, "%s", rp->abort ? "a delivery failed" : "deliveries unconfirmed after 60 s");
        size_t n = strlen(err);
        res = eg_ktxn_abort(rp->prod, TXN_STEP_MS, err + n + 2, sizeof err - n - 2) == EG_KTXN_FATAL ? EG_KTXN_FATAL
                                                                                                     : EG_KTXN_ABORTED;
        if (err[n + 2]) memcpy(err + n, "; ", 2);
    } else {
        res = eg_ktxn_commit(rp->prod, r->rk, l, TXN_STEP_MS, err, sizeof err);
    }
    int64_t ms = eg_now_ms() - t0;
    rp->txn.open = 0;
    if (res == EG_KTXN_OK) {
        for (int i = 0; i < l->cnt; i++) {
            int at = eg_lread_index(r, l->elems[i].partition);
            if (at >= 0) rp->committed[at] = l->elems[i].offset;
        }
        rp->replayed += rp->txn.replayed;
        rp->txn.commits++;
        rp->txn.ms_total += ms;
        if (ms > rp->txn.ms_max) rp->txn.ms_max = ms;
    } else {
        fprintf(stderr,
                "errgate replay: --transactional: transaction %s: %s; its %ld records are not replayed, the "
                "progress did not move%s\n",
                res == EG_KTXN_FATAL ? "failed for good" : "aborted", err, rp->txn.replayed,
                res == EG_KTXN_FATAL ? " (fenced: another replay with the same group runs?)" : "; run again");
        rp->txn.aborted += rp->txn.replayed;
        if (res == EG_KTXN_FATAL) rp->txn.dead = 1;
        rp->commit_failed++;
        rp->abort = 1;
    }
    rp->txn.replayed = 0;
    rd_kafka_topic_partition_list_destroy(l);
}

/* Queues the `replayed` state write of an item. */
static void mark_replayed(replay *rp, const pending *pd) {
    char reason[1200], json[4096];
    snprintf(reason, sizeof reason, "replayed to %s from %s/%d/%lld", pd->to, rp->o->from, (int)rp->r.part[pd->pidx],
             (long long)pd->lane_off);
    int64_t now = eg_wall_ms();
    int n = eg_dlq_state_json(EG_DLQ_REPLAYED, reason, now, rp->by, -1, json, sizeof json);
    size_t idlen = strlen(pd->id);
    pending *sp = eg_xmalloc(sizeof *sp + idlen + 1);
    *sp = (pending){.state = 1, .pidx = pd->pidx, .lane_off = pd->lane_off};
    memcpy(sp->to, pd->to, sizeof sp->to);
    memcpy(sp->id, pd->id, idlen + 1);
    rd_kafka_headers_t *h = n < 0 ? NULL : eg_dlq_state_headers(&rp->states.key, sp->id, json, (size_t)n);
    rd_kafka_resp_err_t e =
        n < 0
            ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
            : rd_kafka_producev(rp->prod, RD_KAFKA_V_TOPIC(rp->state_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_KEY(sp->id, idlen), RD_KAFKA_V_VALUE(json, (size_t)n), RD_KAFKA_V_HEADERS(h),
                                RD_KAFKA_V_TIMESTAMP(now), RD_KAFKA_V_OPAQUE(sp), RD_KAFKA_V_END);
    if (e && h) rd_kafka_headers_destroy(h); /* the message's once queued */
    if (e) {
        fprintf(stderr, "errgate replay: %s: marking %s replayed failed: %s\n", rp->state_topic, sp->id,
                rd_kafka_err2str(e));
        rp->state_failed++;
        free(sp);
        return;
    }
    rp->state_inflight++;
}

/* Delivery report of a replayed record or of a state write (served by
 * rd_kafka_poll on the command's thread): a replayed record that arrived
 * is finished in its tracker and marked replayed; a failed one stops the
 * replay (nothing past it is committed); a failed state write is counted.
 * Frees the pending entry. While closing, only the counts are kept. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    replay *rp = opaque;
    pending *pd = m->_private;
    if (rp->closing) {
        rp->inflight -= !pd->state;
        rp->state_inflight -= pd->state;
        free(pd);
        return;
    }
    if (pd->state) {
        rp->state_inflight--;
        if (m->err) {
            fprintf(stderr, "errgate replay: %s: marking %s replayed failed: %s\n", rp->state_topic, pd->id,
                    rd_kafka_err2str(m->err));
            rp->state_failed++;
        }
        free(pd);
        return;
    }
    rp->inflight--;
    if (m->err && rp->o->txn &&
        (m->err == RD_KAFKA_RESP_ERR__PURGE_QUEUE || m->err == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT)) {
        rp->txn.aborted++; /* its transaction was aborted before it was reported */
    } else if (m->err) {
        fprintf(stderr, "errgate replay: %s/%d/%lld -> %s: delivery failed: %s\n", rp->o->from,
                (int)rp->r.part[pd->pidx], (long long)pd->lane_off, pd->to, rd_kafka_err2str(m->err));
        rp->failed++;
        rp->abort = 1;
    } else {
        if (rp->o->txn) rp->txn.replayed++; /* replayed once its transaction commits */
        else rp->replayed++;
        eg_tracker_finish(&rp->trk[pd->pidx], pd->seq);
        mark_replayed(rp, pd);
    }
    free(pd);
}

/* Waits until the next record may go out under --rate. */
static void pace(replay *rp) {
    if (rp->o->rate <= 0) return;
    double now = (double)eg_now_ms();
    if (rp->next_due == 0) rp->next_due = now;
    while (!eg_dlq_stop && (now = (double)eg_now_ms()) < rp->next_due) {
        int wait = (int)(rp->next_due - now) + 1;
        rd_kafka_poll(rp->prod, wait > 100 ? 100 : wait);
        maybe_commit(rp);
    }
    rp->next_due = (rp->next_due > now ? rp->next_due : now) + 1000.0 / rp->o->rate;
}

/* The original topic and partition m states, as the dialect it is read as
 * states them (dlq_origin.h: never a copied header of another dialect),
 * into topic ("" when none) and *part (-1 when none). An original.topic that
 * is no topic name is copied as it is, for the message that names it. */
static void origin_of(const rd_kafka_message_t *m, char *topic, size_t topiclen, long *part) {
    rd_kafka_headers_t *h = NULL;
    eg_dlq_origin o;
    topic[0] = '\0';
    *part = -1;
    if (rd_kafka_message_headers(m, &h) != 0) return;
    const char *d = eg_dlq_dialect(h, "auto");
    if (eg_dlq_origin_read(h, &o) == 0) {
        eg_strlcpy(topic, o.topic, topiclen);
        *part = o.partition;
    } else if (d && !strcmp(d, "errgate") && eg_header_str(m, EG_H_ORIG_TOPIC, topic, topiclen) < 0) {
        topic[0] = '\0';
    }
}

/* The partition count of `to` (without --to: asked once per original
 * topic and remembered), 0 when it does not exist, -1 when the cluster
 * cannot tell (err filled). */
static int parts_of(replay *rp, const char *to, char *err, size_t errlen) {
    if (!rp->o->home) return rp->target_parts;
    for (size_t i = 0; i < rp->nhomes; i++)
        if (!strcmp(rp->homes[i].topic, to)) return rp->homes[i].parts;
    int n = eg_topic_partitions(rp->r.rk, to, err, errlen);
    if (n < 0) return -1;
    rp->homes = eg_xrealloc(rp->homes, (rp->nhomes + 1) * sizeof *rp->homes);
    eg_strlcpy(rp->homes[rp->nhomes].topic, to, sizeof rp->homes[rp->nhomes].topic);
    rp->homes[rp->nhomes++].parts = n;
    return n;
}

/* Where m goes: --to, or (without it) its original topic, into to. Returns
 * the partition (its original one when to is its original topic and has
 * that partition, see the file comment; else RD_KAFKA_PARTITION_UA), -2
 * when m is unroutable, or -3 when its original topic is refused (internal,
 * or not allowed: replay_dest.h) (why filled). */
static int32_t destination(replay *rp, const rd_kafka_message_t *m, char *to, size_t tolen, char *why, size_t whylen) {
    char orig[512], err[512];
    long p;
    origin_of(m, orig, sizeof orig, &p);
    eg_strlcpy(to, rp->o->home ? orig : rp->o->to, tolen);
    if (rp->o->home && !orig[0]) {
        snprintf(why, whylen, "no original topic (neither original.topic nor a DLQ dialect's); give --to");
        return -2;
    }
    if (rp->o->home && (!eg_dlq_topic_ok(orig, strlen(orig)) || !strcmp(orig, rp->o->from))) {
        char shown[300];
        eg_printable(orig, strlen(orig), shown, sizeof shown);
        snprintf(why, whylen, "original topic '%s' is %s; give --to", shown,
                 strcmp(orig, rp->o->from) ? "not a topic name" : "the lane itself");
        return -2;
    }
    char rule[200];
    if (rp->o->home && eg_replay_internal(rp->o->cfg, orig, rule, sizeof rule)) {
        snprintf(why, whylen, "original topic %s is %s: never replayed to", orig, rule);
        return -3;
    }
    int parts = parts_of(rp, to, err, sizeof err);
    if (parts <= 0) {
        snprintf(why, whylen, "original topic %s %s", to, parts == 0 ? "does not exist (create it first)" : err);
        return -2;
    }
    int allowed = 0;
    for (int i = 0; i < rp->o->nallow; i++) allowed |= eg_topic_match(rp->o->allow[i], orig);
    if (rp->o->home && !allowed && (rp->o->nallow || !rp->o->cfg || !eg_replay_allowed(rp->o->cfg, orig))) {
        if (rp->o->nallow || !rp->o->cfg) snprintf(rule, sizeof rule, "--allow-to");
        else eg_replay_allow_text(rp->o->cfg, rule, sizeof rule);
        snprintf(why, whylen, "original topic %s is not allowed (%s); give --allow-to or --to", orig, rule);
        return -3;
    }
    return !strcmp(orig, to) && p >= 0 && p < parts ? (int32_t)p : RD_KAFKA_PARTITION_UA;
}

/* The record at topic/partition/offset, fetched by rp's own group-less
 * consumer (assign and seek; made on first use), or NULL with why when it
 * is not there within FETCH_TIMEOUT_MS (out of retention, compacted away,
 * no such topic). The caller destroys it. */
static rd_kafka_message_t *fetch_at(replay *rp, const char *topic, int32_t partition, int64_t offset, char *why,
                                    size_t whylen) {
    char err[512];
    if (!rp->fetch) {
        rd_kafka_conf_t *conf = eg_kcli_conf(&rp->o->k, "errgate-replay-fetch", err, sizeof err);
        /* assign needs a group.id in librdkafka 2.0.2; nothing joins or commits it */
        if (conf && (rd_kafka_conf_set(conf, "auto.offset.reset", "error", err, sizeof err) != RD_KAFKA_CONF_OK ||
                     rd_kafka_conf_set(conf, "group.id", "errgate-replay-fetch", err, sizeof err) != RD_KAFKA_CONF_OK ||
                     rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err) != RD_KAFKA_CONF_OK)) {
            rd_kafka_conf_destroy(conf);
            conf = NULL;
        }
        if (conf && !(rp->fetch = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err))) rd_kafka_conf_destroy(conf);
        if (!rp->fetch) {
            snprintf(why, whylen, "cannot make a consumer to fetch it: %s", err);
            return NULL;
        }
    }
    rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(tp, topic, partition)->offset = offset;
    rd_kafka_resp_err_t e = rd_kafka_assign(rp->fetch, tp);
    rd_kafka_topic_partition_list_destroy(tp);
    if (e) {
        snprintf(why, whylen, "cannot fetch %s/%d/%lld: %s", topic, (int)partition, (long long)offset,
                 rd_kafka_err2str(e));
        return NULL;
    }
    rd_kafka_message_t *got = NULL;
    int64_t until = eg_now_ms() + FETCH_TIMEOUT_MS;
    snprintf(why, whylen, "the original %s/%d/%lld was not fetched within %d s", topic, (int)partition,
             (long long)offset, FETCH_TIMEOUT_MS / 1000);
    while (!got && !eg_dlq_stop && eg_now_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rp->fetch, 100);
        if (!m) continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            continue;
        }
        if (m->err) {
            snprintf(why, whylen, "the original %s/%d/%lld is gone: %s", topic, (int)partition, (long long)offset,
                     rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            break;
        }
        if (m->offset != offset || m->partition != partition) {
            snprintf(why, whylen, "the original %s/%d/%lld is gone (the log goes on at offset %lld)", topic,
                     (int)partition, (long long)offset, (long long)m->offset);
            rd_kafka_message_destroy(m);
            break;
        }
        got = m;
    }
    rd_kafka_assign(rp->fetch, NULL);
    return got;
}

/* A stub's original (see the file comment): fetched at the stub's
 * original.topic/partition/offset, and only when it is the record the stub
 * stands for (its item id equals the stub's, id). NULL with why otherwise. */
static rd_kafka_message_t *fetch_original(replay *rp, const rd_kafka_message_t *stub, const char *id, char *why,
                                          size_t whylen) {
    char topic[EG_TOPIC_NAME_MAX + 1];
    int64_t part = eg_header_uint(stub, EG_H_ORIG_PARTITION), off = eg_header_uint(stub, EG_H_ORIG_OFFSET);
    if (eg_header_str(stub, EG_H_ORIG_TOPIC, topic, sizeof topic) < 0 || !eg_dlq_topic_ok(topic, strlen(topic)) ||
        part < 0 || part > INT32_MAX || off < 0) {
        snprintf(why, whylen, "and it states no original.topic, .partition and .offset to fetch it from");
        return NULL;
    }
    rd_kafka_message_t *m = fetch_at(rp, topic, (int32_t)part, off, why, whylen);
    if (!m) return NULL;
    char got[EG_ID_MAX + 1];
    eg_dlq_item_id(m, got, sizeof got);
    if (strcmp(got, id) != 0) {
        char shown[400];
        eg_printable(got, strlen(got), shown, sizeof shown);
        snprintf(why, whylen, "and the record at %s/%lld/%lld is another (errgate.id %s)", topic, (long long)part,
                 (long long)off, shown);
        rd_kafka_message_destroy(m);
        return NULL;
    }
    return m;
}

/* The headers a fetched stub is replayed with: its original's own, then the
 * stub's errgate headers (the last of a name wins) without the omission
 * markers. The caller destroys them. */
static rd_kafka_headers_t *stub_headers(const rd_kafka_message_t *orig, const rd_kafka_headers_t *stub) {
    rd_kafka_headers_t *oh = NULL;
    rd_kafka_message_headers(orig, &oh);
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    const char *name;
    const void *v;
    size_t n;
    for (size_t i = 0; oh && rd_kafka_header_get_all(oh, i, &name, &v, &n) == 0; i++)
        rd_kafka_header_add(h, name, -1, v, v ? (ssize_t)n : -1);
    for (size_t i = 0; stub && rd_kafka_header_get_all(stub, i, &name, &v, &n) == 0; i++)
        if (strcmp(name, EG_H_VALUE_OMITTED) && strcmp(name, EG_H_HEADERS_OMITTED) && strcmp(name, EG_H_KEY_OMITTED))
            rd_kafka_header_add(h, name, -1, v, v ? (ssize_t)n : -1);
    return h;
}

/* Adds the --dry-run table row of a matched record; skip names why it is
 * not replayed (refused, or the state that skips it), NULL when it is. */
static void dry_row(replay *rp, const rd_kafka_message_t *m, const char *lane, const char *nrep, const char *dest,
                    int32_t p, const char *skip) {
    char ot[300], op[32], oo[32], orig[400], klass[128], code[128], to[300];
    rd_kafka_headers_t *h = NULL;
    eg_dlq_origin og;
    if (rd_kafka_message_headers(m, &h) == 0 && eg_dlq_origin_read(h, &og) == 0 && strcmp(og.format, "errgate")) {
        /* read as a foreign dialect: its origin, not a copied original.* (dlq_origin.h) */
        eg_strlcpy(ot, og.topic, sizeof ot);
        snprintf(op, sizeof op, og.partition >= 0 ? "%lld" : "-", (long long)og.partition);
        snprintf(oo, sizeof oo, og.offset >= 0 ? "%lld" : "-", (long long)og.offset);
    } else {
        eg_dlq_header_text(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
        eg_dlq_header_text(m, EG_H_ORIG_PARTITION, op, sizeof op);
        eg_dlq_header_text(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
    }
    eg_dlq_header_text(m, EG_H_CLASS, klass, sizeof klass);
    eg_dlq_header_text(m, EG_H_CODE, code, sizeof code);
    eg_dlq_foreign_fill(m, EG_H_CODE, code, sizeof code);
    char *const cols[] = {ot, op, oo, klass, code}; /* table cells: nothing forges another */
    const size_t caps[] = {sizeof ot, sizeof op, sizeof oo, sizeof klass, sizeof code};
    for (size_t i = 0; i < 5; i++) eg_dlq_column(cols[i], caps[i]);
    snprintf(orig, sizeof orig, "%s/%s/%s", ot, op, oo);
    const char *sep = rp->o->home ? " " : "";
    if (!rp->o->home) dest = "";
    if (p >= 0) snprintf(to, sizeof to, "%s%s%d", dest, rp->o->home ? "/" : "", (int)p);
    else snprintf(to, sizeof to, "%s%sby key", dest, sep);
    char verdict[64];
    snprintf(verdict, sizeof verdict, "%s%s", skip && strcmp(skip, "refused") ? "skip: " : "", skip ? skip : "replay");
    const char *row[] = {lane, orig, klass, code, nrep, skip ? "-" : to, verdict};
    rp->rows = eg_xrealloc(rp->rows, (rp->nrows + 1) * sizeof *rp->rows);
    drow *d = &rp->rows[rp->nrows++];
    d->partition = m->partition;
    d->offset = m->offset;
    for (int c = 0; c < 7; c++) d->cell[c] = eg_xstrdup(row[c]);
}

/* qsort order of the dry-run rows: by partition, then offset. */
static int cmp_rows(const void *x, const void *y) {
    const drow *a = x, *b = y;
    if (a->partition != b->partition) return a->partition < b->partition ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* 1 when the lifecycle options leave an item in state st to be replayed
 * (see the file comment). */
static int state_admits(const opts *o, eg_dlq_status st) {
    if (o->state >= 0) return (int)st == o->state;
    return o->include_resolved || st == EG_DLQ_OPEN || st == EG_DLQ_APPROVED;
}

/* Handles one lane record of the second pass: filter, state, guard, then
 * replay (or a table row). Returns 1 when a record was (or would be)
 * replayed. */
static int handle(replay *rp, const rd_kafka_message_t *m) {
    const opts *o = rp->o;
    int i = eg_lread_index(&rp->r, m->partition);
    uint64_t seq;
    if (i < 0 || eg_tracker_add(&rp->trk[i], m->offset, &seq) != 0) return 0;
    rp->read++;
    if (!passes(rp, m) || (rp->verdict && !where_verdict(rp, i, m->offset))) {
        eg_tracker_finish(&rp->trk[i], seq);
        return 0;
    }
    rp->matched++;
    size_t rlen = 0;
    const void *rv = eg_header(m, EG_H_REPLAYS, &rlen);
    long replays = eg_replays_parse(rv, rlen);
    char id[320], shown[400], lane[600], nrep[32];
    eg_dlq_status st = eg_dlq_item_state(&rp->states, m, id, sizeof id);
    eg_printable(id, strlen(id), shown, sizeof shown); /* an errgate.id is a foreign header too */
    snprintf(lane, sizeof lane, "%s/%d/%lld", o->from, (int)m->partition, (long long)m->offset);
    if (replays >= 0) snprintf(nrep, sizeof nrep, "%ld", replays);
    else eg_strlcpy(nrep, "not a count", sizeof nrep);
    if (!state_admits(o, st)) {
        rp->skipped[st]++;
        if (eg_dlq_resolved(st)) eg_tracker_finish(&rp->trk[i], seq); /* final: it stays skipped */
        if (o->dry) dry_row(rp, m, lane, nrep, "", -1, eg_dlq_status_name(st));
        return 0;
    }
    const char *approver = st == EG_DLQ_APPROVED ? eg_dlq_states_approver(&rp->states, id) : NULL;
    if (o->four_eyes && st == EG_DLQ_APPROVED && (!approver || eg_dlq_same_person(approver, rp->by))) {
        /* not finished: someone else replays it later with the same group (four eyes) */
        rp->four_eyes_refused++;
        fprintf(stderr, "errgate replay: four-eyes: %s (errgate.id %s) was approved by %s; %s may not replay it\n",
                lane, shown, approver ? approver : "nobody named", rp->by);
        if (o->dry) dry_row(rp, m, lane, nrep, "", -1, "four-eyes");
        return 0;
    }
    int refuse = !o->force && (replays < 0 || replays >= o->max_replays);
    if (refuse) {
        rp->refused++;
        eg_tracker_finish(&rp->trk[i], seq);
        if (!o->dry)
            fprintf(stderr,
                    "errgate replay: refused %s (errgate.id %s): errgate.replays is %s, "
                    "--max-replays %ld (--force overrides)\n",
                    lane, shown, nrep, o->max_replays);
    }
    char to[EG_TOPIC_NAME_MAX + 1] = "", why[1024];
    int32_t p = refuse ? RD_KAFKA_PARTITION_UA : destination(rp, m, to, sizeof to, why, sizeof why);
    if (p == -2 || p == -3) {
        /* not finished: the group's progress stays before it (see the file comment) */
        if (p == -2) rp->unroutable++;
        else rp->dest_refused++;
        fprintf(stderr, "errgate replay: %s %s (errgate.id %s): %s\n", p == -2 ? "unroutable" : "refused", lane, shown,
                why);
        if (o->dry) dry_row(rp, m, lane, nrep, "", -1, p == -2 ? "unroutable" : "refused destination");
        return 0;
    }
    /* a protected value (protect.h): decrypted with the key ring; a pointer
     * or a masked value is replaced by its original, fetched by its
     * coordinates like a stub's; refused by name otherwise, not finished */
    size_t phn = 0;
    const void *ph = eg_header(m, EG_H_PROTECT, &phn);
    int pmode = eg_prot_header_mode(ph, phn);
    unsigned char *plain = NULL;
    size_t plain_len = 0;
    rd_kafka_message_t *orig = NULL;
    if (!refuse && pmode != EG_PROT_NONE && !eg_header(m, EG_H_VALUE_OMITTED, NULL)) { /* a stub: below */
        char pshown[EG_PROT_HDR_MAX];
        eg_printable(ph, phn, pshown, sizeof pshown);
        int ok = 0;
        if (pmode == EG_PROT_ENCRYPT)
            ok = eg_prot_decrypt(&rp->keys, ph, phn, m->payload, m->len, &plain, &plain_len, why, sizeof why) == 0;
        else if (pmode == EG_PROT_MASK || pmode == EG_PROT_POINTER)
            ok = (orig = fetch_original(rp, m, id, why, sizeof why)) != NULL;
        else snprintf(why, sizeof why, "the value is protected in a way this errgate does not know");
        if (!ok) {
            rp->protected_refused++;
            char ot[300], op[32], oo[32];
            eg_dlq_header_text(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
            eg_dlq_header_text(m, EG_H_ORIG_PARTITION, op, sizeof op);
            eg_dlq_header_text(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
            fprintf(stderr,
                    "errgate replay: refused protected %s (errgate.id %s, source %s/%s/%s, %s: %s): %s; not replayed, "
                    "left in the lane\n",
                    lane, shown, ot, op, oo, EG_H_PROTECT, pshown, why);
            if (o->dry) dry_row(rp, m, lane, nrep, "", -1, "refused protected");
            free(plain);
            return 0;
        }
        if (plain) rp->decrypted++;
        else rp->stubs_fetched++;
    }
    /* a stub: its original, fetched by its coordinates, or refused (see the file comment) */
    if (!refuse && !orig && eg_header(m, EG_H_VALUE_OMITTED, &rlen)) {
        if (!(orig = fetch_original(rp, m, id, why, sizeof why))) {
            rp->stub_refused++;
            fprintf(stderr,
                    "errgate replay: refused stub %s (errgate.id %s): its value was omitted, %s; not replayed\n", lane,
                    shown, why);
            if (o->dry) dry_row(rp, m, lane, nrep, "", -1, "refused stub");
            return 0;
        }
        rp->stubs_fetched++;
    }
    if (o->dry) {
        dry_row(rp, m, lane, nrep, to, p, refuse ? "refused" : NULL);
        if (orig) rd_kafka_message_destroy(orig);
        free(plain);
        if (refuse) return 0;
        rp->replayed++; /* would be */
        eg_tracker_finish(&rp->trk[i], seq);
        return 1;
    }
    if (refuse) return 0; /* nothing fetched or decrypted for a refused one */
    pace(rp);
    if (o->txn && txn_ensure(rp) != 0) {
        if (orig) rd_kafka_message_destroy(orig);
        free(plain);
        return 0;
    }
    size_t idlen = strlen(id);
    pending *pd = eg_xmalloc(sizeof *pd + idlen + 1);
    *pd = (pending){.pidx = i, .seq = seq, .lane_off = m->offset};
    eg_strlcpy(pd->to, to, sizeof pd->to);
    memcpy(pd->id, id, idlen + 1);
    rd_kafka_headers_t *src = NULL, *merged = NULL;
    rd_kafka_message_headers(m, &src);
    if (orig) src = merged = stub_headers(orig, src);
    rd_kafka_headers_t *h = eg_replay_headers(src, lane, eg_wall_ms(), (replays < 0 ? 0 : replays) + 1);
    if (merged) rd_kafka_headers_destroy(merged);
    const rd_kafka_message_t *body = orig ? orig : m; /* a stub's key and value are its original's */
    const void *value = plain ? plain : body->payload;
    size_t vlen = plain ? plain_len : body->len;
    /* its id and birth place hold at its source only signed (provenance.h) */
    eg_prov_sign(&rp->states.key, h, body->key, body->key_len, value, vlen);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        rp->prod, RD_KAFKA_V_TOPIC(pd->to), RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_VALUE((void *)value, vlen), RD_KAFKA_V_KEY(body->key, body->key_len), RD_KAFKA_V_HEADERS(h),
        RD_KAFKA_V_OPAQUE(pd), RD_KAFKA_V_END);
    if (orig) rd_kafka_message_destroy(orig);
    if (plain) {
        memset(plain, 0, plain_len);
        free(plain);
    }
    if (e) {
        fprintf(stderr, "errgate replay: %s -> %s: cannot produce: %s\n", lane, pd->to, rd_kafka_err2str(e));
        rd_kafka_headers_destroy(h);
        free(pd);
        rp->failed++;
        rp->abort = 1;
        return 0;
    }
    rp->inflight++;
    return 1;
}

/* ---- set-up --------------------------------------------------------------- */

static void print_summary(const replay *rp, int interrupted) {
    if (rp->o->dry) {
        eg_table t;
        eg_table_init(&t, 7);
        const char *head[] = {"LANE", "ORIGINAL", "CLASS", "CODE", "REPLAYS", "TO", "VERDICT"};
        eg_table_add(&t, head);
        if (rp->nrows) qsort(rp->rows, rp->nrows, sizeof *rp->rows, cmp_rows);
        for (size_t i = 0; i < rp->nrows; i++) eg_table_add(&t, (const char *const *)rp->rows[i].cell);
        eg_table_print(&t, 1u << 4, stdout);
        eg_table_free(&t);
        printf("dry run, nothing written: read %ld  matched %ld  would replay %ld  refused %ld", rp->read, rp->matched,
               rp->replayed, rp->refused);
    } else {
        printf("read %ld  matched %ld  replayed %ld  refused %ld  failed %ld", rp->read, rp->matched, rp->replayed,
               rp->refused, rp->failed);
        if (rp->state_failed) printf("  state-writes-failed %ld", rp->state_failed);
        if (rp->o->txn)
            printf("  transactions %ld (commit avg %lld ms, max %lld ms)  aborted %ld", rp->txn.commits,
                   (long long)(rp->txn.commits ? rp->txn.ms_total / rp->txn.commits : 0), (long long)rp->txn.ms_max,
                   rp->txn.aborted);
    }
    long skipped = 0;
    for (int s = 0; s < EG_DLQ__N; s++) skipped += rp->skipped[s];
    if (rp->unroutable) printf("  unroutable %ld", rp->unroutable);
    if (rp->dest_refused) printf("  refused-destination %ld", rp->dest_refused);
    if (rp->stub_refused) printf("  stubs-refused %ld", rp->stub_refused);
    if (rp->protected_refused) printf("  protected-refused %ld", rp->protected_refused);
    if (rp->decrypted) printf("  decrypted %ld", rp->decrypted);
    if (rp->four_eyes_refused) printf("  four-eyes-refused %ld", rp->four_eyes_refused);
    if (rp->stubs_fetched) printf("  stubs-fetched %ld", rp->stubs_fetched);
    printf("  skipped %ld", skipped);
    for (int s = 0, any = 0; s < EG_DLQ__N; s++)
        if (rp->skipped[s])
            printf("%s%s=%ld", any++ ? ", " : " (", eg_dlq_status_name((eg_dlq_status)s), rp->skipped[s]);
    printf("%s\n", skipped ? ")" : "");
    if (interrupted) printf("interrupted: run the same command (group kept) to resume\n");
    else if (rp->abort) printf("stopped after a failed delivery: nothing past it was committed; run again to retry\n");
    fflush(stdout);
}

/* Frees everything rp holds: the producer (what is still in flight is
 * purged, waiting at most 5 s for its reports), the reader, the trackers,
 * the --where verdicts and VM, the rows. */
static void teardown(replay *rp) {
    if (rp->prod) {
        /* only after a 60 s stall: drop what is left (its opaques freed) */
        rp->closing = 1;
        rd_kafka_purge(rp->prod, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        int64_t until = eg_now_ms() + 5000;
        while ((rp->inflight > 0 || rp->state_inflight > 0) && eg_now_ms() < until) rd_kafka_poll(rp->prod, 50);
        rd_kafka_destroy(rp->prod);
    }
    if (rp->fetch) {
        rd_kafka_consumer_close(rp->fetch);
        rd_kafka_destroy(rp->fetch);
    }
    int n = rp->r.n;
    eg_lread_close(&rp->r);
    for (int i = 0; rp->trk && i < n; i++) eg_tracker_free(&rp->trk[i]);
    if (rp->verdict)
        for (int i = 0; i < n; i++) free(rp->verdict[i]);
    free(rp->verdict);
    free(rp->start0);
    free(rp->trk);
    free(rp->committed);
    for (size_t i = 0; i < rp->nrows; i++)
        for (int c = 0; c < 7; c++) free(rp->rows[i].cell[c]);
    free(rp->rows);
    free(rp->homes);
    eg_where_free(rp->where);
    eg_dlq_states_free(&rp->states);
}

/* --transactional at start: refuses the embedded broker (exit 2), then
 * init_transactions (fences a killed run of the same group and aborts its
 * open transaction). Returns 0, or the exit code with err. */
static int txn_start(replay *rp, char *err, size_t errlen) {
    if (eg_ktxn_on_mock(rp->prod, 10000)) {
        snprintf(err, errlen,
                 "the embedded broker (errgate broker, librdkafka's mock cluster) has no real transactions; a "
                 "transactional replay needs a Kafka cluster");
        return 2;
    }
    char e[600];
    if (eg_ktxn_init(rp->prod, 60000, e, sizeof e) != 0) {
        snprintf(err, errlen,
                 "could not start transactions: %s (the cluster must have a transaction coordinator; the principal "
                 "needs WRITE and DESCRIBE on the transactional id)",
                 e);
        return 1;
    }
    return 0;
}

/* Everything after the arguments: returns the exit code. rp->r.n is kept
 * valid for teardown. */
static int run(replay *rp, const opts *o) {
    char err[1024], note[600], group[700];
    if (o->where && !(rp->where = eg_where_new(o->where, EG_DEF_POLICY_TIMEOUT_MS, err, sizeof err))) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return 2;
    }
    if (o->group) eg_strlcpy(group, o->group, sizeof group);
    else default_group(o, group, sizeof group);
    printf("replay %s -> %s, group %s%s\n", o->from, o->home ? "original topics" : o->to, group,
           o->dry ? " (dry run)" : "");
    fflush(stdout);

    rd_kafka_conf_t *conf = eg_kcli_conf(&o->k, "errgate-replay", err, sizeof err);
    if (!conf) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return 2;
    }
    int rc = eg_lread_open(&rp->r, conf, group, o->from, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "errgate replay: --from: %s\n", err);
        return rc == -2 ? 2 : 1;
    }
    eg_dlq_whoami(rp->by, sizeof rp->by);
    eg_dlq_state_topic(o->from, rp->state_topic, sizeof rp->state_topic);
    if (eg_kcli_protkeys(&o->k, &rp->keys, err, sizeof err) < 0) {
        fprintf(stderr, "errgate replay: protection key: %s\n", err);
        return 2;
    }
    /* the producer first: a transactional one aborts what a killed run left
     * open before the states and the progress are read */
    char txn_id[800];
    snprintf(txn_id, sizeof txn_id, "errgate-replay.%s", group);
    if (!o->dry && !(rp->prod = eg_dlq_producer_txn(&o->k, "errgate-replay", o->txn ? txn_id : NULL, on_delivery, rp,
                                                    err, sizeof err))) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return 2;
    }
    if (rp->prod && o->txn && (rc = txn_start(rp, err, sizeof err)) != 0) {
        fprintf(stderr, "errgate replay: --transactional: %s\n", err);
        return rc;
    }
    if (eg_dlq_states_load(&o->k, o->from, &rp->states, err, sizeof err) < 0) {
        fprintf(stderr, "errgate replay: %s: %s\n", rp->state_topic, err);
        return 1;
    }
    rp->target_parts = o->home ? 1 : eg_topic_partitions(rp->r.rk, o->to, err, sizeof err);
    if (rp->target_parts <= 0) {
        if (rp->target_parts == 0)
            fprintf(stderr, "errgate replay: --to: topic %s does not exist (create it first)\n", o->to);
        else fprintf(stderr, "errgate replay: %s\n", err);
        return rp->target_parts == 0 ? 2 : 1;
    }
    if (!o->dry) {
        if (eg_dlq_state_ensure(rp->prod, rp->state_topic, rp->r.n, note, sizeof note, err, sizeof err) < 0) {
            fprintf(stderr, "errgate replay: %s\n", err);
            return 1;
        }
        if (*note) fprintf(stderr, "errgate replay: note: %s\n", note);
    }
    if (eg_lread_seek_committed(&rp->r, err, sizeof err) < 0) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return 1;
    }
    if (o->f.since_ms > 0 && eg_lread_seek_time(&rp->r, o->f.since_ms, err, sizeof err) < 0)
        fprintf(stderr, "errgate replay: note: %s; reading from the start of the range instead\n", err);
    if (o->where && where_pass(rp, err, sizeof err) < 0) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return eg_dlq_stop ? 1 : 2;
    }

    rp->trk = eg_xcalloc((size_t)rp->r.n, sizeof *rp->trk);
    rp->committed = eg_xcalloc((size_t)rp->r.n, sizeof *rp->committed);
    for (int i = 0; i < rp->r.n; i++) {
        eg_tracker_init(&rp->trk[i], 64);
        rp->committed[i] = rp->r.start[i];
    }
    if (eg_lread_start(&rp->r, 0, err, sizeof err) < 0) {
        fprintf(stderr, "errgate replay: %s\n", err);
        return 1;
    }
    rp->last_commit_ms = eg_now_ms();
    long sent = 0;
    int fatal = 0;
    while (!eg_dlq_stop && !rp->abort && (o->limit < 0 || sent < o->limit)) {
        while (rp->prod && rp->inflight >= MAX_INFLIGHT && !rp->abort) rd_kafka_poll(rp->prod, 50);
        rd_kafka_message_t *m;
        rc = eg_lread_next(&rp->r, 100, &m, err, sizeof err);
        if (rc == 2) break;
        if (rc < 0) {
            fprintf(stderr, "errgate replay: %s\n", err);
            fatal = 1;
            break;
        }
        if (rc == 1) {
            sent += handle(rp, m);
            rd_kafka_message_destroy(m);
        }
        if (rp->prod) rd_kafka_poll(rp->prod, 0);
        maybe_commit(rp);
    }
    int interrupted = eg_dlq_stop != 0;
    if (rp->prod) {
        /* await every outstanding delivery (and the state writes they queue) */
        int64_t until = eg_now_ms() + 60000;
        while ((rp->inflight > 0 || rp->state_inflight > 0) && eg_now_ms() < until) rd_kafka_poll(rp->prod, 100);
        if (rp->inflight > 0 || rp->state_inflight > 0) {
            fprintf(stderr, "errgate replay: %ld deliveries unconfirmed after 60 s; not committed\n",
                    rp->inflight + rp->state_inflight);
            fatal = 1;
        }
        commit(rp, 1);
    }
    print_summary(rp, interrupted);
    return rp->failed || rp->state_failed || rp->commit_failed || rp->unroutable || rp->dest_refused ||
                   rp->stub_refused || rp->protected_refused || rp->four_eyes_refused || fatal || interrupted
               ? 1
               : 0;
}

/* The config's DLQ lanes (see the file comment) into *lanes (fresh
 * strings, the caller frees them and the array). Returns their count, or
 * -1 with err. */
static int config_lanes(const opts *o, char ***lanes, char *err, size_t errlen) {
    const eg_config cfg = *o->cfg;
    int n = 0;
    *lanes = eg_xcalloc((size_t)cfg.ntopics + 1, sizeof **lanes);
    for (int i = 0; i < cfg.ntopics; i++) {
        if (eg_topic_is_regex(cfg.topics[i])) {
            fprintf(stderr,
                    "errgate replay: note: source %s is a pattern: its DLQ lanes cannot be named from the config "
                    "(give --from)\n",
                    cfg.topics[i]);
            continue;
        }
        char *lane = eg_lane_topic(cfg.lane_dlq, cfg.topics[i], NULL);
        int seen = 0;
        for (int j = 0; j < n && !seen; j++) seen = !strcmp((*lanes)[j], lane);
        if (seen) free(lane);
        else (*lanes)[n++] = lane;
    }
    if (n == 0) snprintf(err, errlen, "%s names no DLQ lane (its sources are patterns); give --from", o->k.config);
    return n ? n : -1;
}

/* Replays one lane (o->from): returns the exit code. */
static int replay_lane(const opts *o) {
    replay rp;
    memset(&rp, 0, sizeof rp);
    rp.o = o;
    int rc = run(&rp, o);
    teardown(&rp);
    return rc;
}

int eg_cmd_replay(int argc, char **argv) {
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? EG_EXIT_OK : rc;
    char **lanes = NULL, err[1024], why[300];
    int n = 1;
    eg_config cfg;
    if (o.k.config) {
        /* the config loader wants a bootstrap; -b supplies it when the file has none */
        if (o.k.bootstrap) setenv("ERRGATE_BOOTSTRAP", o.k.bootstrap, 1);
        if (eg_config_load_source(o.k.config, o.k.source, &cfg, err, sizeof err) != 0) {
            fprintf(stderr, "errgate replay: -c: %s\n", err);
            return 2;
        }
        o.cfg = &cfg;
        if (cfg.replay_four_eyes) o.four_eyes = 1;
    }
    if (o.to && eg_replay_internal(o.cfg, o.to, why, sizeof why)) {
        rc = eg_usage_error("replay", "--to %s is %s: never replayed to", o.to, why);
        if (o.cfg) eg_config_free(o.cfg);
        return rc;
    }
    if (!o.from && (n = config_lanes(&o, &lanes, err, sizeof err)) < 0) {
        fprintf(stderr, "errgate replay: -c: %s\n", err);
        free(lanes);
        eg_config_free(o.cfg);
        return 2;
    }
    eg_dlq_catch_signals();
    rc = 0;
    for (int i = 0; i < n && !eg_dlq_stop; i++) {
        if (lanes) o.from = lanes[i];
        if (o.to && !strcmp(o.from, o.to)) {
            fprintf(stderr, "errgate replay: %s: --to must differ from the lane (that would replay it into itself)\n",
                    o.from);
            rc = rc > 2 ? rc : 2;
            continue;
        }
        int r = replay_lane(&o);
        rc = r > rc ? r : rc;
    }
    eg_dlq_release_signals();
    eg_dlq_foreign_done();
    for (int i = 0; lanes && i < n; i++) free(lanes[i]);
    free(lanes);
    if (o.cfg) eg_config_free(o.cfg);
    return rc;
}
