/* dlq_watch.c — `errgate dlq watch`: the human loop around a DLQ, built in.
 *
 *   errgate dlq watch LANE (-b|-c) --incidents FILE.jsonl [--webhook URL]
 *       [--threshold CLASS=N/DUR ... | --every-record] [--group G]
 *
 * Follows the lane from its consumer group's committed progress (default
 * group errgate-dlq-watch.LANE; the start of the lane when it has none) and
 * appends one JSON line per lane record to the incidents file:
 *   {"time", "lane", "partition", "offset", "original_topic",
 *    "original_partition", "original_offset", "original_timestamp",
 *    "class", "code", "reason", "attempts", "retry_count", "policy", "id",
 *    "message", "key", "key_bytes", "previous_topic", "replay_from",
 *    "payload_bytes"}
 * time is error.timestamp (else the lane record's timestamp); attempts is
 * errgate.attempts (every attempt, in place and on every rung), else, on a
 * record written before that header existed, the number of attempts
 * errgate.history lists (at most 10); message is
 * error.message, which the gateway redacted; key is the record key's first
 * KEY_MAX bytes (invalid UTF-8 as U+FFFD) redacted like every logged value
 * (redact.h), null when the record has none, and key_bytes its whole
 * length; previous_topic is where the record was before this lane
 * (previous.topic: the source topic, the rung it failed on, or the topic a
 * replay sent it to) and replay_from the lane record a replay took it from
 * (replay.from-dlq, null when it was never replayed); payload_bytes is the
 * lane record's value length. The value itself is never written. The
 * progress moves only over records whose lines were written and
 * fdatasync'ed (at least every 500 ms and at the end), so a restart with the
 * same group resumes after the last incident written; after kill -9 the
 * lines of the last half second may be written again. Like every command's
 * reader (kcli.h) it assigns the partitions the lane has at start and never
 * joins the group as a member: one watcher per group.
 *
 * Thresholds. --threshold CLASS=N/DUR (e.g. permanent=5/1m; CLASS `*`
 * applies to each class without its own threshold) fires when N records of
 * the class were dead-lettered within DUR, by their lane timestamps. Then
 * that class is quiet for DUR: one alert per class per window, whatever the
 * flood. N=1 with DUR 0s (`--threshold CLASS=1/0s`; `--every-record` is
 * `*=1/0s`) alerts on every dead letter of the class, one alert per record
 * ("any growth"); a zero window with N above 1 is refused. At most
 * MAX_QUEUED alerts wait for their POST: one more is dropped, logged (the
 * first and every 1000th) and counted, so a flood under --every-record
 * costs bounded memory and never holds up the incident lines. An alert is
 * printed on stdout ("alert CLASS: N records in DUR ...") and, with --webhook, POSTed as JSON
 *   {"alert": "errgate_dlq_threshold", "lane", "class", "count", "window",
 *    "window_ms", "first", "last", "last_id", "incidents", "at"}
 * with libcurl (5 s timeout, http and https only). A POST that fails (no
 * answer, or a status outside 2xx) is retried with back-off (0.5 s doubling
 * to 8 s, 6 attempts), each failure logged on stderr and counted; an alert
 * that fails every attempt is dropped, logged and counted. Window counts are
 * kept in memory: a restart starts them afresh.
 *
 * The POSTs never hold up the loop: they are libcurl's multi interface,
 * driven without waiting (curl_multi_perform) on every pass of the loop,
 * at most MAX_POSTS at a time, so a receiver that hangs costs its own
 * alert's time-out and nothing else; incident lines go on being written,
 * synced and committed meanwhile (the loop polls Kafka for POLL_POSTING_MS
 * instead of POLL_MS while a POST is under way, to see its answer soon).
 *
 * SIGTERM or SIGINT: the lines written are synced, the progress committed,
 * an alert still waiting for a retry or still being POSTed is dropped
 * (logged), a summary printed on stderr, exit 0. Exit 1 on a Kafka or file error (nothing committed past
 * a line that was not written), 2 for bad arguments or a missing lane. */
