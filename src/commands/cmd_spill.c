/* cmd_spill.c — `errgate spill ls DIR` and `errgate spill drain DIR`: the
 * operator's view of a spill journal and the way to empty it by hand.
 *
 * ls reads only (no lock): one line per file, "NAME FRAMES BYTES STATUS",
 * FRAMES counting every intact frame (damage is skipped, never stops the
 * count), STATUS one of `ok` (sealed, every frame good), `active` (the
 * segment a running owner is appending to), `damaged, lost A..B: REASON;
 * C..D: REASON` (the exact byte ranges no intact frame covers), `corrupt
 * (its intact frames were delivered), lost ...` (a kept *.corrupt file) or
 * `refused (...)` (a *.refused side file), then a line "total SEGMENTS
 * segments, FRAMES frames, BYTES bytes, CORRUPT corrupt, LOST bytes lost,
 * REFUSED refused frames" (FRAMES: the intact frames still to drain) and,
 * when a process holds the journal, "locked by pid=.. role=..".
 *
 * drain takes the journal's lock (so never while a gateway owns it), drains
 * every segment to Kafka (-b BOOTSTRAP or -c CONFIG: kcli.h) until the
 * journal is empty or --timeout-ms passes (default 60 s; it also caps
 * message.timeout.ms, so a delivery that cannot succeed fails, and is
 * retried, within the run), and prints a summary: frames
 * drained, segments deleted, failed delivery attempts (each retried), corrupt
 * segments (each with its intact frame count and lost byte ranges), stubs
 * and frames set aside, and what is left. Exit codes: 0 the journal is
 * empty; 1 something is left (frames not delivered in time, or *.corrupt /
 * *.refused files kept for the operator); 2 usage.
 */
#include "cli.h"
#include "kcli.h"
#include "log.h"
#include "parse.h"
#include "spill.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "s" unless n is 1. */
static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* Prints the usage text of `errgate spill` on stdout. */
static void usage(void) {
    printf("usage: errgate spill ls DIR\n"
           "       errgate spill drain DIR (-b BOOTSTRAP | -c CONFIG) [--timeout-ms N]\n"
           "\n"
           "  ls              one line per segment: NAME FRAMES BYTES STATUS (ok, active,\n"
           "                  corrupt-at-OFFSET), a total, and who holds the journal's lock\n"
           "  drain           produce every frame to Kafka and delete the drained segments;\n"
           "                  takes the lock (never while a gateway owns the journal)\n"
           "  -b, -c          broker address, or a gateway config to take the kafka settings\n"
           "                  from (else $ERRGATE_BOOTSTRAP)\n"
           "  --timeout-ms N  give up after N (default 60s)\n"
           "\n"
           "drain exits 0 only when the journal is empty, 1 when something is left.\n");
}

/* One line naming what is wrong on stderr; returns the exit code 2. */
#define usage_error(...) eg_usage_error("spill", __VA_ARGS__)

/* A journal directory must exist for ls and drain (drain must not create
 * an empty journal where the operator mistyped a path). */
static int need_dir(const char *cmd, const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "errgate spill %s: %s: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "errgate spill %s: %s: not a directory\n", cmd, dir);
        return -1;
    }
    return 0;
}

/* What a scan of one segment file found. */
typedef struct scan_sum {
    uint64_t frames;  /* intact frames */
    uint64_t damaged; /* damaged regions */
    uint64_t lost;    /* their bytes */
    char ranges[512]; /* "A..B: why; C..D: why", cut short with "; ..." */
} scan_sum;

/* Scans one segment file to its end, past damage. Returns 0, or -1 when it
 * cannot be read (the reason in sum->ranges). */
