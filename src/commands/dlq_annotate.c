/* dlq_annotate.c — `errgate dlq annotate`: who owns a dead letter, how
 * severe it is, and a note, recorded beside its lifecycle status.
 *
 *   errgate dlq annotate LANE (-b|-c) --id ID [--owner O] [--severity S] [--note TEXT] [--by NAME]
 *
 * An annotation is one state record in LANE.state keyed
 * "annotation:ID" (dlq.h), a JSON object {owner, severity, note, at, by},
 * signed like the status records (kind "state", errgate.sig) when the
 * deployment has a control key. The state topic is compacted, so the
 * latest annotation of an item is the one kept: this command reads the
 * current one first and writes the merged whole (an --owner alone keeps the
 * note). `dlq tail --json` shows the fields and `dlq stats --by
 * owner|severity` counts by them; readers with a control key ignore an
 * annotation that is not signed with it.
 *
 * What an operator types is checked before anything is written: the id
 * must name a record of the lane, an owner is 1 to 128 printable bytes, a
 * severity one of critical, high, medium, low, info, a note at most 1,000
 * bytes without control characters. Exit codes: 0 written, 1 Kafka
 * failure, 2 bad arguments or an unknown id. */
#include "cli.h"
#include "dlq.h"
#include "json.h"
#include "kcli.h"
#include "text.h"
#include "util.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct aargs {
    eg_kcli k;
    const char *lane, *id, *owner, *severity, *note, *by;
} aargs;

static void usage(void) {
    printf("usage: errgate dlq annotate LANE (-b BOOTSTRAP | -c CONFIG) --id ID [--owner O]\n"
           "               [--severity critical|high|medium|low|info] [--note TEXT] [--by NAME] [--key-file F]\n"
           "  records who owns item ID, how severe it is and a note, in LANE.state (key annotation:ID,\n"
           "  signed with the control key when there is one); what is not given is kept from the\n"
           "  item's current annotation. dlq tail --json shows it, dlq stats --by owner|severity counts it.\n"
           "  --by NAME   the author (default $USER@host)\n");
}

static int usage_error(const char *why) { return eg_usage_error("dlq annotate", "%s", why); }

static const char *const severities[] = {"critical", "high", "medium", "low", "info", NULL};

/* 1 when s (n bytes) has no byte below 0x20 or 0x7f (a note may hold
 * UTF-8 beyond ASCII), 0 otherwise. */
static int no_controls(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

/* Parses argv (argv[0] "dlq", argv[1] "annotate"). Returns 0, -1 after
 * the help, or the exit code 2 of a usage error. */
static int parse(int argc, char **argv, aargs *a) {
    memset(a, 0, sizeof *a);
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
        const char **slot = !strcmp(o, "--id")         ? &a->id
                            : !strcmp(o, "--owner")    ? &a->owner
                            : !strcmp(o, "--severity") ? &a->severity
                            : !strcmp(o, "--note")     ? &a->note
                            : !strcmp(o, "--by")       ? &a->by
                                                       : NULL;
        if (slot) {
            if (i + 1 >= argc) {
                snprintf(why, sizeof why, "%s needs a value", o);
                return usage_error(why);
            }
            *slot = argv[++i];
            continue;
        }
        if (o[0] == '-' || a->lane) {
            snprintf(why, sizeof why, "%s '%s'%s", o[0] == '-' ? "unknown option" : "unexpected argument", o,
                     eg_dash_hint(o));
            return usage_error(why);
        }
        a->lane = o;
    }
    if (!a->lane) return usage_error("LANE is required");
    if (!a->id || !*a->id) return usage_error("--id ID is required");
    if (strlen(a->id) > 300) return usage_error("--id is longer than 300 bytes");
    if (!a->owner && !a->severity && !a->note) return usage_error("give at least one of --owner, --severity, --note");
    if (a->owner && (!*a->owner || strlen(a->owner) > 128 || !no_controls(a->owner, strlen(a->owner))))
        return usage_error("--owner must be 1 to 128 bytes without control characters");
    if (a->by && (!*a->by || strlen(a->by) > 200 || !no_controls(a->by, strlen(a->by))))
        return usage_error("--by must be 1 to 200 bytes without control characters");
    if (a->severity) {
        int ok = 0;
        for (const char *const *s = severities; *s && !ok; s++) ok = !strcmp(*s, a->severity);
        if (!ok) {
            snprintf(why, sizeof why, "--severity '%.100s' is not one of critical, high, medium, low, info",
                     a->severity);
            return usage_error(why);
        }
    }
    if (a->note && (strlen(a->note) > 1000 || !no_controls(a->note, strlen(a->note))))
        return usage_error("--note must be at most 1000 bytes without control characters");
    return 0;
}