#include "cli.h"
#include "dlq.h"
#include "headers.h"
#include "json.h"
#include "kcli.h"
#include "parse.h"
#include "record.h"
#include "redact.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <msgpack.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYNC_EVERY_MS 500
#define POLL_MS 200
#define POLL_POSTING_MS 20
#define MAX_POSTS 4
#define POST_TIMEOUT_MS 5000
#define POST_ATTEMPTS 6
#define BACKOFF_FIRST_MS 500
#define BACKOFF_MAX_MS 8000
#define MAX_QUEUED 10000 /* alerts waiting for their POST */
#define KEY_MAX 256      /* key bytes an incident line carries */

/* One threshold: N records of a class within window_ms. */
typedef struct threshold {
    char *klass;      /* "*" for the template */
    const char *spec; /* as typed, after CLASS= (borrowed from argv) */
    long n;
    int64_t window_ms;
    int64_t *ring;       /* the last n lane timestamps of the class */
    long filled, head;   /* entries in ring; where the next goes */
    int64_t quiet_until; /* no alert before this lane timestamp */
} threshold;

/* An alert waiting to be POSTed, or being POSTed (easy set). Owns its
 * strings, and while posting its easy handle and header list. */
typedef struct alert {
    char *klass, *body;
    int attempts;
    int64_t due_ms;
    CURL *easy;              /* the POST under way (added to watch.multi), or NULL */
    struct curl_slist *hdrs; /* its request headers */
} alert;

typedef struct watch {
    eg_kcli k;
    const char *lane, *incidents, *webhook, *group;
    threshold *th;
    int nth;
    int fd;
    eg_lread r;
    int64_t *next;   /* per partition: one past the last offset written */
    int64_t *synced; /* per partition: what the last commit sent */
    alert *q;
    size_t nq;
    long records, alerts, posted, post_failures, dropped;
    long overflow; /* alerts dropped because MAX_QUEUED were waiting */
    CURLM *multi;  /* the POSTs under way (--webhook) */
    int posting;   /* how many */
} watch;

/* Prints the usage text of `errgate dlq watch` on stdout. */
static void usage(void) {
    printf("usage: errgate dlq watch LANE (-b BOOTSTRAP | -c CONFIG) --incidents FILE.jsonl [--webhook URL]\n"
           "         [--threshold CLASS=N/DUR ... | --every-record] [--group G]\n"
           "\n"
           "  --incidents FILE   append one JSON line per lane record (never the payload)\n"
           "  --threshold C=N/D  alert when N records of class C arrive within D (90s, 15m, 1h);\n"
           "                     C * applies to every class without its own; one alert per class per D;\n"
           "                     C=1/0s alerts on every dead letter of class C\n"
           "  --every-record     alert on every dead letter (the same as --threshold '*=1/0s')\n"
           "  --webhook URL      POST each alert as JSON (retried with back-off)\n"
           "  --group G          the consumer group that keeps the progress (default\n"
           "                     errgate-dlq-watch.LANE)\n"
           "SIGTERM/SIGINT stop it cleanly (exit 0).\n");
}

/* One line naming what is wrong on stderr; returns the exit code 2. */
static int usage_error(const char *why) { return eg_usage_error("dlq", "watch: %s", why); }

/* Parses CLASS=N/DUR into a new threshold of w. Returns 0, or -1 with why. */
static int add_threshold(watch *w, const char *arg, char *why, size_t whylen) {
    const char *eq = strchr(arg, '='), *slash = eq ? strchr(eq, '/') : NULL;
    char num[32];
    long n;
    int64_t ms;
    size_t nl = slash ? (size_t)(slash - eq - 1) : 0;
    if (!eq || eq == arg || !slash || nl == 0 || nl >= sizeof num) {
        snprintf(why, whylen, "--threshold '%s' is not CLASS=N/DUR (e.g. permanent=5/1m)", arg);
        return -1;
    }
    memcpy(num, eq + 1, nl);
    num[nl] = '\0';
    if (eg_parse_count(num, &n) < 0 || n < 1 || n > 100000 || eg_parse_duration_ms(slash + 1, &ms) < 0 || ms < 0) {
        snprintf(why, whylen, "--threshold '%s': N must be a count from 1 to 100000 and DUR a duration (90s, 15m)",
                 arg);
        return -1;
    }
    if (ms == 0 && n != 1) {
        snprintf(why, whylen, "--threshold '%s': a 0s window goes with N=1 (every record: CLASS=1/0s)", arg);
        return -1;
    }
    size_t cl = (size_t)(eq - arg);
    for (int i = 0; i < w->nth; i++)
        if (strlen(w->th[i].klass) == cl && !strncmp(w->th[i].klass, arg, cl)) {
            snprintf(why, whylen, "--threshold: class '%.*s' given twice", (int)cl, arg);
            return -1;
        }
    w->th = eg_xrealloc(w->th, (size_t)(w->nth + 1) * sizeof *w->th);
    threshold *t = &w->th[w->nth++];
    memset(t, 0, sizeof *t);
    t->klass = eg_xstrndup(arg, cl);
    t->spec = eq + 1;
    t->n = n;
    t->window_ms = ms;
    t->ring = eg_xcalloc((size_t)n, sizeof *t->ring);
    return 0;
}

