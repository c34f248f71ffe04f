/* cmd_dlq.c — `errgate dlq stats|tail|resolve|approve`: look into a lane and
 * record what became of its items (`dlq watch` is dlq_watch.c's).
 *
 *   errgate dlq stats LANE (-b|-c) [--by class|code|reason|original.topic|policy|state|fingerprint|stage|app|
 *                                        schema|retryable|header:NAME] [--since DUR]
 *   errgate dlq tail LANE (-b|-c) [-f] [--payload] [--json] [-n N]
 *   errgate dlq resolve LANE (-b|-c) --id ID --status replayed|accepted-loss|closed [--reason TEXT]
 *   errgate dlq approve LANE (-b|-c) (--id ID | --where EXPR | --class C) --by NAME [--reason TEXT] [--dry-run]
 *   (`dlq watch` is dlq_watch.c's, `dlq annotate` dlq_annotate.c's)
 *
 * stats reads the whole lane (or the records of the last DUR, by lane
 * timestamp) and prints an aligned table: one row per value of the --by
 * header (default class; "-" when absent; --by header:NAME: any header of the
 * records; --by state: the item's lifecycle
 * state), with ITEMS, OPEN (not resolved: open, pending-approval,
 * approved) and RESOLVED per row, rows by count then name, a total row, a
 * line of resolved counts per status and a line of unresolved counts per
 * state. It counts items, not lane records: a record with the item id
 * (errgate.id, else its own coordinates) and the failure (error.timestamp)
 * of one counted already is a copy (a lane write repeated after a crash or
 * a rebalance, at-least-once), folded into the first and said in a
 * `copies folded: N` line; the same item dead-lettered again after a replay
 * is another failure and counts. States follow the lifecycle rule of dlq.h (latest status per id,
 * not older than the record; errgate.approval: required makes an item
 * without one pending-approval). With --prometheus it prints instead the
 * Prometheus text exposition of the per-state counts and, per unresolved
 * state, when its oldest item was dead-lettered (for node_exporter's
 * textfile collector and the ErrgatePendingApprovalOld alert).
 *
 * tail prints the last N records (default 10) of the lane in timestamp
 * order, one line each:
 *   TIME ORIGINAL class=C code=X reason=R retry.count=N attempts=N message="..."
 * TIME is error.timestamp (else the record's timestamp), ORIGINAL is
 * original.topic/partition/offset; values are escaped so that a line stays
 * one line. The key and value are printed (key="..." value="...") only with
 * --payload. -f keeps printing new records until SIGINT or SIGTERM (exit 0).
 * --json prints one JSON object per record instead (tail_json: the same
 * fields, plus lane coordinates, id, policy, action, the envelope and the
 * item's annotation (owner, severity, note: as LANE.state held them at
 * the start); absent ones null;
 * key and value only with --payload, as strings, invalid UTF-8 replaced).
 *
 * resolve checks that a record of the lane carries the id, then writes the
 * status to the state topic (creating it compacted when it can, dlq_state.c)
 * and waits for the delivery report. accepted-loss needs a non-blank
 * --reason. With -c CONFIG under source.fence = "ladder+dlq" it also tells
 * the gateway that fences the item's key (dlq_fence.c).
 *
 * approve writes `approved` (by --by NAME, with --reason) for the selected
 * items that are pending-approval, one state record per item id, and
 * prints one line per item ("approved ID LANE/P/O class=C code=X"), then
 * "approved N" with the selected items it left alone per state. --id also
 * approves an open item (one that needed no approval); an --id already
 * approved is a no-op (exit 0); an --id resolved is refused (exit 2).
 * --dry-run prints "would approve" lines and writes nothing.
 *
 * Exit codes: 0 done, 1 Kafka failure, 2 bad arguments, a missing topic or
 * an unknown id. None of these commands joins a consumer group. */
#include "cli.h"
#include "dlq.h"
#include "dlq_foreign.h"
#include "headers.h"
#include "json.h"
#include "kcli.h"
#include "parse.h"
#include "record.h"
#include "refusal.h"
#include "text.h"
#include "util.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the usage text of `errgate dlq` on stdout. */
static void usage(void) {
    printf("usage: errgate dlq stats LANE (-b BOOTSTRAP | -c CONFIG) "
           "[--by class|code|reason|original.topic|policy|state|fingerprint|stage|app|schema|\n"
           "               retryable|owner|severity|header:NAME] [--since DUR]\n"
           "               [--prometheus]\n"
           "       errgate dlq tail LANE (-b BOOTSTRAP | -c CONFIG) [-f] [--payload] [--json] [-n N]\n"
           "       errgate dlq resolve LANE (-b BOOTSTRAP | -c CONFIG) --id ID --status replayed|accepted-loss|closed "
           "[--reason TEXT]\n"
           "       errgate dlq approve LANE (-b BOOTSTRAP | -c CONFIG) (--id ID | --where EXPR | --class C) --by NAME\n"
           "               [--reason TEXT] [--dry-run]\n"
           "       errgate dlq annotate LANE (-b BOOTSTRAP | -c CONFIG) --id ID [--owner O] [--severity S] [--note T]\n"
           "       errgate dlq watch LANE (-b BOOTSTRAP | -c CONFIG) --incidents FILE.jsonl [--webhook URL]\n"
           "               [--threshold CLASS=N/DUR ...] [--group G]\n"
           "  every command: [--key-file F] the deployment's control key (else $ERRGATE_CONTROL_KEY_FILE, else\n"
           "               -c CONFIG's control_key_file): resolve and approve sign their state records, and\n"
           "               state records not signed with it are ignored\n"

           "\n"
           "  stats         counts per --by value (default class), open versus resolved\n"
           "  tail          the last -n (10) records, one line each; -f follows; --payload adds the value;\n"
           "                --json prints one JSON object per record; an encrypted value (errgate.protect) is\n"
           "                shown decrypted with --protect-key-file F ($ERRGATE_PROTECT_KEY_FILE, the config's\n"
           "                lanes.protect.key_file), else refused by name (value_refused)\n"
           "  resolve       records what became of item --id in the compacted topic LANE.state;\n"
           "                accepted-loss needs --reason; with -c CONFIG under source.fence = \"ladder+dlq\"\n"
           "                also tells the gateway fencing the item's key (GROUP.fences): its next record goes\n"
           "  approve       approves the selected pending-approval items (replay --state approved\n"
           "                replays them); --by names the approver; --dry-run writes nothing\n"
           "  annotate      records owner, severity and a note of item --id in LANE.state (dlq annotate --help)\n"
           "  watch         follows the lane in its own group: one incident line per record, a\n"
           "                webhook alert when a class crosses its threshold (dlq watch --help)\n"

           "  -b, -c        broker address, or a gateway config to take the kafka settings from\n"
           "                (else $ERRGATE_BOOTSTRAP)\n"
           "  --since DUR   only records written in the last DUR (90s, 15m, 2h, 7d)\n"
           "  --prometheus  stats: items per state and the oldest unresolved ones, as Prometheus text\n");
}

