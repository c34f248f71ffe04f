/* log.c — structured log lines (see log.h).
 *
 * JSON format: {"ts":"...","level":"info","event":"...",k:v,...}. Text format:
 * "ts LEVEL event k=v k=v". Strings are escaped for JSON by json.h (UTF-8
 * kept, control characters escaped, bytes that are not UTF-8 become
 * \ufffd, so every line parses). Every string value
 * goes through the secret redactor (redact.h) first, whatever its origin:
 * errgate's own messages, librdkafka's lines, a target's error text.
 *
 * Rate limit: one event name is written at most EG_LOG_RATE times per
 * wall-clock second, process-wide (lines come from librdkafka's threads
 * too, so the table is under a mutex); the lines beyond that are counted
 * and, once the second is over, one line {"event":"log_suppressed",
 * "suppressed_event":NAME,"suppressed":N} says how many were dropped.
 * The per-record audit trail (decision and spilled lines, one per record
 * outcome) is never limited here: decision lines are sampled per key by
 * their caller instead (log_sample.h).
 *
 * Buffering: one thread (the gateway's loop) may own a buffer
 * (eg_log_buffer_start); its lines are appended there and written with one
 * write(2) per eg_log_flush (the loop flushes after each pass), when the
 * buffer is full, and at once with any error line; at exit (atexit) and
 * before a deliberate abort (util.c's out-of-memory path) the buffer is
 * flushed too. Lines of other threads (librdkafka's) are written at once,
 * each with its own write(2), so whole lines never interleave. */
#include "log.h"
#include "json.h"
#include "redact.h"
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static eg_level g_min = EG_INFO;
static int g_text = 0;
static char g_source[48]; /* eg_log_set_source: every line names it, or "" */
static const char *const level_names[] = {"debug", "info", "warn", "error"};

#define LOG_BUF_SIZE (64 * 1024)

/* The owning thread's buffer (NULL: none); only that thread touches it. */
static char *g_buf;
static size_t g_buf_len;
static pthread_t g_buf_owner;