/* Parses the arguments after `dlq watch`. Returns 0, -1 after printing the
 * help, or the exit code of a usage error. */
static int parse(int argc, char **argv, watch *w) {
    char why[512];
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        int k = eg_dlq_conn_opt(&w->k, argc, argv, &i, why, sizeof why);
        if (k < 0) return usage_error(why);
        if (k > 0) continue;
        if (eg_is_help(o)) {
            usage();
            return -1;
        }
        if (!strcmp(o, "--every-record")) {
            if (add_threshold(w, "*=1/0s", why, sizeof why) < 0)
                return usage_error("--every-record and --threshold '*=...' given together");
            continue;
        }
        const char **slot = !strcmp(o, "--incidents") ? &w->incidents
                            : !strcmp(o, "--webhook") ? &w->webhook
                            : !strcmp(o, "--group")   ? &w->group
                                                      : NULL;
        if (slot || !strcmp(o, "--threshold")) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                snprintf(why, sizeof why, "%s needs a value", o);
                return usage_error(why);
            }
            if (slot) *slot = argv[++i];
            else if (add_threshold(w, argv[++i], why, sizeof why) < 0) return usage_error(why);
            continue;
        }
        if (o[0] == '-' || w->lane) {
            snprintf(why, sizeof why, "%s '%s'%s", o[0] == '-' ? "unknown option" : "unexpected argument", o,
                     eg_dash_hint(o));
            return usage_error(why);
        }
        w->lane = o;
    }
    if (!w->lane) return usage_error("LANE is required");
    if (!w->incidents) return usage_error("--incidents FILE.jsonl is required");
    if (w->webhook && strncmp(w->webhook, "http://", 7) && strncmp(w->webhook, "https://", 8))
        return usage_error("--webhook must be an http:// or https:// URL");
    if (w->webhook && !w->nth)
        return usage_error("--webhook needs at least one --threshold CLASS=N/DUR (or --every-record)");
    return 0;
}

/* ---- one incident ---------------------------------------------------------- */

/* Appends "name":<header as a JSON string, or null> to b. */
static void put_header(struct evbuffer *b, const rd_kafka_message_t *m, const char *key, const char *header) {
    size_t n = 0;
    const void *v = eg_header(m, header, &n);
    evbuffer_add_printf(b, ",\"%s\":", key);
    if (v) eg_json_strn(b, v, n);
    else evbuffer_add(b, "null", 4);
}

/* Appends "name":<header as a number when it is a count, else as
 * put_header does> to b. */
static void put_count(struct evbuffer *b, const rd_kafka_message_t *m, const char *key, const char *header) {
    char v[32];
    long n;
    if (eg_header_str(m, header, v, sizeof v) == 0 && eg_parse_count(v, &n) == 0)
        evbuffer_add_printf(b, ",\"%s\":%ld", key, n);
    else put_header(b, m, key, header);
}

/* The record's attempts: errgate.attempts, else the number of attempts
 * errgate.history lists (0 when both are absent or unreadable). */
static long attempts_of(const rd_kafka_message_t *m) {
    size_t n = 0;
    const void *v = eg_header(m, EG_H_ATTEMPTS, &n);
    int64_t a = v ? eg_uint_parse(v, n) : -1;
    if (a >= 0 && a <= LONG_MAX) return (long)a;
    v = eg_header(m, EG_H_HISTORY, &n);
    if (!v) return 0;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    long len = 0;
    if (msgpack_unpack_next(&u, v, n, NULL) == MSGPACK_UNPACK_SUCCESS && u.data.type == MSGPACK_OBJECT_ARRAY)
        len = (long)u.data.via.array.size;
    msgpack_unpacked_destroy(&u);
    return len;
}