static int scan_file(const char *dir, const char *name, scan_sum *sum) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    memset(sum, 0, sizeof *sum);
    eg_spill_scan *s = eg_spill_scan_open(path, sum->ranges, sizeof sum->ranges);
    if (!s) return -1;
    eg_spill_rec rec;
    int rc;
    const eg_spill_scan_state *st = eg_spill_scan_state_get(s);
    while ((rc = eg_spill_scan_next(s, &rec)) != 0 && !st->ioerr) {
        if (rc == 1) continue;
        size_t used = strlen(sum->ranges);
        char one[240];
        snprintf(one, sizeof one, "%s%llu..%llu: %s", used ? "; " : "", (unsigned long long)st->offset,
                 (unsigned long long)(st->offset + st->bad_len), st->reason);
        if (used + strlen(one) + 6 < sizeof sum->ranges) eg_strlcpy(sum->ranges + used, one, sizeof sum->ranges - used);
        else if (!strstr(sum->ranges, "; ...")) eg_strlcpy(sum->ranges + used, "; ...", sizeof sum->ranges - used);
    }
    sum->frames = st->frames;
    sum->damaged = st->damaged;
    sum->lost = st->damaged_bytes;
    int io = st->ioerr;
    if (io) eg_strlcpy(sum->ranges, st->reason, sizeof sum->ranges);
    eg_spill_scan_close(s);
    return io ? -1 : 0;
}

/* ---------------------------------------------------------------------- ls */

/* `spill ls DIR`: one line per file, a total and the lock's owner (see the
 * file comment). Returns 0, or 1 when the directory or a file cannot be
 * read, 2 on usage errors. */
static int cmd_ls(int argc, char **argv) {
    if (argc < 3) return usage_error("ls: missing DIR");
    if (argv[2][0] == '-') return usage_error("ls: unknown option '%s'%s", argv[2], eg_dash_hint(argv[2]));
    if (argc > 3) return usage_error("ls: unexpected argument '%s'%s", argv[3], eg_dash_hint(argv[3]));
    const char *dir = argv[2];
    if (need_dir("ls", dir) != 0) return 1;
    char owner[128] = "", active[64] = "", err[512];
    int locked = eg_spill_lock_owner(dir, owner, sizeof owner, active, sizeof active) == 1;
    eg_spill_seg *v;
    size_t n;
    if (eg_spill_list(dir, &v, &n, err, sizeof err) != 0) {
        fprintf(stderr, "errgate spill ls: %s\n", err);
        return 1;
    }
    uint64_t tf = 0, tb = 0, tc = 0, tr = 0, tl = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        scan_sum sum;
        if (scan_file(dir, v[i].name, &sum) != 0) {
            fprintf(stderr, "errgate spill ls: %s/%s: %s\n", dir, v[i].name, sum.ranges);
            rc = 1;
            continue;
        }
        char status[700];
        if (v[i].refused)
            snprintf(status, sizeof status, "refused (set aside: Kafka refused them for good; not drained)");
        else if (v[i].corrupt)
            snprintf(status, sizeof status, "corrupt (its intact frames were delivered), lost %s",
                     sum.damaged ? sum.ranges : "nothing");
        else if (locked && strcmp(v[i].name, active) == 0) snprintf(status, sizeof status, "active");
        else if (sum.damaged) snprintf(status, sizeof status, "damaged, lost %s", sum.ranges);
        else snprintf(status, sizeof status, "ok");
        if (sum.damaged || v[i].corrupt) tc++;
        if (v[i].refused) tr += sum.frames;
        else if (!v[i].corrupt) tf += sum.frames;
        tl += sum.lost;
        printf("%-42s %8llu %12llu %s\n", v[i].name, (unsigned long long)sum.frames, (unsigned long long)v[i].bytes,
               status);
        tb += v[i].bytes;
    }
    printf("total %zu segment%s, %llu frame%s, %llu bytes, %llu corrupt, %llu byte%s lost, %llu refused frame%s\n", n,
           plural(n), (unsigned long long)tf, plural(tf), (unsigned long long)tb, (unsigned long long)tc,
           (unsigned long long)tl, plural(tl), (unsigned long long)tr, plural(tr));
    if (locked) printf("locked by %s\n", owner);
    free(v);
    return rc;
}

/* ------------------------------------------------------------------- drain */

/* Prints what the journal still holds after a drain; returns how many
 * files are left, *nkept of them kept for the operator (.corrupt and
 * .refused files: they hold no frame left to drain). */
