/* cmd_dlq.c — `errgate dlq stats|tail|resolve`: look into a lane and record
 * what became of its items.
 *
 *   errgate dlq stats LANE (-b|-c) [--by class|code|reason|original.topic|policy] [--since DUR]
 *   errgate dlq tail LANE (-b|-c) [-f] [--payload] [-n N]
 *   errgate dlq resolve LANE (-b|-c) --id ID --status replayed|accepted-loss|closed [--reason TEXT]
 *
 * stats reads the whole lane (or the records of the last DUR, by lane
 * timestamp) and prints an aligned table: one row per value of the --by
 * header (default class; "-" when absent), with RECORDS, OPEN and RESOLVED
 * per row, rows by count then name, a total row, and one line of resolved
 * counts per status. Open versus resolved follows the lifecycle rule of
 * dlq.h (latest status per id, not older than the record).
 *
 * tail prints the last N records (default 10) of the lane in timestamp
 * order, one line each:
 *   TIME ORIGINAL class=C code=X reason=R retry.count=N message="..."
 * TIME is error.timestamp (else the record's timestamp), ORIGINAL is
 * original.topic/partition/offset; values are escaped so that a line stays
 * one line. The key and value are printed (key="..." value="...") only with
 * --payload. -f keeps printing new records until SIGINT or SIGTERM (exit 0).
 *
 * resolve checks that a record of the lane carries the id, then writes the
 * status to the state topic (creating it compacted when it can, dlq_state.c)
 * and waits for the delivery report. accepted-loss needs a non-blank
 * --reason. Exit codes: 0 done, 1 Kafka failure, 2 bad arguments, a missing
 * topic or an unknown id. None of these commands joins a consumer group. */
#include "cli.h"
#include "dlq.h"
#include "dlq_foreign.h"
#include "headers.h"
#include "kcli.h"
#include "parse.h"
#include "record.h"
#include "text.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the usage text of `errgate dlq` on stdout. */
static void usage(void) {
    printf("usage: errgate dlq stats LANE (-b BOOTSTRAP | -c CONFIG) [--by class|code|reason|original.topic|policy] "
           "[--since DUR]\n"
           "       errgate dlq tail LANE (-b BOOTSTRAP | -c CONFIG) [-f] [--payload] [-n N]\n"
           "       errgate dlq resolve LANE (-b BOOTSTRAP | -c CONFIG) --id ID --status replayed|accepted-loss|closed "
           "[--reason TEXT]\n"
           "\n"
           "  stats         counts per --by value (default class), open versus resolved\n"
           "  tail          the last -n (10) records, one line each; -f follows; --payload adds the value\n"
           "  resolve       records what became of item --id in the compacted topic LANE.state;\n"
           "                accepted-loss needs --reason\n"
           "  -b, -c        broker address, or a gateway config to take the kafka settings from\n"
           "                (else $ERRGATE_BOOTSTRAP)\n"
           "  --since DUR   only records written in the last DUR (90s, 15m, 2h, 7d)\n");
}

/* One line naming what is wrong on stderr; returns the exit code 2. */
static int usage_error(const char *why) { return eg_usage_error("dlq", "%s", why); }

typedef struct args {
    eg_kcli k;
    const char *lane, *by, *since, *id, *status, *reason;
    int follow, payload;
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
        int tail = !strcmp(sub, "tail"), stats = !strcmp(sub, "stats"), res = !strcmp(sub, "resolve");
        if (tail && (!strcmp(o, "-f") || !strcmp(o, "--follow"))) {
            a->follow = 1;
            continue;
        }
        if (tail && !strcmp(o, "--payload")) {
            a->payload = 1;
            continue;
        }
        const char **slot = NULL;
        if (stats && !strcmp(o, "--by")) slot = &a->by;
        else if (stats && !strcmp(o, "--since")) slot = &a->since;
        else if (res && !strcmp(o, "--id")) slot = &a->id;
        else if (res && !strcmp(o, "--status")) slot = &a->status;
        else if (res && !strcmp(o, "--reason")) slot = &a->reason;
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
            snprintf(why, sizeof why, "%s: %s '%s'", sub, o[0] == '-' ? "unknown option" : "unexpected argument", o);
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
    long records, open, resolved;
} srow;