/* The record's lane timestamp in ms (now when it has none). */
static int64_t lane_ts(const rd_kafka_message_t *m) {
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    return ts >= 0 ? ts : eg_wall_ms();
}

/* Appends the incident line of lane record m to b (see the file comment). */
static void incident_line(struct evbuffer *b, const watch *w, const rd_kafka_message_t *m) {
    char t[64], id[320];
    if (eg_header_str(m, EG_H_TIMESTAMP, t, sizeof t) < 0 || !*t) eg_rfc3339(lane_ts(m), t, sizeof t);
    evbuffer_add(b, "{\"time\":", 8);
    eg_json_str(b, t);
    evbuffer_add(b, ",\"lane\":", 8);
    eg_json_str(b, w->lane);
    evbuffer_add_printf(b, ",\"partition\":%d,\"offset\":%lld", (int)m->partition, (long long)m->offset);
    put_header(b, m, "original_topic", EG_H_ORIG_TOPIC);
    put_count(b, m, "original_partition", EG_H_ORIG_PARTITION);
    put_count(b, m, "original_offset", EG_H_ORIG_OFFSET);
    put_header(b, m, "original_timestamp", EG_H_ORIG_TIMESTAMP);
    put_header(b, m, "class", EG_H_CLASS);
    put_header(b, m, "code", EG_H_CODE);
    put_header(b, m, "reason", EG_H_REASON);
    evbuffer_add_printf(b, ",\"attempts\":%ld", attempts_of(m));
    put_count(b, m, "retry_count", EG_H_RETRY_COUNT);
    put_header(b, m, "policy", EG_H_POLICY);
    eg_dlq_item_id(m, id, sizeof id);
    evbuffer_add(b, ",\"id\":", 6);
    eg_json_str(b, id);
    put_header(b, m, "message", EG_H_MESSAGE);
    if (m->key) {
        char clean[KEY_MAX + 1];
        size_t kn = m->key_len < KEY_MAX ? m->key_len : KEY_MAX;
        evbuffer_add(b, ",\"key\":", 7);
        eg_json_strn(b, clean, eg_redact(m->key, kn, clean, sizeof clean));
    } else {
        evbuffer_add(b, ",\"key\":null", 11);
    }
    evbuffer_add_printf(b, ",\"key_bytes\":%zu", m->key ? m->key_len : (size_t)0);
    put_header(b, m, "previous_topic", EG_H_PREVIOUS);
    put_header(b, m, "replay_from", EG_H_REPLAY_FROM);
    evbuffer_add_printf(b, ",\"payload_bytes\":%zu", m->payload ? m->len : (size_t)0);
    evbuffer_add(b, "}\n", 2);
}

/* Writes all of b to fd (emptying b). Returns 0, or -1 with errno. */
static int write_all(int fd, struct evbuffer *b) {
    while (evbuffer_get_length(b) > 0) {
        int n = evbuffer_write(b, fd);
        if (n < 0 && errno != EINTR) return -1;
    }
    return 0;
}

/* ---- thresholds and alerts ---------------------------------------------- */

/* The threshold of class k: its own, else a fresh copy of `*` (kept), else
 * NULL. */
static threshold *threshold_of(watch *w, const char *k) {
    threshold *any = NULL;
    for (int i = 0; i < w->nth; i++) {
        if (!strcmp(w->th[i].klass, k)) return &w->th[i];
        if (!strcmp(w->th[i].klass, "*")) any = &w->th[i];
    }
    if (!any) return NULL;
    threshold copy = *any;
    w->th = eg_xrealloc(w->th, (size_t)(w->nth + 1) * sizeof *w->th);
    threshold *t = &w->th[w->nth++];
    *t = copy;
    t->klass = eg_xstrdup(k);
    t->ring = eg_xcalloc((size_t)t->n, sizeof *t->ring);
    t->filled = t->head = 0;
    t->quiet_until = 0;
    return t;
}

/* Counts lane record m (class k, lane timestamp ts) against its class's
 * threshold; when it crosses, prints the alert and queues its POST. */