/* One line naming what is wrong on stderr; returns the exit code 2. */
static int usage_error(const char *why) { return eg_usage_error("dlq", "%s", why); }

/* 1 when the blank-or-absent text t has no visible character. */
static int blank(const char *t) {
    for (const char *p = t ? t : ""; *p; p++)
        if (!isspace((unsigned char)*p)) return 0;
    return 1;
}

typedef struct args {
    eg_kcli k;
    const char *lane, *by, *since, *id, *status, *reason;
    const char *where, *klass, *author; /* approve */
    int follow, payload, dry, prom, json;
    long n;
} args;

/* Parses the arguments after the subcommand. Returns 0, -1 after printing
 * the help, or the exit code of a usage error. */
static int parse(int argc, char **argv, const char *sub, args *a) {
    memset(a, 0, sizeof *a);
    a->n = 10;
    char why[512];
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        int k = eg_dlq_conn_opt(&a->k, argc, argv, &i, why, sizeof why);
        if (k < 0) return usage_error(why);
        if (k > 0) continue;
        if (eg_is_help(o)) {
            usage();
            return -1;
        }
        int tail = !strcmp(sub, "tail"), stats = !strcmp(sub, "stats"), res = !strcmp(sub, "resolve"),
            appr = !strcmp(sub, "approve");
        if (appr && !strcmp(o, "--dry-run")) {
            a->dry = 1;
            continue;
        }
        if (stats && !strcmp(o, "--prometheus")) {
            a->prom = 1;
            continue;
        }
        if (tail && (!strcmp(o, "-f") || !strcmp(o, "--follow"))) {
            a->follow = 1;
            continue;
        }
        if (tail && !strcmp(o, "--payload")) {
            a->payload = 1;
            continue;
        }
        if (tail && !strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        const char **slot = NULL;
        if (stats && !strcmp(o, "--by")) slot = &a->by;
        else if (stats && !strcmp(o, "--since")) slot = &a->since;
        else if ((res || appr) && !strcmp(o, "--id")) slot = &a->id;
        else if (res && !strcmp(o, "--status")) slot = &a->status;
        else if ((res || appr) && !strcmp(o, "--reason")) slot = &a->reason;
        else if (appr && !strcmp(o, "--where")) slot = &a->where;
        else if (appr && !strcmp(o, "--class")) slot = &a->klass;
        else if (appr && !strcmp(o, "--by")) slot = &a->author;
        if (slot || (tail && !strcmp(o, "-n"))) {
            if (i + 1 >= argc) {
                snprintf(why, sizeof why, "%s needs a value", o);
                return usage_error(why);
            }
            if (slot) *slot = argv[++i];
            else if (eg_parse_count(argv[++i], &a->n) < 0) {
                snprintf(why, sizeof why, "-n '%s' is not a count", argv[i]);
                return usage_error(why);
            }
            continue;
        }
        if (o[0] == '-' || a->lane) {
            snprintf(why, sizeof why, "%s: %s '%s'%s", sub, o[0] == '-' ? "unknown option" : "unexpected argument", o,
                     eg_dash_hint(o));
            return usage_error(why);
        }
        a->lane = o;
    }
    if (!a->lane) {
        snprintf(why, sizeof why, "%s: LANE is required", sub);
        return usage_error(why);
    }
    return 0;
}

/* Opens a bounded reader on the lane. Returns 0, or the exit code. */
static int open_lane(const args *a, eg_lread *r, const char *cmd) {
    char err[1024];
    rd_kafka_conf_t *conf = eg_kcli_conf(&a->k, "errgate-dlq", err, sizeof err);
    if (!conf) {
        fprintf(stderr, "errgate dlq %s: %s\n", cmd, err);
        return 2;
    }
    int rc = eg_lread_open(r, conf, NULL, a->lane, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "errgate dlq %s: %s\n", cmd, err);
        return rc == -2 ? 2 : 1;
    }
    return 0;
}

/* The record's timestamp in ms since the epoch (-1 when it has none). */
static int64_t ts_of(const rd_kafka_message_t *m) {
    rd_kafka_timestamp_type_t tt;
    return rd_kafka_message_timestamp(m, &tt);
}

/* ---- stats ---------------------------------------------------------------- */

typedef struct srow {
    char *name;
    long items, open, resolved;
} srow;

/* The index of the row named name in *rows (*n of them, looked up by idx),
 * added with no counts when there is none yet. */
static int64_t row_of(srow **rows, size_t *n, eg_strmap *idx, const char *name) {
    int64_t at = eg_strmap_get(idx, name, strlen(name));
    if (at >= 0) return at;
    *rows = eg_xrealloc(*rows, (*n + 1) * sizeof **rows);
    (*rows)[*n] = (srow){.name = eg_xstrdup(name)};
    at = (int64_t)(*n)++;
    eg_strmap_put(idx, name, strlen(name), at);
    return at;
}