/* qsort order of the stats rows: most records first, then by name. */
static int cmp_rows(const void *x, const void *y) {
    const srow *a = x, *b = y;
    if (a->records != b->records) return a->records < b->records ? 1 : -1;
    return strcmp(a->name, b->name);
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
                  {"policy", EG_H_POLICY}};
    const char *by = a->by ? a->by : "class", *header = NULL;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!strcmp(by, fields[i].by)) header = fields[i].header;
    if (!header) {
        char why[300];
        snprintf(why, sizeof why, "stats: --by '%s' is not one of class, code, reason, original.topic, policy", by);
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
        if (eg_header_str(m, header, val, sizeof val) < 0 || !*val) eg_strlcpy(val, "-", sizeof val);
        eg_dlq_foreign_fill(m, header, val, sizeof val); /* a foreign DLQ's code, original.topic */
        eg_dlq_item_id(m, id, sizeof id);
        eg_dlq_status s = eg_dlq_states_status(&st, id, ts);
        int64_t at = eg_strmap_get(&idx, val, strlen(val));
        if (at < 0) {
            rows = eg_xrealloc(rows, (nrows + 1) * sizeof *rows);
            rows[nrows] = (srow){.name = eg_xstrdup(val)};
            at = (int64_t)nrows++;
            eg_strmap_put(&idx, val, strlen(val), at);
        }
        rows[at].records++;
        if (s == EG_DLQ_OPEN) rows[at].open++;
        else rows[at].resolved++;
        by_status[s]++;
        rd_kafka_message_destroy(m);
    }
    if (rc < 0) fprintf(stderr, "errgate dlq stats: %s\n", err);
    else if (eg_dlq_stop) rc = -1;
    if (rc == 0) {
        if (nrows) qsort(rows, nrows, sizeof *rows, cmp_rows);
        char head[64];
        size_t hl = 0;
        for (const char *p = by; *p && hl + 1 < sizeof head; p++) head[hl++] = (char)toupper((unsigned char)*p);
        head[hl] = '\0';
        eg_table t;
        eg_table_init(&t, 4);
        const char *h[] = {head, "RECORDS", "OPEN", "RESOLVED"};
        eg_table_add(&t, h);
        long tot[3] = {0};
        for (size_t i = 0; i <= nrows; i++) {
            char c[3][24];
            long v[3];
            if (i < nrows) {
                v[0] = rows[i].records, v[1] = rows[i].open, v[2] = rows[i].resolved;
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
    }
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

/* The header as escaped printable text, "-" when absent. */
static void hval(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen) {
    size_t n = 0;
    const void *v = eg_header(m, name, &n);
    if (!v) eg_strlcpy(out, "-", outlen);
    else eg_printable(v, n, out, outlen);
}

/* The tail line of m (malloc'ed). */
static char *tail_line(const rd_kafka_message_t *m, int payload) {
    char time[64], ot[300], op[32], oo[32], klass[200], code[200], reason[200], rc[32], msg[1200];
    hval(m, EG_H_TIMESTAMP, time, sizeof time);
    if (!strcmp(time, "-")) eg_rfc3339(ts_of(m), time, sizeof time);
    hval(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
    hval(m, EG_H_ORIG_PARTITION, op, sizeof op);
    hval(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
    hval(m, EG_H_CLASS, klass, sizeof klass);
    hval(m, EG_H_CODE, code, sizeof code);
    hval(m, EG_H_REASON, reason, sizeof reason);
    hval(m, EG_H_RETRY_COUNT, rc, sizeof rc);
    hval(m, EG_H_MESSAGE, msg, sizeof msg);
    /* a foreign DLQ's (dlq_foreign.h) where errgate's headers are absent */
    eg_dlq_foreign_fill(m, EG_H_ORIG_TOPIC, ot, sizeof ot);
    eg_dlq_foreign_fill(m, EG_H_ORIG_PARTITION, op, sizeof op);
    eg_dlq_foreign_fill(m, EG_H_ORIG_OFFSET, oo, sizeof oo);
    eg_dlq_foreign_fill(m, EG_H_CODE, code, sizeof code);
    eg_dlq_foreign_fill(m, EG_H_MESSAGE, msg, sizeof msg);
    size_t cap = 2560 + (payload ? 4 * (m->len + m->key_len) + 64 : 0);
    char *line = eg_xmalloc(cap);
    int n = snprintf(line, cap, "%s %s/%s/%s class=%s code=%s reason=%s retry.count=%s message=\"%s\"", time, ot, op,
                     oo, klass, code, reason, rc, msg);
    if (payload && n > 0 && (size_t)n < cap) {
        size_t kcap = 4 * m->key_len + 8, vcap = 4 * m->len + 8;
        char *k = eg_xmalloc(kcap), *v = eg_xmalloc(vcap);
        eg_strlcpy(k, "-", kcap);
        eg_strlcpy(v, "-", vcap);
        if (m->key) k[0] = '"', eg_printable(m->key, m->key_len, k + 1, kcap - 2), strcat(k, "\"");
        if (m->payload) v[0] = '"', eg_printable(m->payload, m->len, v + 1, vcap - 2), strcat(v, "\"");
        snprintf(line + n, cap - (size_t)n, " key=%s value=%s", k, v);
        free(k);
        free(v);
    }
    return line;
}

/* `dlq tail`: prints the last -n records of the lane in time order (read
 * from the last -n of each partition), one escaped printable line each;
 * with -f then follows new records until SIGINT/SIGTERM. Returns the exit
 * code. */
static int cmd_tail(const args *a) {
    eg_lread r;
    int rc = open_lane(a, &r, "tail");
    if (rc) return rc;
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
        char *line = tail_line(m, a->payload);
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
    return rc;
}

/* ---- resolve -------------------------------------------------------------- */

static void on_state_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    rd_kafka_resp_err_t *out = opaque;
    *out = m->err;
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
    int blank = 1;
    for (const char *p = a->reason ? a->reason : ""; *p; p++) blank &= isspace((unsigned char)*p) != 0;
    if (st == EG_DLQ_ACCEPTED_LOSS && blank)
        return usage_error("resolve: accepted-loss needs --reason TEXT (why the loss is accepted)");
    if (a->reason && strlen(a->reason) > 1000) return usage_error("resolve: --reason is longer than 1000 bytes");

    /* the id must name an item of this lane */
    eg_lread r;
    int rc = open_lane(a, &r, "resolve");
    if (rc) return rc;
    char err[1024];
    int found = 0;
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
        rd_kafka_message_destroy(m);
    }
    int parts = r.n;
    eg_lread_close(&r);
    if (rc < 0 || (!found && eg_dlq_stop)) {
        fprintf(stderr, "errgate dlq resolve: %s\n", rc < 0 ? err : "interrupted; nothing written");
        return 1;
    }
    if (!found) {
        fprintf(stderr, "errgate dlq resolve: --id %s: no record of %s carries that id\n", a->id, a->lane);
        return 2;
    }

    rd_kafka_resp_err_t dr = RD_KAFKA_RESP_ERR__IN_PROGRESS;
    rd_kafka_t *prod = eg_dlq_producer(&a->k, "errgate-dlq", on_state_delivery, &dr, err, sizeof err);
    if (!prod) {
        fprintf(stderr, "errgate dlq resolve: %s\n", err);
        return 2;
    }
    char topic[512], note[600], by[300], json[4096];
    eg_dlq_state_topic(a->lane, topic, sizeof topic);
    eg_dlq_whoami(by, sizeof by);
    rc = eg_dlq_state_ensure(prod, topic, parts, note, sizeof note, err, sizeof err);
    if (rc == 0 && *note) fprintf(stderr, "errgate dlq resolve: note: %s\n", note);
    int64_t now = eg_wall_ms();
    int n = eg_dlq_state_json((eg_dlq_status)st, a->reason, now, by, json, sizeof json);
    rd_kafka_resp_err_t x = n < 0 ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE : RD_KAFKA_RESP_ERR_NO_ERROR;
    if (rc == 0 && !x)
        x = rd_kafka_producev(prod, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                              RD_KAFKA_V_KEY(a->id, strlen(a->id)), RD_KAFKA_V_VALUE(json, (size_t)n),
                              RD_KAFKA_V_TIMESTAMP(now), RD_KAFKA_V_END);
    if (rc == 0 && !x) {
        rd_kafka_flush(prod, 30000);
        x = dr == RD_KAFKA_RESP_ERR__IN_PROGRESS ? RD_KAFKA_RESP_ERR__TIMED_OUT : dr;
    }
    if (rc < 0) fprintf(stderr, "errgate dlq resolve: %s\n", err);
    else if (x) fprintf(stderr, "errgate dlq resolve: %s: write failed: %s\n", topic, rd_kafka_err2str(x));
    else printf("%s %s in %s: %s\n", a->id, a->status, topic, json);
    rd_kafka_destroy(prod);
    return rc < 0 || x ? 1 : 0;
}

int eg_cmd_dlq(int argc, char **argv) {
    if (argc < 2) return usage_error("missing subcommand (stats, tail or resolve)");
    const char *sub = argv[1];
    if (eg_is_help(sub) || !strcmp(sub, "help")) {
        usage();
        return EG_EXIT_OK;
    }
    if (strcmp(sub, "stats") && strcmp(sub, "tail") && strcmp(sub, "resolve")) {
        char why[300];
        snprintf(why, sizeof why, "unknown subcommand '%s'", sub);
        return usage_error(why);
    }
    args a;
    int rc = parse(argc, argv, sub, &a);
    if (rc) return rc < 0 ? EG_EXIT_OK : rc;
    eg_dlq_catch_signals();
    if (!strcmp(sub, "stats")) rc = cmd_stats(&a);
    else if (!strcmp(sub, "tail")) rc = cmd_tail(&a);
    else rc = cmd_resolve(&a);
    eg_dlq_release_signals();
    return rc;
}