/* Writes n bytes to stderr, whole (retrying short writes). */
static void write_all(const char *p, size_t n) {
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(STDERR_FILENO, p + off, n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
}

/* 1 when the calling thread owns the buffer. */
static int buffered_here(void) { return g_buf && pthread_equal(pthread_self(), g_buf_owner); }

void eg_log_flush(void) {
    if (!buffered_here() || g_buf_len == 0) return;
    write_all(g_buf, g_buf_len);
    g_buf_len = 0;
}

static void flush_at_exit(void) { eg_log_flush(); }

void eg_log_buffer_start(void) {
    if (g_buf) return;
    g_buf = eg_xmalloc(LOG_BUF_SIZE);
    g_buf_len = 0;
    g_buf_owner = pthread_self();
    atexit(flush_at_exit);
}

void eg_log_buffer_stop(void) {
    if (!buffered_here()) return;
    eg_log_flush();
    free(g_buf);
    g_buf = NULL;
}

/* Writes a finished line: into the buffer on its owning thread (error
 * lines, and a line that does not fit, flush it), else at once. */
static void emit(const char *line, size_t n, eg_level level) {
    if (!buffered_here()) {
        write_all(line, n);
        return;
    }
    if (g_buf_len + n > LOG_BUF_SIZE) eg_log_flush();
    memcpy(g_buf + g_buf_len, line, n);
    g_buf_len += n;
    if (level >= EG_ERROR) eg_log_flush();
}

int eg_log_enabled(eg_level level) { return level >= g_min; }

void eg_log_set_source(const char *name) {
    if (!name) g_source[0] = '\0';
    else eg_strlcpy(g_source, name, sizeof g_source);
}

void eg_log_setup(eg_level min_level, int text_format) {
    g_min = min_level;
    g_text = text_format;
}

/* Appends raw bytes if they fit; marks the line full otherwise. */
static int put(eg_logline *l, const char *s, size_t n) {
    if (l->full || l->len + n + 24 > sizeof l->buf) { /* room for the marker and "}\n" */
        l->full = 1;
        return -1;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    return 0;
}

/* Appends s as JSON string content (json.h: UTF-8 kept, invalid bytes as
 * \ufffd); text format: as is, with control characters and bytes that are
 * not UTF-8 replaced by '?'. Marks the line full, with what fit appended,
 * when s does not fit whole (the field is dropped by its caller). */
static void put_escaped(eg_logline *l, const char *s, size_t n) {
    if (l->full) return;
    size_t room = l->len + 24 < sizeof l->buf ? sizeof l->buf - l->len - 24 : 0; /* as put() keeps */
    if (!g_text) {
        size_t used;
        l->len += eg_json_escape(s, n, l->buf + l->len, room, &used);
        if (used < n) l->full = 1;
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0, k; i < n && !l->full; i += k) {
        k = eg_utf8_seq(p + i, n - i);
        if (k == 0 || p[i] < 0x20 || p[i] == 0x7f) {
            put(l, "?", 1);
            k = 1;
        } else {
            put(l, s + i, k);
        }
    }
}

/* 1 when l was begun and not filtered out (its fields are to be written). */
static int line_active(eg_logline *l) { return l->len > 0; }

#define RL_SLOTS 256
#define RL_NAME 48

/* One event name's count in the current second. */
typedef struct rl_slot {
    char name[RL_NAME];
    int64_t sec;
    int count;
    int64_t suppressed;
} rl_slot;

static pthread_mutex_t rl_mu = PTHREAD_MUTEX_INITIALIZER;
static rl_slot rl_slots[RL_SLOTS];
static int64_t rl_swept_sec;

typedef struct rl_note {
    char name[RL_NAME];
    int64_t suppressed;
} rl_note;

/* Under rl_mu: moves the counts of slots whose second is over into notes
 * (at most max). Returns how many. */
static int rl_sweep(int64_t sec, rl_note *notes, int max) {
    int n = 0;
    for (int i = 0; i < RL_SLOTS && n < max; i++) {
        rl_slot *s = &rl_slots[i];
        if (!s->name[0] || s->sec == sec || !s->suppressed) continue;
        memcpy(notes[n].name, s->name, RL_NAME);
        notes[n++].suppressed = s->suppressed;
        s->suppressed = 0;
    }
    return n;
}

static void write_suppressed(const rl_note *notes, int n);

/* Returns 1 when a line of `event` may be written now. */
static int rate_ok(const char *event) {
    static const char *const exempt[] = {"decision", "decision_summary", "spilled", "log_suppressed", NULL};
    for (const char *const *e = exempt; *e; e++)
        if (strcmp(event, *e) == 0) return 1;
    int64_t sec = eg_wall_ms() / 1000;
    uint64_t h = eg_hash64(event, strlen(event));
    rl_note notes[16];
    int nn = 0, ok = 1;
    pthread_mutex_lock(&rl_mu);
    if (sec != rl_swept_sec) {
        rl_swept_sec = sec;
        nn = rl_sweep(sec, notes, 16);
    }
    for (int k = 0; k < RL_SLOTS; k++) {
        rl_slot *s = &rl_slots[(h + (uint64_t)k) % RL_SLOTS];
        if (s->name[0] && strncmp(s->name, event, RL_NAME - 1) != 0) continue;
        if (!s->name[0]) eg_strlcpy(s->name, event, RL_NAME);
        if (s->sec != sec) {
            s->sec = sec;
            s->count = 0;
        }
        if (s->count >= EG_LOG_RATE) {
            s->suppressed++;
            ok = 0;
        } else {
            s->count++;
        }
        break; /* a full table limits nothing more */
    }
    pthread_mutex_unlock(&rl_mu);
    write_suppressed(notes, nn);
    return ok;
}

void eg_log_flush_suppressed(void) {
    rl_note notes[RL_SLOTS];
    pthread_mutex_lock(&rl_mu);
    int n = rl_sweep(-1, notes, RL_SLOTS);
    pthread_mutex_unlock(&rl_mu);
    write_suppressed(notes, n);
}

int eg_log_begin(eg_logline *l, eg_level level, const char *event) {
    return eg_log_begin_at(l, level, event, eg_wall_ms());
}

int eg_log_begin_at(eg_logline *l, eg_level level, const char *event, int64_t wall_ms) {
    l->len = 0;
    l->full = 0;
    l->text = g_text;
    l->level = level;
    if (level < g_min || !rate_ok(event)) return 0;
    char ts[32];
    eg_rfc3339(wall_ms, ts, sizeof ts);
    if (g_text) {
        put(l, ts, strlen(ts));
        put(l, " ", 1);
        put(l, level_names[level], strlen(level_names[level]));
        put(l, " ", 1);
        put_escaped(l, event, strlen(event));
    } else {
        put(l, "{\"ts\":\"", 7);
        put(l, ts, strlen(ts));
        put(l, "\",\"level\":\"", 11);
        put(l, level_names[level], strlen(level_names[level]));
        put(l, "\",\"event\":\"", 11);
        put_escaped(l, event, strlen(event));
        put(l, "\"", 1);
    }
    if (g_source[0]) eg_log_str(l, "source", g_source);
    return 1;
}

/* Appends a field's key and separator in the line's format. */
static void put_key(eg_logline *l, const char *key) {
    if (g_text) {
        put(l, " ", 1);
        put(l, key, strlen(key));
        put(l, "=", 1);
    } else {
        put(l, ",\"", 2);
        put(l, key, strlen(key));
        put(l, "\":", 2);
    }
}

void eg_log_strn(eg_logline *l, const char *key, const char *val, size_t n) {
    if (!line_active(l)) return;
    char clean[sizeof l->buf];
    size_t cn = eg_redact(val, n, clean, sizeof clean);
    size_t mark = l->len;
    put_key(l, key);
    if (!g_text) put(l, "\"", 1);
    put_escaped(l, clean, cn);
    if (!g_text) put(l, "\"", 1);
    if (l->full) l->len = mark; /* drop the partial field */
}

void eg_log_str(eg_logline *l, const char *key, const char *val) {
    eg_log_strn(l, key, val ? val : "", val ? strlen(val) : 0);
}

void eg_log_null(eg_logline *l, const char *key) {
    if (!line_active(l)) return;
    size_t mark = l->len;
    put_key(l, key);
    put(l, g_text ? "-" : "null", g_text ? 1 : 4);
    if (l->full) l->len = mark;
}

void eg_log_int(eg_logline *l, const char *key, int64_t val) {
    if (!line_active(l)) return;
    char num[24];
    size_t n = eg_fmt_i64(val, num, sizeof num);
    size_t mark = l->len;
    put_key(l, key);
    put(l, num, n);
    if (l->full) l->len = mark;
}

void eg_log_dbl(eg_logline *l, const char *key, double val) {
    if (!line_active(l)) return;
    char num[48];
    int n = snprintf(num, sizeof num, "%.3f", val);
    size_t mark = l->len;
    put_key(l, key);
    put(l, num, (size_t)n);
    if (l->full) l->len = mark;
}

void eg_log_end(eg_logline *l) {
    if (!line_active(l)) return;
    if (l->full) {
        l->full = 0;
        if (g_text) put(l, " truncated=1", 12);
        else put(l, ",\"truncated\":true", 17);
    }
    if (!g_text) l->buf[l->len++] = '}';
    l->buf[l->len++] = '\n';
    emit(l->buf, l->len, l->level);
    l->len = 0;
}

void eg_log_raw(eg_logline *l, const char *key, const char *json, size_t n) {
    if (!line_active(l)) return;
    size_t mark = l->len;
    put_key(l, key);
    put(l, json, n);
    if (l->full) l->len = mark;
}

size_t eg_log_quote(const char *s, size_t n, char *out, size_t outlen) {
    char clean[512];
    if (outlen < 3) return 0;
    size_t cn = eg_redact(s, n, clean, sizeof clean), used;
    out[0] = '"';
    size_t len = 1 + eg_json_escape(clean, cn, out + 1, outlen - 2, &used);
    if (used < cn) return 0;
    out[len++] = '"';
    return len;
}

void eg_log_msg(eg_level level, const char *event, const char *fmt, ...) {
    eg_logline l;
    if (!eg_log_begin(&l, level, event)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    eg_log_str(&l, "msg", msg);
    eg_log_end(&l);
}

/* Writes one log_suppressed line per note. */
static void write_suppressed(const rl_note *notes, int n) {
    for (int i = 0; i < n; i++) {
        eg_logline l;
        if (!eg_log_begin(&l, EG_WARN, "log_suppressed")) continue;
        eg_log_str(&l, "suppressed_event", notes[i].name);
        eg_log_int(&l, "suppressed", notes[i].suppressed);
        eg_log_int(&l, "limit_per_second", EG_LOG_RATE);
        eg_log_end(&l);
    }
}