/* qsort order of the stats rows: most items first, then by name. */
static int cmp_rows(const void *x, const void *y) {
    const srow *a = x, *b = y;
    if (a->items != b->items) return a->items < b->items ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* Prints the --prometheus form of `dlq stats`: count[s] items per state of
 * lane, and oldest[s] (ms; INT64_MAX: none) for each unresolved state that
 * has items. Lane names are Kafka topic names, which need no escaping. */
static void print_prometheus(const char *lane, const long count[EG_DLQ__N], const int64_t oldest[EG_DLQ__N]) {
    printf("# HELP errgate_dlq_items Items of a lane by lifecycle state (errgate dlq stats --prometheus).\n"
           "# TYPE errgate_dlq_items gauge\n");
    for (int s = 0; s < EG_DLQ__N; s++)
        printf("errgate_dlq_items{lane=\"%s\",state=\"%s\"} %ld\n", lane, eg_dlq_status_name((eg_dlq_status)s),
               count[s]);
    printf("# HELP errgate_dlq_oldest_item_timestamp_seconds When the oldest item of a lane in an unresolved state "
           "was written to the lane.\n"
           "# TYPE errgate_dlq_oldest_item_timestamp_seconds gauge\n");
    for (int s = 0; s < EG_DLQ__N; s++)
        if (!eg_dlq_resolved(s) && oldest[s] != INT64_MAX)
            printf("errgate_dlq_oldest_item_timestamp_seconds{lane=\"%s\",state=\"%s\"} %.3f\n", lane,
                   eg_dlq_status_name((eg_dlq_status)s), (double)oldest[s] / 1000.0);
}

/* `dlq stats`: counts the lane's records (open and resolved) per --by
 * field and prints them as a table. Returns the exit code. */
static int cmd_stats(const args *a) {
    static const struct {
        const char *by, *header;
    } fields[] = {{"class", EG_H_CLASS},
                  {"code", EG_H_CODE},
                  {"reason", EG_H_REASON},
                  {"original.topic", EG_H_ORIG_TOPIC},
                  {"policy", EG_H_POLICY},
                  {"state", NULL}, /* the lifecycle state, not a header */
                  {"fingerprint", EG_H_FINGERPRINT},
                  {"stage", EG_H_STAGE},
                  {"app", EG_H_APP},
                  {"schema", EG_H_SCHEMA},
                  {"retryable", EG_H_RETRYABLE},
                  {"owner", NULL},
                  {"severity", NULL}}; /* owner, severity: the item's annotation (dlq annotate) */
    const char *by = a->by ? a->by : "class", *header = NULL;
    int known = 0, any_header = !strncmp(by, "header:", 7); /* header:NAME: any header of the records */
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strcmp(by, fields[i].by)) header = fields[i].header, known = 1;
    int annotation = !strcmp(by, "owner") || !strcmp(by, "severity");
    if (any_header) {
        header = by + 7;
        known = *header && strlen(header) <= 255;
        for (const char *p = header; known && *p; p++) known = *p > 0x20 && *p < 0x7f;
    }
    if (!known) {
        char why[512];
        snprintf(why, sizeof why,
                 "stats: --by '%.200s' is not one of class, code, reason, original.topic, policy, state, "
                 "fingerprint, stage, app, schema, retryable, owner, severity, header:NAME (a header name: 1 to "
                 "255 printable characters)",
                 by);
        return usage_error(why);
    }
    int64_t since = 0;
    if (a->since) {
        int64_t d;
        if (eg_parse_duration_ms(a->since, &d) < 0 || d == 0) {
            char why[300];
            snprintf(why, sizeof why, "stats: --since '%s' is not a duration (e.g. 90s, 15m, 1h, 2d)", a->since);
            return usage_error(why);
        }
        since = eg_wall_ms() - d;
    }
    char err[1024];
    eg_dlq_states st;
    memset(&st, 0, sizeof st);
    eg_lread r;
    int rc = open_lane(a, &r, "stats");
    if (rc) return rc;
    if (eg_dlq_states_load(&a->k, a->lane, &st, err, sizeof err) < 0) {
        fprintf(stderr, "errgate dlq stats: %s\n", err);
        eg_lread_close(&r);
        return 1;
    }
    if (since && eg_lread_seek_time(&r, since, err, sizeof err) < 0)
        fprintf(stderr, "errgate dlq stats: note: %s; reading the whole lane instead\n", err);
    eg_strmap idx = {0};
    srow *rows = NULL;
    size_t nrows = 0;
    long by_status[EG_DLQ__N] = {0};
    eg_strmap seen = {0};     /* item ids counted */
    long folded = 0;          /* records of an item counted already */
    eg_strmap appr_idx = {0}; /* approver -> index into approvers */
    srow *approvers = NULL;   /* who approved the approved items: name, items */
    size_t nappr = 0;
    int64_t oldest[EG_DLQ__N]; /* lane timestamp of the oldest item per state */
    for (int i = 0; i < EG_DLQ__N; i++) oldest[i] = INT64_MAX;
    rc = eg_lread_start(&r, 0, err, sizeof err);
    rd_kafka_message_t *m;
    while (rc == 0 && !eg_dlq_stop) {
        int got = eg_lread_next(&r, 200, &m, err, sizeof err);
        if (got == 2) break;
        if (got < 0) rc = -1;
        if (got != 1) continue;
        int64_t ts = ts_of(m);
        if (since && ts < since) {
            rd_kafka_message_destroy(m);
            continue;
        }
        char val[256], id[320];
        eg_dlq_status s = eg_dlq_item_state(&st, m, id, sizeof id);
        /* a copy: the same item id and the same failure (error.timestamp),
         * i.e. the same lane write again; the item dead-lettered anew (after
         * a replay) has a failure of its own and is counted */
        char copy[400], when[48] = "";
        eg_header_str(m, EG_H_TIMESTAMP, when, sizeof when);
        int cn = snprintf(copy, sizeof copy, "%s%c%s", id, 0, when);
        size_t clen = cn < 0 ? 0 : (size_t)cn < sizeof copy ? (size_t)cn : sizeof copy - 1;
        if (eg_strmap_get(&seen, copy, clen) >= 0) {
            folded++;
            rd_kafka_message_destroy(m);
            continue;
        }
        eg_strmap_put(&seen, copy, clen, 1);
        if (annotation) {
            char an[256];
            if (eg_dlq_states_annotation(&st, id, by, an, sizeof an) < 0) eg_strlcpy(an, "", sizeof an);
            eg_printable(an, strlen(an), val, sizeof val);
            eg_dlq_column(val, sizeof val);
        } else if (!header) eg_strlcpy(val, eg_dlq_status_name(s), sizeof val);
        else {
            eg_dlq_header_text(m, header, val, sizeof val);
            if (!any_header) eg_dlq_foreign_fill(m, header, val, sizeof val); /* a foreign DLQ's code, original.topic */
            eg_dlq_column(val, sizeof val);
        }
        int64_t at = row_of(&rows, &nrows, &idx, val);
        rows[at].items++;
        if (!eg_dlq_resolved(s)) rows[at].open++;
        else rows[at].resolved++;
        by_status[s]++;
        if (s == EG_DLQ_APPROVED) { /* tallied by approver (the approval's signed "by" with a key) */
            const char *by = eg_dlq_states_approver(&st, id);
            char who[400];
            eg_printable(by ? by : "(nobody named)", by ? strlen(by) : 14, who, sizeof who); /* a forged name too */
            int64_t w = row_of(&approvers, &nappr, &appr_idx, who);                          /* may move approvers */
            approvers[w].items++;
        }
        if (ts >= 0 && ts < oldest[s]) oldest[s] = ts;
        rd_kafka_message_destroy(m);
    }
    if (rc < 0) fprintf(stderr, "errgate dlq stats: %s\n", err);
    else if (eg_dlq_stop) rc = -1;
    if (rc == 0 && a->prom) print_prometheus(a->lane, by_status, oldest);
    else if (rc == 0) {
        if (nrows) qsort(rows, nrows, sizeof *rows, cmp_rows);
        char head[64];
        size_t hl = 0;
        for (const char *p = by; *p && hl + 1 < sizeof head; p++) head[hl++] = (char)toupper((unsigned char)*p);
        head[hl] = '\0';
        eg_table t;
        eg_table_init(&t, 4);
        const char *h[] = {head, "ITEMS", "OPEN", "RESOLVED"};
        eg_table_add(&t, h);
        long tot[3] = {0};
        for (size_t i = 0; i <= nrows; i++) {
            char c[3][24];
            long v[3];
            if (i < nrows) {
                v[0] = rows[i].items, v[1] = rows[i].open, v[2] = rows[i].resolved;
                for (int j = 0; j < 3; j++) tot[j] += v[j];
            } else {
                memcpy(v, tot, sizeof v);
            }
            for (int j = 0; j < 3; j++) snprintf(c[j], sizeof c[j], "%ld", v[j]);
            const char *row[] = {i < nrows ? rows[i].name : "total", c[0], c[1], c[2]};
            eg_table_add(&t, row);
        }
        eg_table_print(&t, 0xe, stdout);
        eg_table_free(&t);
        printf("resolved by status: replayed %ld  accepted-loss %ld  closed %ld\n", by_status[EG_DLQ_REPLAYED],
               by_status[EG_DLQ_ACCEPTED_LOSS], by_status[EG_DLQ_CLOSED]);
        printf("unresolved by state: open %ld  pending-approval %ld  approved %ld\n", by_status[EG_DLQ_OPEN],
               by_status[EG_DLQ_PENDING], by_status[EG_DLQ_APPROVED]);
        if (nappr) {
            printf("approvers:");
            for (size_t i = 0; i < nappr; i++) printf(" %s %ld", approvers[i].name, approvers[i].items);
            printf("\n");
        }
        if (folded) printf("copies folded: %ld (lane records of an item counted already)\n", folded);
    }
    for (size_t i = 0; i < nappr; i++) free(approvers[i].name);
    free(approvers);
    eg_strmap_free(&appr_idx);
    eg_strmap_free(&seen);
    for (size_t i = 0; i < nrows; i++) free(rows[i].name);
    free(rows);
    eg_strmap_free(&idx);
    eg_dlq_states_free(&st);
    eg_lread_close(&r);
    eg_dlq_foreign_done();
    return rc == 0 ? 0 : 1;
}