static void count_record(watch *w, const rd_kafka_message_t *m, const char *k, int64_t ts) {
    threshold *t = threshold_of(w, k);
    if (!t) return;
    t->ring[t->head] = ts;
    t->head = (t->head + 1) % t->n;
    if (t->filled < t->n) t->filled++;
    int64_t first = t->ring[t->filled < t->n ? 0 : t->head]; /* the oldest of the last n */
    /* a 0s window (every record) has no quiet time, whatever order the lane timestamps come in */
    if (t->filled < t->n || ts - first > t->window_ms || (t->window_ms > 0 && ts < t->quiet_until)) return;
    t->quiet_until = ts + t->window_ms;
    w->alerts++;
    char f[64], l[64], at[64], id[320];
    eg_rfc3339(first, f, sizeof f);
    eg_rfc3339(ts, l, sizeof l);
    eg_rfc3339(eg_wall_ms(), at, sizeof at);
    eg_dlq_item_id(m, id, sizeof id);
    const char *win = strchr(t->spec, '/') + 1;
    printf("alert %s: %ld records in %s on %s (%s .. %s), last %s\n", k, t->n, win, w->lane, f, l, id);
    fflush(stdout);
    if (!w->webhook) return;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"alert\":\"errgate_dlq_threshold\",\"lane\":");
    eg_json_str(b, w->lane);
    evbuffer_add(b, ",\"class\":", 9);
    eg_json_str(b, k);
    evbuffer_add_printf(b, ",\"count\":%ld,\"window\":", t->n);
    eg_json_str(b, win);
    evbuffer_add_printf(b, ",\"window_ms\":%lld,\"first\":", (long long)t->window_ms);
    eg_json_str(b, f);
    evbuffer_add(b, ",\"last\":", 8);
    eg_json_str(b, l);
    evbuffer_add(b, ",\"last_id\":", 11);
    eg_json_str(b, id);
    evbuffer_add(b, ",\"incidents\":", 13);
    eg_json_str(b, w->incidents);
    evbuffer_add(b, ",\"at\":", 6);
    eg_json_str(b, at);
    evbuffer_add(b, "}", 1);
    char *body = eg_json_take(b);
    if (w->nq >= MAX_QUEUED) {
        if (w->overflow++ % 1000 == 0)
            fprintf(stderr,
                    "errgate dlq watch: webhook: %zu alerts already wait for their POST: alert %s (%s) dropped (%ld so "
                    "far)\n",
                    w->nq, k, id, w->overflow);
        w->dropped++;
        free(body);
        return;
    }
    w->q = eg_xrealloc(w->q, (w->nq + 1) * sizeof *w->q);
    w->q[w->nq++] = (alert){.klass = eg_xstrdup(k), .body = body, .due_ms = eg_now_ms()};
}

/* libcurl write callback: the answer's body is not needed. */
static size_t discard(char *p, size_t size, size_t n, void *u) { return size * n; }

/* Starts a's POST on w's multi handle. Returns 0, or -1 with why (nothing
 * started). */
static int post_start(watch *w, alert *a, char *why, size_t whylen) {
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c || !h) {
        if (c) curl_easy_cleanup(c);
        curl_slist_free_all(h);
        snprintf(why, whylen, "cannot set up libcurl");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_URL, w->webhook);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, a->body); /* a->body outlives the transfer */
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(a->body));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)POST_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_PRIVATE, a->body); /* finds the alert again: bodies are unique pointers */
    if (curl_multi_add_handle(w->multi, c) != CURLM_OK) {
        curl_easy_cleanup(c);
        curl_slist_free_all(h);
        snprintf(why, whylen, "cannot start the POST");
        return -1;
    }
    a->easy = c;
    a->hdrs = h;
    w->posting++;
    return 0;
}

/* Ends a's POST (if one is under way): its handle leaves the multi handle
 * and is freed. */
static void post_end(watch *w, alert *a) {
    if (!a->easy) return;
    curl_multi_remove_handle(w->multi, a->easy);
    curl_easy_cleanup(a->easy);
    curl_slist_free_all(a->hdrs);
    a->easy = NULL;
    a->hdrs = NULL;
    w->posting--;
}

/* Removes alert i from the queue (its POST ended) and frees it. */
static void alert_drop(watch *w, size_t i) {
    post_end(w, &w->q[i]);
    free(w->q[i].klass);
    free(w->q[i].body);
    w->q[i] = w->q[--w->nq];
}

/* The outcome of alert i's attempt (ok, else why): counted, and the alert
 * freed, scheduled again with back-off, or dropped after POST_ATTEMPTS (see
 * the file comment). */
