/* log_sample.c — decision-log sampling (see log_sample.h).
 *
 * Keys are found by a linear scan of at most EG_SAMPLE_KEYS entries with a
 * cheap first-byte filter: a flood has a handful of keys, and the scan
 * touches no allocator. The summary of a second is written as one line
 *   {"event":"decision_summary","second":"...Z","per_second":N,
 *    "logged":L,"folded":F,"keys":[{"topic":..,"class":..,"action":..,
 *    "logged":l,"folded":f},...]}
 * naming only the keys that folded lines; when the keys do not fit one log
 * line, further decision_summary lines of the same second carry the rest
 * (each with its own totals, so every line adds up on its own). */
#include "log_sample.h"
#include "util.h"

#include <string.h>

void eg_sampler_init(eg_sampler *s, int per_second) {
    memset(s, 0, sizeof *s);
    s->per_second = per_second < 0 ? 0 : per_second;
    s->sec = -1;
}

/* Copies src (NULL: "") into dst of size cap, cut at cap - 1 bytes. */
static void copy_name(char *dst, size_t cap, const char *src) {
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

/* 1 when key k is (topic, klass, action), each compared as stored (cut). */
static int key_is(const eg_sample_key *k, const char *topic, const char *klass, const char *action) {
    if (!topic) topic = "";
    if (!klass) klass = "";
    if (!action) action = "";
    return k->topic[0] == topic[0] && strncmp(k->action, action, EG_SAMPLE_ACTION - 1) == 0 &&
           strncmp(k->klass, klass, EG_SAMPLE_CLASS - 1) == 0 && strncmp(k->topic, topic, EG_SAMPLE_TOPIC - 1) == 0;
}

/* The key of (topic, klass, action) this second, added when new; the
 * overflow key once the table is full. */
static eg_sample_key *key_of(eg_sampler *s, const char *topic, const char *klass, const char *action) {
    for (int i = 0; i < s->nkeys; i++)
        if (key_is(&s->keys[i], topic, klass, action)) return &s->keys[i];
    eg_sample_key *k = s->nkeys < EG_SAMPLE_KEYS ? &s->keys[s->nkeys++] : &s->keys[EG_SAMPLE_KEYS];
    if (k == &s->keys[EG_SAMPLE_KEYS]) topic = klass = action = "*";
    if (k->topic[0] == '\0' && k->logged == 0 && k->folded == 0) {
        copy_name(k->topic, sizeof k->topic, topic);
        copy_name(k->klass, sizeof k->klass, klass);
        copy_name(k->action, sizeof k->action, action);
        k->level = EG_DEBUG;
    }
    return k;
}

/* Appends `"name":` and the quoted, redacted value to the array text. */
static size_t put_str(char *out, size_t cap, size_t len, const char *name, const char *val) {
    char q[EG_SAMPLE_TOPIC * 6 + 8];
    size_t qn = eg_log_quote(val, strlen(val), q, sizeof q);
    size_t nn = strlen(name);
    if (!qn || len + nn + qn + 4 > cap) return 0;
    out[len++] = '"';
    memcpy(out + len, name, nn);
    len += nn;
    out[len++] = '"';
    out[len++] = ':';
    memcpy(out + len, q, qn);
    return len + qn;
}

/* Appends one key's entry {"topic":..,...} to out[0..len) (cap bytes).
 * Returns the new length, or 0 when it does not fit. */
static size_t put_entry(char *out, size_t cap, size_t len, const eg_sample_key *k) {
    char num[48];
    if (len + 2 > cap) return 0;
    out[len++] = '{';
    if (!(len = put_str(out, cap, len, "topic", k->topic))) return 0;
    out[len++] = ',';
    if (!(len = put_str(out, cap, len, "class", k->klass))) return 0;
    out[len++] = ',';
    if (!(len = put_str(out, cap, len, "action", k->action))) return 0;
    size_t a = eg_fmt_i64(k->logged, num, sizeof num);
    size_t b = eg_fmt_i64(k->folded, num + a + 1, sizeof num - a - 1);
    if (len + a + b + 24 > cap) return 0;
    memcpy(out + len, ",\"logged\":", 10);
    memcpy(out + len + 10, num, a);
    len += 10 + a;
    memcpy(out + len, ",\"folded\":", 10);
    memcpy(out + len + 10, num + a + 1, b);
    len += 10 + b;
    out[len++] = '}';
    return len;
}

/* Writes one decision_summary line for the second s->sec with the array
 * text keys[0..n) and its totals. */
static void write_summary(const eg_sampler *s, eg_level level, const char *keys, size_t n, int64_t logged,
                          int64_t folded) {
    eg_logline l;
    if (!eg_log_begin(&l, level, "decision_summary")) return;
    char ts[32];
    eg_rfc3339(s->sec * 1000, ts, sizeof ts);
    eg_log_str(&l, "second", ts);
    eg_log_int(&l, "per_second", s->per_second);
    eg_log_int(&l, "logged", logged);
    eg_log_int(&l, "folded", folded);
    eg_log_raw(&l, "keys", keys, n);
    eg_log_end(&l);
}

int64_t eg_sampler_flush(eg_sampler *s, int64_t now_ms) {
    if (s->sec < 0 || (now_ms >= 0 && now_ms / 1000 == s->sec)) return 0;
    /* the array of one line: fits a log line with the fields before it */
    char arr[sizeof(((eg_logline *)0)->buf) - 256];
    size_t len = 0;
    int64_t logged = 0, folded = 0, total = 0;
    eg_level level = EG_DEBUG;
    for (int j = 0; j <= s->nkeys; j++) {
        const eg_sample_key *k = &s->keys[j < s->nkeys ? j : EG_SAMPLE_KEYS]; /* the overflow key last */
        if (!k->folded) continue;
        size_t next = put_entry(arr, sizeof arr - 1, len + 1, k); /* after "[" or "," */
        if (!next && len) {                                       /* the line is full: write it, start the next */
            arr[len++] = ']';
            write_summary(s, level, arr, len, logged, folded);
            len = 0, logged = 0, folded = 0, level = EG_DEBUG;
            next = put_entry(arr, sizeof arr - 1, 1, k);
        }
        if (!next) continue; /* cannot happen: one entry always fits an empty line */
        arr[len] = len ? ',' : '[';
        len = next;
        logged += k->logged;
        folded += k->folded;
        total += k->folded;
        if (k->level > level) level = k->level;
    }
    if (len) {
        arr[len++] = ']';
        write_summary(s, level, arr, len, logged, folded);
    }
    s->nkeys = 0;
    memset(s->keys, 0, sizeof s->keys);
    s->sec = -1;
    return total;
}

int eg_sampler_admit(eg_sampler *s, const char *topic, const char *klass, const char *action, eg_level level,
                     int64_t now_ms) {
    if (s->per_second == 0) return 1;
    int64_t sec = now_ms / 1000;
    if (sec != s->sec) {
        eg_sampler_flush(s, now_ms);
        s->sec = sec;
    }
    eg_sample_key *k = key_of(s, topic, klass, action);
    if (k->logged < s->per_second) {
        k->logged++;
        return 1;
    }
    k->folded++;
    if (level > k->level) k->level = level;
    return 0;
}