static size_t report_left(const char *dir, size_t *nkept) {
    eg_spill_seg *v;
    size_t n;
    char err[512];
    *nkept = 0;
    if (eg_spill_list(dir, &v, &n, err, sizeof err) != 0) {
        fprintf(stderr, "errgate spill drain: %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        scan_sum sum;
        if (scan_file(dir, v[i].name, &sum) != 0) {
            printf("unreadable %s: %s\n", v[i].name, sum.ranges);
        } else if (v[i].corrupt) {
            (*nkept)++;
            printf("corrupt %s: %llu intact frame%s (delivered); lost %s\n", v[i].name, (unsigned long long)sum.frames,
                   plural(sum.frames), sum.damaged ? sum.ranges : "nothing");
        } else if (v[i].refused) {
            (*nkept)++;
            printf("refused %s: %llu frame%s Kafka refused for good, set aside\n", v[i].name,
                   (unsigned long long)sum.frames, plural(sum.frames));
        } else {
            printf("left %s: %llu frames, %llu bytes%s%s\n", v[i].name, (unsigned long long)sum.frames,
                   (unsigned long long)v[i].bytes, sum.damaged ? "; damaged, lost " : "",
                   sum.damaged ? sum.ranges : "");
        }
    }
    free(v);
    return n;
}

/* `spill drain DIR`: drains the journal to Kafka under its lock and prints
 * the summary (see the file comment). Returns the exit code. */
static int cmd_drain(int argc, char **argv) {
    if (argc < 3) return usage_error("drain: missing DIR");
    if (argv[2][0] == '-')
        return usage_error("drain: unknown option '%s'%s (DIR comes first)", argv[2], eg_dash_hint(argv[2]));
    const char *dir = argv[2];
    eg_kcli k = {0};
    int64_t timeout_ms = 60000;
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        int r = eg_kcli_opt(&k, argc, argv, &i);
        if (r < 0) return usage_error("drain: %s needs a value", a);
        if (r == 1) continue;
        if (strcmp(a, "--timeout-ms"))
            return usage_error(a[0] == '-' ? "drain: unknown option '%s'%s" : "drain: unexpected argument '%s'%s", a,
                               eg_dash_hint(a));
        if (i + 1 >= argc) return usage_error("drain: %s needs a value", a);
        if (eg_parse_duration_ms(argv[++i], &timeout_ms) != 0 || timeout_ms <= 0 || timeout_ms > INT32_MAX)
            return usage_error("drain: --timeout-ms: not a duration: %s", argv[i]);
    }
    if (k.bootstrap && k.config) return usage_error("drain: give -b BOOTSTRAP or -c CONFIG, not both");
    if (need_dir("drain", dir) != 0) return 1;
    eg_log_setup(EG_WARN, 1);
    char err[512];
    rd_kafka_conf_t *conf = eg_kcli_conf(&k, "errgate-spill-drain", err, sizeof err);
    if (!conf) {
        fprintf(stderr, "errgate spill drain: %s\n", err);
        return 2;
    }
    /* a delivery that cannot succeed should fail (and be retried) within the run */
    char v[32];
    size_t vlen = sizeof v;
    if (rd_kafka_conf_get(conf, "message.timeout.ms", v, &vlen) == RD_KAFKA_CONF_OK && atoll(v) > timeout_ms) {
        snprintf(v, sizeof v, "%lld", (long long)timeout_ms);
        rd_kafka_conf_set(conf, "message.timeout.ms", v, err, sizeof err);
    }
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.role = "drain"}, err, sizeof err);
    if (!j) {
        rd_kafka_conf_destroy(conf);
        fprintf(stderr, "errgate spill drain: %s\n", err);
        return 1;
    }
    eg_spill_drain_opts o = {.seal_after_ms = -1, .backoff_min_ms = 250, .backoff_max_ms = 2000};
    eg_spill_drain *d = eg_spill_drain_new(j, conf, &o, err, sizeof err);
    if (!d) {
        eg_spill_close(j);
        fprintf(stderr, "errgate spill drain: %s\n", err);
        return 1;
    }
    int64_t t0 = eg_now_ms(), deadline = t0 + timeout_ms;
    int fatal = 0, timed_out = 0;
    for (;;) {
        int r = eg_spill_drain_step(d, 5000);
        if (r < 0) {
            fatal = 1;
            break;
        }
        if (eg_spill_drain_done(d)) break;
        if (eg_now_ms() >= deadline) {
            timed_out = 1;
            break;
        }
        int next = eg_spill_drain_next_ms(d);
        if (r == 0 || next != 0) eg_spill_drain_poll(d, next < 0 || next > 100 ? 100 : next);
    }
    /* on a time-out, give what is in flight a last second to report */
    for (int64_t until = eg_now_ms() + 1000; !fatal && timed_out && eg_now_ms() < until;) {
        if (eg_spill_drain_step(d, 0) < 0) fatal = 1;
        eg_spill_drain_stats ds;
        eg_spill_drain_stats_get(d, &ds);
        if (!ds.inflight) break;
        eg_spill_drain_poll(d, 50);
    }
    eg_spill_drain_stats ds;
    eg_spill_drain_stats_get(d, &ds);
    char last[256];
    eg_strlcpy(last, eg_spill_drain_error(d), sizeof last);
    eg_spill_drain_free(d, 0);
    eg_spill_close(j);

    printf("drained %llu frame%s (%llu segment%s deleted) in %lld ms; %llu failed delivery attempt%s (retried); "
           "%llu corrupt segment%s (%llu damaged region%s, %llu byte%s lost); %llu frame%s as stubs; "
           "%llu frame%s set aside\n",
           (unsigned long long)ds.frames_drained, plural(ds.frames_drained), (unsigned long long)ds.segments_drained,
           plural(ds.segments_drained), (long long)(eg_now_ms() - t0), (unsigned long long)ds.frames_failed,
           plural(ds.frames_failed), (unsigned long long)ds.segments_corrupt, plural(ds.segments_corrupt),
           (unsigned long long)ds.corrupt_frames, plural(ds.corrupt_frames), (unsigned long long)ds.damaged_bytes,
           plural(ds.damaged_bytes), (unsigned long long)ds.frames_stubbed, plural(ds.frames_stubbed),
           (unsigned long long)ds.frames_set_aside, plural(ds.frames_set_aside));
    size_t ncorrupt;
    size_t left = report_left(dir, &ncorrupt);
    if (left == 0 && !fatal) {
        printf("journal empty\n");
        return 0;
    }
    if (fatal) fprintf(stderr, "errgate spill drain: %s: stopped: %s\n", dir, last);
    else if (left > ncorrupt)
        fprintf(stderr, "errgate spill drain: %s: %zu segment%s not drained%s%s%s\n", dir, left - ncorrupt,
                plural(left - ncorrupt), timed_out ? " within the time-out" : "", last[0] ? "; last error: " : "",
                last);
    if (ncorrupt)
        fprintf(stderr,
                "errgate spill drain: %s: %zu file%s kept for the operator (errgate spill ls %s): .corrupt files "
                "hold only delivered frames and the damaged bytes; .refused files hold frames Kafka refused for "
                "good (rename one to a fresh spill-*.eg name to drain it again)\n",
                dir, ncorrupt, plural(ncorrupt), dir);
    return 1;
}

int eg_cmd_spill(int argc, char **argv) {
    if (argc < 2) return usage_error("missing subcommand (ls or drain)");
    /* -h/--help anywhere (spill --help, spill ls --help, spill drain DIR -h) */
    for (int i = 1; i < argc; i++)
        if (eg_is_help(argv[i]) || (i == 1 && !strcmp(argv[1], "help"))) {
            usage();
            return EG_EXIT_OK;
        }
    if (!strcmp(argv[1], "ls")) return cmd_ls(argc, argv);
    if (!strcmp(argv[1], "drain")) return cmd_drain(argc, argv);
    return usage_error("unknown subcommand '%s'%s (ls or drain)", argv[1], eg_dash_hint(argv[1]));
}