/* ---- tail ----------------------------------------------------------------- */

typedef struct tline {
    int64_t ts;
    int32_t partition;
    int64_t offset;
    char *text;
} tline;

/* qsort order of tail lines: by timestamp, then partition, then offset. */
static int cmp_lines(const void *x, const void *y) {
    const tline *a = x, *b = y;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    if (a->partition != b->partition) return a->partition < b->partition ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* 1 when m carries errgate.protect. */
static int h_protected(const rd_kafka_message_t *m) { return eg_header(m, EG_H_PROTECT, NULL) != NULL; }

/* The protection key ring `tail --payload` decrypts with (n == 0: none;
 * eg_kcli_protkeys), loaded once by cmd_tail. */
static eg_prot_keys tail_keys;

/* The value `tail --payload` shows of m: its own, or decrypted when its
 * errgate.protect says encrypt (*freeme then owns it). NULL with why set
 * when it cannot be shown: a pointer record holds none, a decryption
 * refused (no key, another key, a changed byte). */
static const void *tail_value(const rd_kafka_message_t *m, size_t *len, unsigned char **freeme, char *why,
                              size_t whylen) {
    size_t hn = 0;
    const void *h = eg_header(m, EG_H_PROTECT, &hn);
    *freeme = NULL;
    *len = m->len;
    int mode = eg_prot_header_mode(h, hn);
    if (mode == EG_PROT_POINTER) {
        snprintf(why, whylen,
                 "pointer: no payload in the lane; replay fetches it from original.topic/partition/offset");
        return NULL;
    }
    if (mode != EG_PROT_ENCRYPT || eg_header(m, EG_H_VALUE_OMITTED, NULL)) return m->payload; /* a stub: none */
    if (eg_prot_decrypt(&tail_keys, h, hn, m->payload, m->len, freeme, len, why, whylen) != 0) return NULL;
    return *freeme;
}

/* The tail line of m (malloc'ed). */
static char *tail_line(const rd_kafka_message_t *m, int payload) {
    char time[64], ot[300], op[32], oo[32], klass[200], code[200], reason[200], rc[32], at[32], msg[1200];
    eg_dlq_header_text(m, EG_H_TIMESTAMP, time, sizeof time);
    if (!strcmp(time, "-")) eg_rfc3339(ts_of(m), time, sizeof time);
    eg_dlq_header_text(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
    eg_dlq_header_text(m, EG_H_ORIG_PARTITION, op, sizeof op);
    eg_dlq_header_text(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
    eg_dlq_header_text(m, EG_H_CLASS, klass, sizeof klass);
    eg_dlq_header_text(m, EG_H_CODE, code, sizeof code);
    eg_dlq_header_text(m, EG_H_REASON, reason, sizeof reason);
    eg_dlq_header_text(m, EG_H_RETRY_COUNT, rc, sizeof rc);
    eg_dlq_header_text(m, EG_H_ATTEMPTS, at, sizeof at);
    eg_dlq_header_text(m, EG_H_MESSAGE, msg, sizeof msg);
    /* a foreign DLQ's (dlq_foreign.h) where errgate's headers are absent */
    eg_dlq_foreign_fill(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
    eg_dlq_foreign_fill(m, EG_H_ORIG_PARTITION, op, sizeof op);
    eg_dlq_foreign_fill(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
    eg_dlq_foreign_fill(m, EG_H_CODE, code, sizeof code);
    eg_dlq_foreign_fill(m, EG_H_MESSAGE, msg, sizeof msg);
    eg_dlq_foreign_fill(m, EG_H_ATTEMPTS, at, sizeof at);
    struct {
        char *s;
        size_t cap;
    } cols[] = {{time, sizeof time}, {ot, sizeof ot},         {op, sizeof op}, {oo, sizeof oo}, {klass, sizeof klass},
                {code, sizeof code}, {reason, sizeof reason}, {rc, sizeof rc}, {at, sizeof at}};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) eg_dlq_column(cols[i].s, cols[i].cap);
    char prot[EG_PROT_HDR_MAX + 16] = "";
    if (eg_header(m, EG_H_PROTECT, NULL)) {
        char p[EG_PROT_HDR_MAX];
        eg_dlq_header_text(m, EG_H_PROTECT, p, sizeof p);
        eg_dlq_column(p, sizeof p);
        snprintf(prot, sizeof prot, " protect=%s", p);
    }
    size_t cap = 2560 + (payload ? 4 * (m->len + m->key_len) + 600 : 0);
    char *line = eg_xmalloc(cap);
    int n = snprintf(line, cap, "%s %s/%s/%s class=%s code=%s reason=%s retry.count=%s attempts=%s%s message=\"%s\"",
                     time, ot, op, oo, klass, code, reason, rc, at, prot, msg);
    if (payload && n > 0 && (size_t)n < cap) {
        size_t vlen = 0;
        unsigned char *plain = NULL;
        char why[512];
        const void *val = tail_value(m, &vlen, &plain, why, sizeof why);
        size_t kcap = 4 * m->key_len + 8, vcap = 4 * (val ? vlen : 0) + 8;
        char *k = eg_xmalloc(kcap), *v = eg_xmalloc(vcap);
        eg_strlcpy(k, "-", kcap);
        eg_strlcpy(v, "-", vcap);
        if (m->key) k[0] = '"', eg_printable(m->key, m->key_len, k + 1, kcap - 2), strcat(k, "\"");
        if (val) v[0] = '"', eg_printable(val, vlen, v + 1, vcap - 2), strcat(v, "\"");
        if (val || !h_protected(m)) snprintf(line + n, cap - (size_t)n, " key=%s value=%s", k, v);
        else snprintf(line + n, cap - (size_t)n, " key=%s value=- value_refused=\"%s\"", k, why);
        free(k);
        free(v);
        free(plain);
    }
    return line;
}

/* Appends `,"name":` and the header called hname of m as a JSON string
 * (null when absent) to b; with fill, a foreign DLQ's value when errgate's
 * header is absent (dlq_foreign.h). */
static void json_hdr(struct evbuffer *b, const rd_kafka_message_t *m, const char *name, const char *hname, int fill) {
    size_t n = 0;
    const void *v = eg_header(m, hname, &n);
    evbuffer_add_printf(b, ",\"%s\":", name);
    if (v) {
        eg_json_strn(b, v, n);
        return;
    }
    char alt[1200] = "";
    if (fill) eg_dlq_foreign_fill(m, hname, alt, sizeof alt);
    if (alt[0]) eg_json_str(b, alt);
    else evbuffer_add(b, "null", 4);
}

/* Appends `,"name":` and the header hname of m as a JSON number (null when
 * absent or not an unsigned integer) to b; with fill, a foreign DLQ's value
 * when errgate's header is absent (dlq_foreign.h). */
static void json_num(struct evbuffer *b, const rd_kafka_message_t *m, const char *name, const char *hname, int fill) {
    size_t n = 0;
    const void *v = eg_header(m, hname, &n);
    int64_t x = v ? eg_uint_parse(v, n) : -1;
    char alt[32] = "";
    if (!v && fill) {
        eg_dlq_foreign_fill(m, hname, alt, sizeof alt);
        if (alt[0]) x = eg_uint_parse(alt, strlen(alt));
    }
    if (x >= 0) evbuffer_add_printf(b, ",\"%s\":%lld", name, (long long)x);
    else evbuffer_add_printf(b, ",\"%s\":null", name);
}

/* Appends the envelope headers of m (headers.h; null when absent):
 * retryable as a JSON boolean (null when neither "true" nor "false"),
 * schema id, times and max attempts as numbers. */
static eg_dlq_states tail_states; /* tail --json: the lane's annotations, read at start */

static void json_envelope(struct evbuffer *b, const rd_kafka_message_t *m) {
    json_hdr(b, m, "app", EG_H_APP, 0);
    json_hdr(b, m, "app_version", EG_H_APP_VERSION, 0);
    json_hdr(b, m, "stage", EG_H_STAGE, 0);
    json_hdr(b, m, "schema", EG_H_SCHEMA, 0);
    json_num(b, m, "schema_id", EG_H_SCHEMA_ID, 0);
    json_hdr(b, m, "fingerprint", EG_H_FINGERPRINT, 0);
    size_t n = 0;
    const char *r = eg_header(m, EG_H_RETRYABLE, &n);
    evbuffer_add_printf(b, ",\"retryable\":%s",
                        r && n == 4 && !memcmp(r, "true", 4)    ? "true"
                        : r && n == 5 && !memcmp(r, "false", 5) ? "false"
                                                                : "null");
    json_hdr(b, m, "hint", EG_H_HINT, 0);
    json_num(b, m, "first_failure", EG_H_FIRST_FAILURE, 0);
    json_num(b, m, "last_failure", EG_H_LAST_FAILURE, 0);
    json_num(b, m, "max_attempts", EG_H_MAX_ATTEMPTS, 0);
    json_num(b, m, "due", EG_H_DUE, 0);
    char id[320], v[1200];
    eg_dlq_item_id(m, id, sizeof id);
    static const char *const ann[] = {"owner", "severity", "note", NULL};
    for (const char *const *f = ann; *f; f++) {
        evbuffer_add_printf(b, ",\"%s\":", *f);
        if (eg_dlq_states_annotation(&tail_states, id, *f, v, sizeof v) == 0) eg_json_str(b, v);
        else evbuffer_add(b, "null", 4);
    }
}

/* The --json line of m (malloc'ed): one JSON object, the fields of
 * tail_line plus the lane coordinates, id, policy, action and the
 * envelope (json_envelope). */
static char *tail_json(const rd_kafka_message_t *m, int payload) {
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        fputs("errgate dlq tail: out of memory\n", stderr);
        exit(1);
    }
    char time[64];
    size_t n = 0;
    const void *t = eg_header(m, EG_H_TIMESTAMP, &n);
    if (!t || n >= sizeof time) eg_rfc3339(ts_of(m), time, sizeof time);
    else memcpy(time, t, n), time[n] = '\0';
    evbuffer_add_printf(b, "{\"time\":");
    eg_json_str(b, time);
    evbuffer_add_printf(b, ",\"lane\":{\"topic\":");
    eg_json_str(b, rd_kafka_topic_name(m->rkt));
    evbuffer_add_printf(b, ",\"partition\":%d,\"offset\":%lld}", (int)m->partition, (long long)m->offset);
    json_hdr(b, m, "original_topic", EG_H_ORIG_TOPIC, 1);
    json_hdr(b, m, "original_partition", EG_H_ORIG_PARTITION, 1);
    json_hdr(b, m, "original_offset", EG_H_ORIG_OFFSET, 1);
    json_hdr(b, m, "id", EG_H_ID, 0);
    json_hdr(b, m, "class", EG_H_CLASS, 0);
    json_hdr(b, m, "code", EG_H_CODE, 1);
    json_hdr(b, m, "reason", EG_H_REASON, 0);
    json_num(b, m, "retry_count", EG_H_RETRY_COUNT, 0);
    json_num(b, m, "attempts", EG_H_ATTEMPTS, 1);
    json_hdr(b, m, "message", EG_H_MESSAGE, 1);
    json_hdr(b, m, "policy", EG_H_POLICY, 0);
    json_hdr(b, m, "action", EG_H_ACTION, 0);
    json_hdr(b, m, "protect", EG_H_PROTECT, 0);
    json_envelope(b, m);
    if (payload) {
        evbuffer_add_printf(b, ",\"key\":");
        if (m->key) eg_json_strn(b, m->key, m->key_len);
        else evbuffer_add_printf(b, "null");
        size_t vlen = 0;
        unsigned char *plain = NULL;
        char why[512];
        const void *val = tail_value(m, &vlen, &plain, why, sizeof why);
        evbuffer_add_printf(b, ",\"value\":");
        if (val) eg_json_strn(b, val, vlen);
        else evbuffer_add_printf(b, "null");
        if (!val && h_protected(m)) {
            evbuffer_add_printf(b, ",\"value_refused\":");
            eg_json_str(b, why);
        }
        free(plain);
    }
    evbuffer_add_printf(b, "}");
    return eg_json_take(b);
}

/* `dlq tail`: prints the last -n records of the lane in time order (read
 * from the last -n of each partition), one escaped printable line each;
 * with -f then follows new records until SIGINT/SIGTERM. Returns the exit
 * code. */
static int cmd_tail(const args *a) {
    eg_lread r;
    char kerr[512];
    if (a->payload && eg_kcli_protkeys(&a->k, &tail_keys, kerr, sizeof kerr) < 0) {
        fprintf(stderr, "errgate dlq tail: protection key: %s\n", kerr);
        return 2;
    }
    int rc = open_lane(a, &r, "tail");
    if (rc) return rc;
    if (a->json && eg_dlq_states_load(&a->k, a->lane, &tail_states, kerr, sizeof kerr) < 0)
        fprintf(stderr, "errgate dlq tail: note: annotations not shown: %s\n", kerr);
    for (int i = 0; i < r.n; i++) r.start[i] = r.hi[i] - a->n > r.lo[i] ? r.hi[i] - a->n : r.lo[i];
    char err[1024];
    if (eg_lread_start(&r, a->follow, err, sizeof err) < 0) {
        fprintf(stderr, "errgate dlq tail: %s\n", err);
        eg_lread_close(&r);
        return 1;
    }
    tline *back = NULL;
    size_t nback = 0;
    int live = 0;
    rc = 0;
    while (!eg_dlq_stop) {
        if (!live && r.remaining == 0) { /* the backlog is complete: its last n, in time order */
            if (nback) qsort(back, nback, sizeof *back, cmp_lines);
            for (size_t i = 0; i < nback; i++) {
                if (nback - i <= (size_t)a->n) puts(back[i].text);
                free(back[i].text);
            }
            free(back);
            back = NULL;
            nback = 0;
            fflush(stdout);
            live = 1;
            if (!a->follow) break;
        }
        rd_kafka_message_t *m;
        int got = eg_lread_next(&r, 200, &m, err, sizeof err);
        if (got < 0) {
            fprintf(stderr, "errgate dlq tail: %s\n", err);
            rc = 1;
            break;
        }
        if (got != 1) continue;
        char *line = a->json ? tail_json(m, a->payload) : tail_line(m, a->payload);
        if (live) {
            puts(line);
            fflush(stdout);
            free(line);
        } else {
            back = eg_xrealloc(back, (nback + 1) * sizeof *back);
            back[nback++] = (tline){.ts = ts_of(m), .partition = m->partition, .offset = m->offset, .text = line};
        }
        rd_kafka_message_destroy(m);
    }
    for (size_t i = 0; i < nback; i++) free(back[i].text);
    free(back);
    eg_lread_close(&r);
    eg_dlq_foreign_done();
    eg_dlq_states_free(&tail_states);
    return rc;
}

/* ---- resolve -------------------------------------------------------------- */

/* Writes status st (with --reason) for the n item ids to LANE.state, with
 * author (NULL: user@host) and since[i] (NULL: none), and waits for every
 * report; the JSON of the last record goes into json. Returns 0 when every
 * write was confirmed, else 1 after saying so on stderr. */
static int write_states(const args *a, int parts, const char *author, const char *const *ids, const int64_t *since,
                        size_t n, eg_dlq_status st, const eg_dlq_states *known, const char *cmd, char *json,
                        size_t jsonlen) {
    eg_dlq_writer w;
    char err[1024], note[600];
    if (eg_dlq_writer_open(&w, &a->k, a->lane, parts, author, note, sizeof note, err, sizeof err) < 0) {
        fprintf(stderr, "errgate dlq %s: %s\n", cmd, err);
        return 1;
    }
    if (*note) fprintf(stderr, "errgate dlq %s: note: %s\n", cmd, note);
    w.known = known;
    for (size_t i = 0; i < n && !eg_dlq_stop; i++)
        if (eg_dlq_writer_put(&w, ids[i], st, a->reason, since ? since[i] : -1, json, jsonlen) < 0) break;
    long bad = eg_dlq_writer_flush(&w, 30000), done = w.written;
    if (bad || done < (long)n)
        fprintf(stderr, "errgate dlq %s: %s: %ld of %zu write(s) not confirmed: %s\n", cmd, w.topic, (long)n - done, n,
                bad ? rd_kafka_err2str(w.last_err) : "interrupted");
    eg_dlq_writer_close(&w);
    return bad || done < (long)n ? 1 : 0;
}

/* `dlq resolve`: writes the state record of one item (--id) with --status
 * and --reason to LANE.state, creating that topic first when it can.
 * Returns the exit code. */
static int cmd_resolve(const args *a) {
    if (!a->id || !*a->id) return usage_error("resolve: --id ID is required");
    if (!a->status) return usage_error("resolve: --status is required (replayed, accepted-loss or closed)");
    int st = eg_dlq_status_parse(a->status);
    if (st < 0) {
        char why[300];
        snprintf(why, sizeof why, "resolve: --status '%s' is not one of replayed, accepted-loss, closed", a->status);
        return usage_error(why);
    }
    if (st == EG_DLQ_ACCEPTED_LOSS && blank(a->reason))
        return usage_error("resolve: accepted-loss needs --reason TEXT (why the loss is accepted)");
    if (a->reason && strlen(a->reason) > 1000) return usage_error("resolve: --reason is longer than 1000 bytes");

    /* the id must name an item of this lane */
    eg_lread r;
    int rc = open_lane(a, &r, "resolve");
    if (rc) return rc;
    char err[1024];
    int found = 0;
    void *key = NULL; /* the item's record key (its fence's, dlq_fence.c) */
    size_t klen = 0;
    rc = eg_lread_start(&r, 0, err, sizeof err);
    rd_kafka_message_t *m;
    while (rc == 0 && !found && !eg_dlq_stop) {
        int got = eg_lread_next(&r, 200, &m, err, sizeof err);
        if (got == 2) break;
        if (got < 0) rc = -1;
        if (got != 1) continue;
        char id[320];
        eg_dlq_item_id(m, id, sizeof id);
        found = !strcmp(id, a->id);
        if (found && m->key) {
            klen = m->key_len;
            key = eg_xmalloc(klen ? klen : 1);
            if (klen) memcpy(key, m->key, klen);
        }
        rd_kafka_message_destroy(m);
    }
    int parts = r.n;
    eg_lread_close(&r);
    if (rc < 0 || (!found && eg_dlq_stop)) {
        fprintf(stderr, "errgate dlq resolve: %s\n", rc < 0 ? err : "interrupted; nothing written");
        free(key);
        return 1;
    }
    if (!found) {
        fprintf(stderr, "errgate dlq resolve: --id %s: no record of %s carries that id\n", a->id, a->lane);
        return 2;
    }

    char json[4096], topic[512];
    if (write_states(a, parts, NULL, &a->id, NULL, 1, (eg_dlq_status)st, NULL, "resolve", json, sizeof json)) {
        free(key);
        return 1;
    }
    eg_dlq_state_topic(a->lane, topic, sizeof topic);
    printf("%s %s in %s: %s\n", a->id, a->status, topic, json);
    /* a key fenced behind this item (source.fence = "ladder+dlq") is told through the fence topic */
    char note[600];
    int told = eg_dlq_fence_resolved(&a->k, a->id, key, klen, note, sizeof note, err, sizeof err);
    free(key);
    if (*note) fprintf(stderr, "errgate dlq resolve: note: %s\n", note);
    if (told < 0) {
        fprintf(stderr, "errgate dlq resolve: the state is written, but a fence this item heads is not told: %s\n",
                err);
        return 1;
    }
    if (told)
        printf("%s resolved in the fence topic: the gateway that fences its key lets the next record go\n", a->id);
    return 0;
}

/* ---- approve -------------------------------------------------------------- */

/* An item `dlq approve` selected: its id, the line that reports it, and
 * the timestamp of its oldest pending copy (the approval's "since"). */
typedef struct aitem {
    char *id, *line;
    int64_t since;
} aitem;

/* 1 when lane record m is selected by --id (its item id is id), --class or
 * --where (evaluated by w), 0 when not, -1 with err when --where failed. */
static int approve_selects(const args *a, eg_where *w, const rd_kafka_message_t *m, const char *id, char *err,
                           size_t errlen) {
    if (a->id) return !strcmp(id, a->id);
    if (a->klass) {
        char k[256];
        return eg_header_str(m, EG_H_CLASS, k, sizeof k) == 0 && !strcmp(k, a->klass);
    }
    return eg_where_eval(w, m, err, errlen);
}

/* `dlq approve`: reads the whole lane with the states of its items, picks
 * the selected items that await approval (see the file comment) and writes
 * `approved` for each (once per item id). Returns the exit code. */
static int cmd_approve(const args *a) {
    int nsel = (a->id != NULL) + (a->where != NULL) + (a->klass != NULL);
    if (nsel != 1) return usage_error("approve: give exactly one of --id ID, --where EXPR, --class C");
    if ((a->id && !*a->id) || (a->klass && !*a->klass) || (a->where && !*a->where))
        return usage_error("approve: --id, --where and --class need a non-empty value");
    if (blank(a->author)) return usage_error("approve: --by NAME is required (who approves)");
    if (strlen(a->author) > 200) return usage_error("approve: --by is longer than 200 bytes");
    if (a->reason && strlen(a->reason) > 1000) return usage_error("approve: --reason is longer than 1000 bytes");
    char err[1024];
    eg_where *w = NULL;
    if (a->where && !(w = eg_where_new(a->where, EG_DEF_POLICY_TIMEOUT_MS, err, sizeof err))) {
        fprintf(stderr, "errgate dlq approve: %s\n", err);
        return 2;
    }
    eg_dlq_states st;
    memset(&st, 0, sizeof st);
    eg_lread r;
    int rc = open_lane(a, &r, "approve");
    if (rc) {
        eg_where_free(w);
        return rc;
    }
    if (eg_dlq_states_load(&a->k, a->lane, &st, err, sizeof err) < 0 || eg_lread_start(&r, 0, err, sizeof err) < 0)
        rc = -1;
    eg_strmap seen = {0};
    aitem *items = NULL;
    size_t n = 0;
    long left[EG_DLQ__N] = {0}, matched = 0;
    eg_dlq_status idst = EG_DLQ_OPEN; /* --id: the state it was found in (approved, if a copy is) */
    int where_failed = 0;
    rd_kafka_message_t *m;
    while (rc == 0 && !eg_dlq_stop) {
        int got = eg_lread_next(&r, 200, &m, err, sizeof err);
        if (got == 2) break;
        if (got < 0) rc = -1;
        if (got != 1) continue;
        char id[320];
        eg_dlq_status s = eg_dlq_item_state(&st, m, id, sizeof id);
        int sel = approve_selects(a, w, m, id, err, sizeof err);
        if (sel < 0) {
            char e[1100];
            snprintf(e, sizeof e, "--where failed on %s/%d/%lld: %s", a->lane, (int)m->partition, (long long)m->offset,
                     err);
            eg_strlcpy(err, e, sizeof err);
            where_failed = 1;
            rc = -1;
        }
        if (sel == 1) {
            matched++;
            if (idst != EG_DLQ_APPROVED) idst = s;
            int take = s == EG_DLQ_PENDING || (a->id && s == EG_DLQ_OPEN);
            int64_t at = take ? eg_strmap_get(&seen, id, strlen(id)) : -1, ts = ts_of(m);
            if (!take) {
                left[s]++;
            } else if (at >= 0) { /* another copy of an item taken: the approval reaches back to it */
                if (ts < items[at].since) items[at].since = ts;
            } else {
                char klass[200], code[200], shown[400], line[1200];
                eg_printable(id, strlen(id), shown, sizeof shown); /* an errgate.id is a foreign header too */
                eg_dlq_column(shown, sizeof shown);
                eg_dlq_header_text(m, EG_H_CLASS, klass, sizeof klass);
                eg_dlq_header_text(m, EG_H_CODE, code, sizeof code);
                eg_dlq_column(klass, sizeof klass);
                eg_dlq_column(code, sizeof code);
                snprintf(line, sizeof line, "%s %s/%d/%lld class=%s code=%s", shown, a->lane, (int)m->partition,
                         (long long)m->offset, klass, code);
                eg_strmap_put(&seen, id, strlen(id), (int64_t)n);
                items = eg_xrealloc(items, (n + 1) * sizeof *items);
                items[n++] = (aitem){.id = eg_xstrdup(id), .line = eg_xstrdup(line), .since = ts};
            }
        }
        rd_kafka_message_destroy(m);
    }
    int parts = r.n;
    eg_lread_close(&r);
    eg_where_free(w);
    if (rc == 0 && eg_dlq_stop) {
        eg_strlcpy(err, "interrupted; nothing written", sizeof err);
        rc = -1;
    }
    if (rc < 0) {
        fprintf(stderr, "errgate dlq approve: %s\n", err);
        rc = where_failed ? 2 : 1;
    } else if (a->id && !matched) {
        fprintf(stderr, "errgate dlq approve: --id %s: no record of %s carries that id\n", a->id, a->lane);
        rc = 2;
    } else if (a->id && !n) {
        int done = idst == EG_DLQ_APPROVED;
        fprintf(stderr, "errgate dlq approve: --id %s is %s: %s\n", a->id, eg_dlq_status_name(idst),
                done ? "already approved, nothing written" : "a resolved item cannot be approved");
        rc = done ? 0 : 2;
    } else {
        const char **ids = eg_xcalloc(n ? n : 1, sizeof *ids);
        int64_t *since = eg_xcalloc(n ? n : 1, sizeof *since);
        for (size_t i = 0; i < n; i++) ids[i] = items[i].id, since[i] = items[i].since;
        char json[4096];
        if (!a->dry && n)
            rc = write_states(a, parts, a->author, ids, since, n, EG_DLQ_APPROVED, &st, "approve", json, sizeof json);
        free(ids);
        free(since);
        if (rc == 0) {
            for (size_t i = 0; i < n; i++) printf("%s %s\n", a->dry ? "would approve" : "approved", items[i].line);
            printf("%s %zu", a->dry ? "dry run, nothing written: would approve" : "approved", n);
            int any = 0;
            for (int s = 0; s < EG_DLQ__N; s++)
                if (left[s]) printf("%s %s %ld", any++ ? "," : "  left alone:", eg_dlq_status_name(s), left[s]);
            printf("\n");
        }
    }
    for (size_t i = 0; i < n; i++) free(items[i].id), free(items[i].line);
    free(items);
    eg_strmap_free(&seen);
    eg_dlq_states_free(&st);
    return rc;
}

int eg_cmd_dlq(int argc, char **argv) {
    if (argc < 2) return usage_error("missing subcommand (stats, tail, resolve, approve, annotate or watch)");
    const char *sub = argv[1];
    if (eg_is_help(sub) || !strcmp(sub, "help")) {
        usage();
        return EG_EXIT_OK;
    }
    if (!strcmp(sub, "watch")) return eg_cmd_dlq_watch(argc, argv);
    if (!strcmp(sub, "annotate")) return eg_cmd_dlq_annotate(argc, argv);
    if (strcmp(sub, "stats") && strcmp(sub, "tail") && strcmp(sub, "resolve") && strcmp(sub, "approve")) {
        char why[300];
        snprintf(why, sizeof why, "unknown subcommand '%s'%s", sub, eg_dash_hint(sub));
        return usage_error(why);
    }
    args a;
    int rc = parse(argc, argv, sub, &a);
    if (rc) return rc < 0 ? EG_EXIT_OK : rc;
    eg_dlq_catch_signals();
    if (!strcmp(sub, "stats")) rc = cmd_stats(&a);
    else if (!strcmp(sub, "tail")) rc = cmd_tail(&a);
    else if (!strcmp(sub, "approve")) rc = cmd_approve(&a);
    else rc = cmd_resolve(&a);
    eg_dlq_release_signals();
    return rc;
}