static void post_done(watch *w, size_t i, int ok, const char *why) {
    alert *a = &w->q[i];
    post_end(w, a);
    a->attempts++;
    if (ok) {
        w->posted++;
        alert_drop(w, i);
        return;
    }
    w->post_failures++;
    int64_t wait = BACKOFF_FIRST_MS << (a->attempts - 1);
    if (wait > BACKOFF_MAX_MS) wait = BACKOFF_MAX_MS;
    if (a->attempts < POST_ATTEMPTS) {
        fprintf(stderr, "errgate dlq watch: webhook: alert %s: attempt %d of %d failed: %s; retrying in %lld ms\n",
                a->klass, a->attempts, POST_ATTEMPTS, why, (long long)wait);
        a->due_ms = eg_now_ms() + wait;
        return;
    }
    fprintf(stderr, "errgate dlq watch: webhook: alert %s dropped after %d failed attempts: %s\n", a->klass,
            a->attempts, why);
    w->dropped++;
    alert_drop(w, i);
}

/* One step of the webhook, never waiting: starts the POSTs of the due
 * alerts (at most MAX_POSTS under way), lets libcurl move the transfers on,
 * and settles the ones that ended (post_done). */
static void send_due(watch *w) {
    if (!w->multi) return;
    int64_t now = eg_now_ms();
    for (size_t i = 0; i < w->nq && w->posting < MAX_POSTS;) {
        alert *a = &w->q[i];
        char why[256];
        if (a->easy || a->due_ms > now || post_start(w, a, why, sizeof why) == 0) {
            i++;
            continue;
        }
        size_t before = w->nq;
        post_done(w, i, 0, why);
        if (w->nq == before) i++; /* kept for a retry */
    }
    int running = 0;
    curl_multi_perform(w->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(w->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        char *body = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &body);
        CURLcode e = msg->data.result;
        long status = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        for (size_t i = 0; i < w->nq; i++) {
            if (w->q[i].body != body) continue;
            char why[256] = "";
            if (e != CURLE_OK) snprintf(why, sizeof why, "%s", curl_easy_strerror(e));
            else if (status < 200 || status > 299) snprintf(why, sizeof why, "HTTP %ld", status);
            post_done(w, i, !why[0], why);
            break;
        }
    }
}

/* ---- the loop ------------------------------------------------------------- */

/* Syncs the incidents file and commits the progress of the partitions that
 * moved. Returns 0, or -1 with err. */
static int sync_commit(watch *w, int final, char *err, size_t errlen) {
    int any = 0;
    for (int i = 0; i < w->r.n; i++) any |= w->next[i] > w->synced[i];
    if (!any) return 0;
    if (fdatasync(w->fd) != 0) {
        snprintf(err, errlen, "%s: fdatasync: %s", w->incidents, strerror(errno));
        return -1;
    }
    int64_t *off = eg_xcalloc((size_t)w->r.n, sizeof *off);
    for (int i = 0; i < w->r.n; i++) off[i] = w->next[i] > w->synced[i] ? w->next[i] : -1;
    int rc = -1;
    for (int attempt = 0; rc < 0 && attempt < (final ? 3 : 1); attempt++)
        rc = eg_lread_commit(&w->r, off, !final, err, errlen);
    if (rc == 0)
        for (int i = 0; i < w->r.n; i++)
            if (off[i] >= 0) w->synced[i] = off[i];
    free(off);
    return final ? rc : 0; /* a periodic commit that failed is made good later */
}