/* Reads the lane for a record whose item id is id. Returns 1 found, 0 not
 * found, -1 with err; *parts receives the lane's partition count. */
static int find_id(const aargs *a, const char *id, int *parts, char *err, size_t errlen) {
    rd_kafka_conf_t *conf = eg_kcli_conf(&a->k, "errgate-dlq", err, errlen);
    if (!conf) return -1;
    eg_lread r;
    int rc = eg_lread_open(&r, conf, NULL, a->lane, err, errlen);
    if (rc < 0) return -1;
    int found = 0;
    rc = eg_lread_start(&r, 0, err, errlen);
    rd_kafka_message_t *m;
    while (rc == 0 && !found && !eg_dlq_stop) {
        int got = eg_lread_next(&r, 200, &m, err, errlen);
        if (got == 2) break;
        if (got < 0) rc = -1;
        if (got != 1) continue;
        char mid[320];
        eg_dlq_item_id(m, mid, sizeof mid);
        found = !strcmp(mid, id);
        rd_kafka_message_destroy(m);
    }
    *parts = r.n;
    eg_lread_close(&r);
    if (rc == 0 && !found && eg_dlq_stop) {
        snprintf(err, errlen, "interrupted; nothing written");
        return -1;
    }
    return rc < 0 ? -1 : found;
}

/* Appends `,"name":"value"` to b when value is set: the new one, else the
 * one of the current annotation. */
static void member(struct evbuffer *b, const eg_dlq_states *st, const char *id, const char *name, const char *value) {
    char cur[1200];
    if (!value && eg_dlq_states_annotation(st, id, name, cur, sizeof cur) == 0) value = cur;
    if (!value) return;
    evbuffer_add_printf(b, ",\"%s\":", name);
    eg_json_str(b, value);
}

int eg_cmd_dlq_annotate(int argc, char **argv) {
    aargs a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? EG_EXIT_OK : rc;
    eg_dlq_catch_signals();
    char err[1024];
    int parts = 0, found = find_id(&a, a.id, &parts, err, sizeof err);
    if (found <= 0) {
        eg_dlq_release_signals();
        if (found < 0) fprintf(stderr, "errgate dlq annotate: %s\n", err);
        else fprintf(stderr, "errgate dlq annotate: --id %s: no record of %s carries that id\n", a.id, a.lane);
        return found < 0 ? 1 : 2;
    }
    eg_dlq_states st;
    memset(&st, 0, sizeof st);
    if (eg_dlq_states_load(&a.k, a.lane, &st, err, sizeof err) < 0) {
        eg_dlq_release_signals();
        fprintf(stderr, "errgate dlq annotate: %s\n", err);
        eg_dlq_states_free(&st);
        return 1;
    }
    eg_dlq_writer w;
    char note[600];
    if (eg_dlq_writer_open(&w, &a.k, a.lane, parts, a.by, note, sizeof note, err, sizeof err) < 0) {
        eg_dlq_release_signals();
        fprintf(stderr, "errgate dlq annotate: %s\n", err);
        eg_dlq_states_free(&st);
        return 1;
    }
    if (*note) fprintf(stderr, "errgate dlq annotate: note: %s\n", note);
    struct evbuffer *b = evbuffer_new();
    char at[40], key[400];
    eg_rfc3339(eg_wall_ms(), at, sizeof at);
    evbuffer_add_printf(b, "{\"annotation\":true");
    member(b, &st, a.id, "owner", a.owner);
    member(b, &st, a.id, "severity", a.severity);
    member(b, &st, a.id, "note", a.note);
    member(b, &st, a.id, "at", at);
    member(b, &st, a.id, "by", w.by);
    evbuffer_add(b, "}", 1);
    char *json = eg_json_take(b);
    size_t n = strlen(json);
    snprintf(key, sizeof key, "%s%s", EG_DLQ_ANNOTATION_PREFIX, a.id);
    rd_kafka_headers_t *h = eg_dlq_state_headers(&w.key, key, json, n);
    rd_kafka_resp_err_t x = rd_kafka_producev(w.rk, RD_KAFKA_V_TOPIC(w.topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                              RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(json, n),
                                              RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (x) {
        rd_kafka_headers_destroy(h);
        w.failed++;
        w.last_err = x;
    } else {
        w.inflight++;
    }
    long bad = eg_dlq_writer_flush(&w, 30000);
    if (bad) fprintf(stderr, "errgate dlq annotate: %s: not written: %s\n", w.topic, rd_kafka_err2str(w.last_err));
    else printf("annotated %s in %s: %s\n", a.id, w.topic, json);
    free(json);
    eg_dlq_writer_close(&w);
    eg_dlq_states_free(&st);
    eg_dlq_release_signals();
    return bad ? 1 : 0;
}