/* Everything after the arguments: returns the exit code. */
static int run(watch *w) {
    char err[1024], group[700];
    if (w->group) eg_strlcpy(group, w->group, sizeof group);
    else snprintf(group, sizeof group, "errgate-dlq-watch.%s", w->lane);
    w->fd = open(w->incidents, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (w->fd < 0) {
        fprintf(stderr, "errgate dlq watch: --incidents %s: %s\n", w->incidents, strerror(errno));
        return 2;
    }
    rd_kafka_conf_t *conf = eg_kcli_conf(&w->k, "errgate-dlq-watch", err, sizeof err);
    if (!conf) {
        fprintf(stderr, "errgate dlq watch: %s\n", err);
        return 2;
    }
    int rc = eg_lread_open(&w->r, conf, group, w->lane, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "errgate dlq watch: %s\n", err);
        return rc == -2 ? 2 : 1;
    }
    if (eg_lread_seek_committed(&w->r, err, sizeof err) < 0 || eg_lread_start(&w->r, 1, err, sizeof err) < 0) {
        fprintf(stderr, "errgate dlq watch: %s\n", err);
        return 1;
    }
    w->next = eg_xcalloc((size_t)w->r.n, sizeof *w->next);
    w->synced = eg_xcalloc((size_t)w->r.n, sizeof *w->synced);
    for (int i = 0; i < w->r.n; i++) w->next[i] = w->synced[i] = w->r.start[i];
    if (w->webhook && !(w->multi = curl_multi_init())) {
        fprintf(stderr, "errgate dlq watch: cannot set up libcurl\n");
        return 1;
    }
    printf("watch %s, group %s, incidents %s\n", w->lane, group, w->incidents);
    fflush(stdout);
    struct evbuffer *b = evbuffer_new();
    int64_t last_sync = eg_now_ms();
    rc = 0;
    while (!eg_dlq_stop) {
        rd_kafka_message_t *m;
        int got = eg_lread_next(&w->r, w->posting ? POLL_POSTING_MS : POLL_MS, &m, err, sizeof err);
        if (got < 0) {
            fprintf(stderr, "errgate dlq watch: %s\n", err);
            rc = 1;
            break;
        }
        if (got == 1) {
            incident_line(b, w, m);
            if (write_all(w->fd, b) < 0) {
                fprintf(stderr, "errgate dlq watch: %s: write: %s\n", w->incidents, strerror(errno));
                rd_kafka_message_destroy(m);
                rc = 1;
                break;
            }
            w->records++;
            int i = eg_lread_index(&w->r, m->partition);
            if (i >= 0) w->next[i] = m->offset + 1;
            char k[256];
            if (eg_header_str(m, EG_H_CLASS, k, sizeof k) < 0 || !*k) eg_strlcpy(k, "-", sizeof k);
            count_record(w, m, k, lane_ts(m));
            rd_kafka_message_destroy(m);
        }
        if (got == 0 || eg_now_ms() - last_sync >= SYNC_EVERY_MS) {
            if (sync_commit(w, 0, err, sizeof err) < 0) {
                fprintf(stderr, "errgate dlq watch: %s\n", err);
                rc = 1;
                break;
            }
            last_sync = eg_now_ms();
        }
        send_due(w);
    }
    evbuffer_free(b);
    /* what was written is synced and committed; nothing past an unwritten line */
    if (sync_commit(w, 1, err, sizeof err) < 0) {
        fprintf(stderr, "errgate dlq watch: final commit: %s\n", err);
        rc = 1;
    }
    for (size_t i = 0; i < w->nq; i++)
        fprintf(stderr, "errgate dlq watch: webhook: alert %s dropped at shutdown after %d attempt(s)%s\n",
                w->q[i].klass, w->q[i].attempts + (w->q[i].easy != NULL), w->q[i].easy ? ", the last unanswered" : "");
    w->dropped += (long)w->nq;
    fprintf(stderr,
            "errgate dlq watch: stopped: %ld incidents written, %ld alerts, %ld posted, %ld POST attempts failed, %ld "
            "alerts dropped\n",
            w->records, w->alerts, w->posted, w->post_failures, w->dropped);
    return rc;
}

/* Frees everything w holds. */
static void teardown(watch *w) {
    eg_lread_close(&w->r);
    if (w->fd >= 0) close(w->fd);
    for (int i = 0; i < w->nth; i++) {
        free(w->th[i].klass);
        free(w->th[i].ring);
    }
    free(w->th);
    while (w->nq) alert_drop(w, w->nq - 1);
    free(w->q);
    free(w->next);
    free(w->synced);
    if (w->multi) curl_multi_cleanup(w->multi);
}

int eg_cmd_dlq_watch(int argc, char **argv) {
    watch w;
    memset(&w, 0, sizeof w);
    w.fd = -1;
    int rc = parse(argc, argv, &w), curl_up = 0;
    if (rc == 0) {
        curl_up = w.webhook && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
        eg_dlq_catch_signals();
        rc = run(&w);
        eg_dlq_release_signals();
    }
    teardown(&w);
    if (curl_up) curl_global_cleanup();
    return rc < 0 ? EG_EXIT_OK : rc;
}
