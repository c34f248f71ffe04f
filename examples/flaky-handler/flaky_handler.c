/* flaky_handler.c — a scriptable, misbehaving HTTP target for errgate.
 *
 * errgate's demo, end-to-end tests and benchmarks need a downstream service
 * whose failures are known in advance. This program is that service: errgate
 * POSTs each Kafka record to it (body = record value, plus `Errgate-Id`,
 * `Errgate-Topic`, ... headers), and the record itself says how the answer
 * should go wrong. The value is JSON like {"id":"r17","mode":"transient-2"};
 * only the top-level string fields `id` and `mode` are read, by a small
 * validating scanner (no JSON library). A body that is not a JSON object is
 * mode `ok`; a missing `id` falls back to the Errgate-Id header, then "-".
 *
 * Modes (the full table is in README.md): ok, transient-N, permanent,
 * explicit-CLASS-CODE, semantic, duplicate, bug, unavailable, ratelimit-MS,
 * json-CLASS-CODE, slow-MS, outage-MS; anything else is 400. `GET /stats`
 * answers the counters as JSON instead of being treated as a record.
 * outage-MS keeps no per-id state: it compares the handler's uptime with MS.
 *
 * Structure. One thread, one libevent loop, one evhttp server with a generic
 * callback; HTTP/1.1 keep-alive is evhttp's. Stateful modes (transient,
 * ratelimit) count requests per record id in a chained hash table (fh_table)
 * whose size is capped: past the cap a new id is refused with 500 and logged,
 * so a runaway producer cannot grow the process without bound. slow-MS never
 * sleeps: the request is parked on a timer (fh_pending) and answered when it
 * fires. libevent 2.1 stops reading a connection while its request is with
 * the user, so a client that hangs up meanwhile is only noticed when the reply
 * is written; the request object stays valid until we answer it, and
 * evhttp_send_reply frees it itself if the connection is already gone. Parked
 * requests are kept on a list so shutdown can answer them (503) and give the
 * loop one non-blocking pass to write those answers before evhttp_free
 * releases their connections.
 *
 * The success log (--log FILE, one line `ok <id> <errgate-id>` per 200; with
 * --log-time a fourth field, the wall-clock time of the success in
 * microseconds since the epoch, for the chaos runner's per-key order audit,
 * which compares successes with lane writes) is a stdio stream in append mode flushed after every line, so a test may read it
 * while the handler runs or after killing it with any signal. Measured on 2
 * cores (wrk, keep-alive) it takes ~90k req/s down to ~84k; at the 20k req/s
 * errgate's benchmarks need it is noise, so simplicity wins over a timer.
 *
 * Ownership: everything hangs off one fh_server, created in main and torn
 * down in fh_server_close; each struct below says who frees what. */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#define FH_ID_MAX 1024                /* longest record id, in bytes */
#define FH_MODE_MAX 256               /* longest mode string, in bytes */
#define FH_MAX_IDS_DEFAULT 1000000    /* id table cap (--max-ids) */
#define FH_MAX_MS 3600000UL           /* ceiling for slow-MS, ratelimit-MS, outage-MS */
#define FH_MAX_COUNT 1000000000UL     /* ceiling for transient-N */
#define FH_MAX_FAIL_ALL_MS 86400000UL /* ceiling for --fail-all-for */
#define FH_MAX_BODY (32L * 1024 * 1024)
#define FH_JSON_DEPTH 64

/* ======================================================================== */
/* Per-id counters                                                          */
/* ======================================================================== */

/* One tracked record id. Owned by its fh_table; key is NUL-terminated. */
typedef struct fh_entry {
    struct fh_entry *next;
    uint64_t hash;
    uint32_t seen; /* requests so far for this id (saturating) */
    size_t len;
    char key[];
} fh_entry;

/* Chained hash table of fh_entry, power-of-two bucket count. Owns the bucket
 * array and every entry; fh_table_free releases them all. */
typedef struct fh_table {
    fh_entry **buckets;
    size_t nbuckets;
    size_t count;
    size_t max; /* refuse new ids once count == max */
} fh_table;

enum { FH_TABLE_OK = 0, FH_TABLE_NOMEM = -1, FH_TABLE_FULL = -2 };

/* fh_hash: FNV-1a 64 of len bytes at p. Pure. */
static uint64_t fh_hash(const char *p, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* fh_table_init: empty table that will hold at most max ids.
 * Returns 0, or -1 if out of memory (t is then left empty and freeable). */
static int fh_table_init(fh_table *t, size_t max) {
    t->nbuckets = 1024;
    t->count = 0;
    t->max = max;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    if (t->buckets == NULL) {
        t->nbuckets = 0;
        return -1;
    }
    return 0;
}

/* fh_table_grow: double the bucket array and rehash. On allocation failure
 * the table is unchanged (still correct, just more loaded). */
static void fh_table_grow(fh_table *t) {
    size_t n = t->nbuckets * 2;
    fh_entry **b = calloc(n, sizeof *b);
    if (b == NULL) return;
    for (size_t i = 0; i < t->nbuckets; i++) {
        fh_entry *e = t->buckets[i];
        while (e != NULL) {
            fh_entry *next = e->next;
            size_t j = (size_t)(e->hash & (n - 1));
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = n;
}

/* fh_table_bump: count one more request for key (len bytes, no NUL needed)
 * and store the new count in *seen (1 for the first request).
 * Returns FH_TABLE_OK, FH_TABLE_FULL when key is new and the table holds max
 * ids already, or FH_TABLE_NOMEM; on error *seen is untouched. */
static int fh_table_bump(fh_table *t, const char *key, size_t len, uint32_t *seen) {
    uint64_t h = fh_hash(key, len);
    size_t i = (size_t)(h & (t->nbuckets - 1));
    for (fh_entry *e = t->buckets[i]; e != NULL; e = e->next) {
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) {
            if (e->seen < UINT32_MAX) e->seen++;
            *seen = e->seen;
            return FH_TABLE_OK;
        }
    }
    if (t->count >= t->max) return FH_TABLE_FULL;
    fh_entry *e = malloc(sizeof *e + len + 1);
    if (e == NULL) return FH_TABLE_NOMEM;
    e->hash = h;
    e->seen = 1;
    e->len = len;
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->next = t->buckets[i];
    t->buckets[i] = e;
    t->count++;
    if (t->count > t->nbuckets) fh_table_grow(t);
    *seen = 1;
    return FH_TABLE_OK;
}

/* fh_table_free: release every entry and the bucket array; t becomes empty. */
static void fh_table_free(fh_table *t) {
    for (size_t i = 0; i < t->nbuckets; i++) {
        fh_entry *e = t->buckets[i];
        while (e != NULL) {
            fh_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = 0;
    t->count = 0;
}

/* ======================================================================== */
/* Record body scanner                                                      */
/* ======================================================================== */

/* A read position in a body. Borrowed bytes; never written. */
typedef struct fh_cursor {
    const unsigned char *p;
    const unsigned char *end;
} fh_cursor;

/* The two fields the handler reads from a record value. A field is present
 * only if the body is a valid JSON object and the field's value is a string;
 * its length is the decoded length, which may exceed the buffer (overlong:
 * the buffer then holds a truncated prefix and must not be used). */
typedef struct fh_fields {
    int has_id, has_mode;
    size_t id_len, mode_len;
    char id[FH_ID_MAX + 1];
    char mode[FH_MODE_MAX + 1];
} fh_fields;

/* fh_skip_ws: advance over JSON whitespace. */
static void fh_skip_ws(fh_cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* fh_hex4: read four hex digits into *out. Returns 0, or -1 if malformed. */
static int fh_hex4(fh_cursor *c, unsigned *out) {
    unsigned v = 0;
    if (c->end - c->p < 4) return -1;
    for (int i = 0; i < 4; i++) {
        unsigned ch = *c->p++, d;
        if (ch >= '0' && ch <= '9') d = ch - '0';
        else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* fh_put: append one decoded byte to out (cap bytes, room kept for the NUL)
 * and count it in *n even when it does not fit. */
static void fh_put(char *out, size_t cap, size_t *n, unsigned ch) {
    if (out != NULL && *n + 1 < cap) out[*n] = (char)ch;
    (*n)++;
}

/* fh_scan_string: c is at an opening quote. Validate and decode the string
 * (escapes, \u with surrogate pairs, to UTF-8) into out when out is non-NULL,
 * NUL-terminating within cap; *len receives the full decoded length.
 * Returns 0; 1 if the string is valid JSON but cannot be decoded into a safe
 * C string (\u0000, or a lone surrogate); -1 if it is not valid JSON. */
static int fh_scan_string(fh_cursor *c, char *out, size_t cap, size_t *len) {
    size_t n = 0;
    int unsafe = 0;
    c->p++;
    while (c->p < c->end) {
        unsigned ch = *c->p++;
        if (ch == '"') {
            if (out != NULL && cap > 0) out[n < cap ? n : cap - 1] = '\0';
            *len = n;
            return unsafe;
        }
        if (ch < 0x20) return -1;
        if (ch != '\\') {
            fh_put(out, cap, &n, ch);
            continue;
        }
        if (c->p >= c->end) return -1;
        ch = *c->p++;
        switch (ch) {
        case '"':
        case '\\':
        case '/': fh_put(out, cap, &n, ch); break;
        case 'b': fh_put(out, cap, &n, '\b'); break;
        case 'f': fh_put(out, cap, &n, '\f'); break;
        case 'n': fh_put(out, cap, &n, '\n'); break;
        case 'r': fh_put(out, cap, &n, '\r'); break;
        case 't': fh_put(out, cap, &n, '\t'); break;
        case 'u': {
            unsigned cp, lo;
            if (fh_hex4(c, &cp) != 0) return -1;
            if (cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
                unsafe = 1; /* legal JSON, but not a byte we hand on */
                break;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u') {
                    unsafe = 1; /* lone high surrogate */
                    break;
                }
                fh_cursor save = *c;
                c->p += 2;
                if (fh_hex4(c, &lo) != 0) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) {
                    *c = save; /* the next escape stands on its own */
                    unsafe = 1;
                    break;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) {
                fh_put(out, cap, &n, cp);
            } else if (cp < 0x800) {
                fh_put(out, cap, &n, 0xC0 | (cp >> 6));
                fh_put(out, cap, &n, 0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                fh_put(out, cap, &n, 0xE0 | (cp >> 12));
                fh_put(out, cap, &n, 0x80 | ((cp >> 6) & 0x3F));
                fh_put(out, cap, &n, 0x80 | (cp & 0x3F));
            } else {
                fh_put(out, cap, &n, 0xF0 | (cp >> 18));
                fh_put(out, cap, &n, 0x80 | ((cp >> 12) & 0x3F));
                fh_put(out, cap, &n, 0x80 | ((cp >> 6) & 0x3F));
                fh_put(out, cap, &n, 0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return -1;
        }
    }
    return -1;
}

/* fh_scan_digits: one or more ASCII digits. Returns 0, or -1 if none. */
static int fh_scan_digits(fh_cursor *c) {
    const unsigned char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
    return c->p > start ? 0 : -1;
}

/* fh_scan_number: a JSON number per RFC 8259. Returns 0 or -1. */
static int fh_scan_number(fh_cursor *c) {
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p < c->end && *c->p == '0') c->p++;
    else if (fh_scan_digits(c) != 0) return -1;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (fh_scan_digits(c) != 0) return -1;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (fh_scan_digits(c) != 0) return -1;
    }
    return 0;
}

/* fh_scan_literal: the exact word w. Returns 0 or -1. */
static int fh_scan_literal(fh_cursor *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return -1;
    c->p += n;
    return 0;
}

static int fh_scan_object(fh_cursor *c, int depth, fh_fields *f);

/* fh_scan_value: validate one JSON value at c (no leading whitespace).
 * Returns 0, or -1 if malformed or nested deeper than FH_JSON_DEPTH. */
static int fh_scan_value(fh_cursor *c, int depth) {
    size_t len;
    if (c->p >= c->end || depth > FH_JSON_DEPTH) return -1;
    switch (*c->p) {
    case '{': return fh_scan_object(c, depth + 1, NULL);
    case '[':
        c->p++;
        fh_skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return 0;
        }
        for (;;) {
            if (fh_scan_value(c, depth + 1) != 0) return -1;
            fh_skip_ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ']') {
                c->p++;
                return 0;
            }
            if (*c->p != ',') return -1;
            c->p++;
            fh_skip_ws(c);
        }
    case '"': return fh_scan_string(c, NULL, 0, &len) < 0 ? -1 : 0;
    case 't': return fh_scan_literal(c, "true");
    case 'f': return fh_scan_literal(c, "false");
    case 'n': return fh_scan_literal(c, "null");
    default: return fh_scan_number(c);
    }
}

/* fh_scan_object: validate the object at c (which is at '{'). When f is
 * non-NULL (the top level), string values of the keys "id" and "mode" are
 * decoded into f; a repeated key keeps its last value. Returns 0 or -1. */
static int fh_scan_object(fh_cursor *c, int depth, fh_fields *f) {
    if (depth > FH_JSON_DEPTH) return -1;
    c->p++;
    fh_skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        char key[8];
        size_t klen;
        int krc;
        if (c->p >= c->end || *c->p != '"') return -1;
        if ((krc = fh_scan_string(c, key, sizeof key, &klen)) < 0) return -1;
        if (krc > 0) klen = 0; /* unsafe key: matches neither name */
        fh_skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return -1;
        c->p++;
        fh_skip_ws(c);
        int is_id = f != NULL && klen == 2 && memcmp(key, "id", 2) == 0;
        int is_mode = f != NULL && klen == 4 && memcmp(key, "mode", 4) == 0;
        if ((is_id || is_mode) && c->p < c->end && *c->p == '"') {
            /* an unsafe string (\u0000, lone surrogate) counts as absent */
            int rc;
            if (is_id) {
                if ((rc = fh_scan_string(c, f->id, sizeof f->id, &f->id_len)) < 0) return -1;
                f->has_id = rc == 0;
            } else {
                if ((rc = fh_scan_string(c, f->mode, sizeof f->mode, &f->mode_len)) < 0) return -1;
                f->has_mode = rc == 0;
            }
        } else {
            if (is_id) f->has_id = 0; /* non-string id: treated as absent */
            if (is_mode) f->has_mode = 0;
            if (fh_scan_value(c, depth) != 0) return -1;
        }
        fh_skip_ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == '}') {
            c->p++;
            return 0;
        }
        if (*c->p != ',') return -1;
        c->p++;
        fh_skip_ws(c);
    }
}

/* fh_scan_body: read `id` and `mode` from a record value of len bytes.
 * Returns 0 if the body is one JSON object (fields set as found), or -1 if it
 * is anything else (f is then reset to "no fields"). */
static int fh_scan_body(const void *body, size_t len, fh_fields *f) {
    f->has_id = f->has_mode = 0;
    f->id_len = f->mode_len = 0;
    if (body == NULL) return -1;
    fh_cursor c = {body, (const unsigned char *)body + len};
    fh_skip_ws(&c);
    if (c.p >= c.end || *c.p != '{' || fh_scan_object(&c, 1, f) != 0) goto bad;
    fh_skip_ws(&c);
    if (c.p != c.end) goto bad;
    return 0;
bad:
    f->has_id = f->has_mode = 0;
    return -1;
}

/* ======================================================================== */
/* Modes                                                                    */
/* ======================================================================== */

typedef enum fh_kind {
    FH_OK,
    FH_TRANSIENT,
    FH_PERMANENT,
    FH_EXPLICIT,
    FH_SEMANTIC,
    FH_DUPLICATE,
    FH_BUG,
    FH_UNAVAILABLE,
    FH_RATELIMIT,
    FH_JSON,
    FH_SLOW,
    FH_OUTAGE,
    FH_UNKNOWN
} fh_kind;

/* A parsed mode. cls/code borrow from the mode string they were parsed from. */
typedef struct fh_mode {
    fh_kind kind;
    unsigned long n; /* N of transient-N, MS of ratelimit/slow/outage */
    const char *cls; /* CLASS of explicit-/json-, NUL-free span */
    size_t cls_len;
    const char *code; /* CODE, runs to the end of the string */
} fh_mode;

/* fh_parse_ulong: s is entirely decimal digits with value <= max.
 * Returns 0 with *out set, or -1. */
static int fh_parse_ulong(const char *s, unsigned long max, unsigned long *out) {
    unsigned long v = 0;
    if (*s == '\0') return -1;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* fh_token_ok: n > 0 bytes at s are all in [A-Za-z0-9_.:-], so they can go
 * into a response header and a JSON string without escaping. */
static int fh_token_ok(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '.' || ch == ':' || ch == '-'))
            return 0;
    }
    return 1;
}

/* fh_parse_class_code: "CLASS-CODE" (CLASS has no '-', CODE may) into m.
 * Returns 0 or -1. */
static int fh_parse_class_code(const char *s, fh_mode *m) {
    const char *dash = strchr(s, '-');
    if (dash == NULL) return -1;
    m->cls = s;
    m->cls_len = (size_t)(dash - s);
    m->code = dash + 1;
    if (!fh_token_ok(m->cls, m->cls_len) || !fh_token_ok(m->code, strlen(m->code))) return -1;
    return 0;
}

/* fh_mode_parse: classify the NUL-terminated mode string s into *m. Unknown or
 * malformed modes (bad numbers, bad tokens) come back as FH_UNKNOWN. m borrows
 * from s. */
static void fh_mode_parse(const char *s, fh_mode *m) {
    static const struct {
        const char *name;
        fh_kind kind;
    } plain[] = {
        {"ok", FH_OK},   {"permanent", FH_PERMANENT},     {"semantic", FH_SEMANTIC}, {"duplicate", FH_DUPLICATE},
        {"bug", FH_BUG}, {"unavailable", FH_UNAVAILABLE},
    };
    memset(m, 0, sizeof *m);
    m->kind = FH_UNKNOWN;
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (strcmp(s, plain[i].name) == 0) {
            m->kind = plain[i].kind;
            return;
        }
    }
    if (strncmp(s, "transient-", 10) == 0) {
        if (fh_parse_ulong(s + 10, FH_MAX_COUNT, &m->n) == 0) m->kind = FH_TRANSIENT;
    } else if (strncmp(s, "ratelimit-", 10) == 0) {
        if (fh_parse_ulong(s + 10, FH_MAX_MS, &m->n) == 0) m->kind = FH_RATELIMIT;
    } else if (strncmp(s, "slow-", 5) == 0) {
        if (fh_parse_ulong(s + 5, FH_MAX_MS, &m->n) == 0) m->kind = FH_SLOW;
    } else if (strncmp(s, "outage-", 7) == 0) {
        if (fh_parse_ulong(s + 7, FH_MAX_MS, &m->n) == 0) m->kind = FH_OUTAGE;
    } else if (strncmp(s, "explicit-", 9) == 0) {
        if (fh_parse_class_code(s + 9, m) == 0) m->kind = FH_EXPLICIT;
    } else if (strncmp(s, "json-", 5) == 0) {
        if (fh_parse_class_code(s + 5, m) == 0) m->kind = FH_JSON;
    }
}

/* ======================================================================== */
/* Server                                                                   */
/* ======================================================================== */

typedef struct fh_server fh_server;

/* A slow-MS request parked until its timer fires. Owns its timer event and
 * the copied id strings (in data[]); borrows req, which libevent keeps alive
 * until we answer it. Linked on fh_server.pending; freed by fh_pending_free. */
typedef struct fh_pending {
    struct fh_pending *prev, *next;
    fh_server *srv;
    struct evhttp_request *req;
    struct event *timer;
    const char *id;   /* into data[] */
    const char *egid; /* into data[] */
    char data[];
} fh_pending;

/* The whole process state. Owns every pointer below; fh_server_close frees
 * them in dependency order. */
struct fh_server {
    struct event_base *base;
    struct evhttp *http;
    struct event *sigint, *sigterm;
    FILE *log;      /* --log stream or NULL */
    int log_failed; /* a log write failed; reported at exit */
    int log_time;   /* --log-time: a fourth field, the success's wall-clock time in µs */
    int closing;    /* shutting down: answer everything 503 */
    fh_table ids;
    fh_pending *pending; /* parked slow requests */
    size_t npending;
    struct timespec started; /* monotonic, when listening began */
    unsigned long fail_all_ms;
    uint64_t requests, ok, failed, refused;
};

/* fh_elapsed_ms: monotonic milliseconds since srv->started. */
static uint64_t fh_elapsed_ms(const fh_server *srv) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t ms = (int64_t)(now.tv_sec - srv->started.tv_sec) * 1000 + (now.tv_nsec - srv->started.tv_nsec) / 1000000;
    return ms < 0 ? 0 : (uint64_t)ms;
}

/* fh_log_token: write s to f with bytes <= 0x20, 0x7f and '%' percent-encoded,
 * so a log line always has exactly three space-separated fields; an empty s
 * is written as "-". */
static void fh_log_token(FILE *f, const char *s) {
    if (*s == '\0') {
        fputc('-', f);
        return;
    }
    for (; *s != '\0'; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch == 0x7f || ch == '%') fprintf(f, "%%%02X", ch);
        else fputc(ch, f);
    }
}

/* fh_log_flush: push buffered log lines to the file; a failure is reported
 * once on stderr and makes the exit status 1. */
static void fh_log_flush(fh_server *srv) {
    if (srv->log == NULL) return;
    if ((fflush(srv->log) != 0 || ferror(srv->log)) && !srv->log_failed) {
        fprintf(stderr, "flaky-handler: writing the log failed: %s\n", strerror(errno));
        srv->log_failed = 1;
    }
}

/* fh_log_ok: append `ok <id> <egid>` (and, with --log-time, the wall-clock
 * time in µs) to the success log, if there is one. */
static void fh_log_ok(fh_server *srv, const char *id, const char *egid) {
    if (srv->log == NULL) return;
    fputs("ok ", srv->log);
    fh_log_token(srv->log, id);
    fputc(' ', srv->log);
    fh_log_token(srv->log, egid);
    if (srv->log_time) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        fprintf(srv->log, " %" PRId64, (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    }
    fputc('\n', srv->log);
    fh_log_flush(srv);
}

/* fh_send: answer req with code/reason and a body of len bytes of ctype, and
 * count it (200 is ok, anything else failed). req is handed back to libevent
 * and must not be touched afterwards. */
static void fh_send(fh_server *srv, struct evhttp_request *req, int code, const char *reason, const char *ctype,
                    const char *body, size_t len) {
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    if (len > 0) evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    if (code == 200) srv->ok++;
    else srv->failed++;
    evhttp_send_reply(req, code, reason, NULL);
}

/* fh_send_text: fh_send with a NUL-terminated text/plain body. */
static void fh_send_text(fh_server *srv, struct evhttp_request *req, int code, const char *reason, const char *text) {
    fh_send(srv, req, code, reason, "text/plain", text, strlen(text));
}

/* fh_succeed: log the success and answer 200. */
static void fh_succeed(fh_server *srv, struct evhttp_request *req, const char *id, const char *egid) {
    fh_log_ok(srv, id, egid);
    fh_send_text(srv, req, 200, "OK", "ok\n");
}

/* fh_bump: count a request for id in the table. Returns 0 with *seen set, or
 * -1 after answering req with 500 (table full or out of memory). */
static int fh_bump(fh_server *srv, struct evhttp_request *req, const char *id, uint32_t *seen) {
    int rc = fh_table_bump(&srv->ids, id, strlen(id), seen);
    if (rc == FH_TABLE_OK) return 0;
    srv->refused++;
    if (rc == FH_TABLE_FULL) {
        if (srv->refused == 1 || srv->refused % 10000 == 0)
            fprintf(stderr,
                    "flaky-handler: id table full (%zu ids), refusing new ids with 500"
                    " (%" PRIu64 " refused so far)\n",
                    srv->ids.count, srv->refused);
        fh_send_text(srv, req, 500, "Internal Server Error", "id table full\n");
    } else {
        fprintf(stderr, "flaky-handler: out of memory tracking id\n");
        fh_send_text(srv, req, 500, "Internal Server Error", "out of memory\n");
    }
    return -1;
}

/* fh_pending_free: unlink p from its server, free its timer and itself.
 * Does not touch p->req. */
static void fh_pending_free(fh_pending *p) {
    fh_server *srv = p->srv;
    if (p->prev != NULL) p->prev->next = p->next;
    else srv->pending = p->next;
    if (p->next != NULL) p->next->prev = p->prev;
    srv->npending--;
    event_free(p->timer);
    free(p);
}

/* fh_on_slow_timer: a parked slow request is due; answer it 200. If the
 * client already hung up, evhttp_send_reply frees the request itself. */
static void fh_on_slow_timer(evutil_socket_t fd, short what, void *arg) {
    fh_pending *p = arg;
    fh_succeed(p->srv, p->req, p->id, p->egid);
    fh_pending_free(p);
}

/* fh_park: hold req for ms milliseconds, then answer 200 (fh_on_slow_timer).
 * id and egid are copied. Returns 0, or -1 after answering 500. */
static int fh_park(fh_server *srv, struct evhttp_request *req, unsigned long ms, const char *id, const char *egid) {
    size_t il = strlen(id) + 1, el = strlen(egid) + 1;
    fh_pending *p = malloc(sizeof *p + il + el);
    if (p == NULL) goto fail;
    p->timer = evtimer_new(srv->base, fh_on_slow_timer, p);
    if (p->timer == NULL) {
        free(p);
        goto fail;
    }
    memcpy(p->data, id, il);
    memcpy(p->data + il, egid, el);
    p->id = p->data;
    p->egid = p->data + il;
    p->srv = srv;
    p->req = req;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    if (evtimer_add(p->timer, &tv) != 0) {
        event_free(p->timer);
        free(p);
        goto fail;
    }
    p->prev = NULL;
    p->next = srv->pending;
    if (srv->pending != NULL) srv->pending->prev = p;
    srv->pending = p;
    srv->npending++;
    return 0;
fail:
    fprintf(stderr, "flaky-handler: cannot park slow request\n");
    fh_send_text(srv, req, 500, "Internal Server Error", "cannot park request\n");
    return -1;
}

/* fh_send_stats: answer GET /stats with the counters as JSON. Not counted. */
static void fh_send_stats(fh_server *srv, struct evhttp_request *req) {
    char buf[256];
    int n = snprintf(buf, sizeof buf,
                     "{\"requests\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"failed\":%" PRIu64
                     ",\"pending\":%zu,\"ids\":%zu,\"refused\":%" PRIu64 "}\n",
                     srv->requests, srv->ok, srv->failed, srv->npending, srv->ids.count, srv->refused);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evbuffer_add(evhttp_request_get_output_buffer(req), buf, (size_t)n);
    evhttp_send_reply(req, 200, "OK", NULL);
}

/* fh_is_stats: req is `GET /stats` (any query string). */
static int fh_is_stats(struct evhttp_request *req) {
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) return 0;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u != NULL ? evhttp_uri_get_path(u) : NULL;
    return path != NULL && strcmp(path, "/stats") == 0;
}

/* fh_on_request: evhttp's generic callback; every request lands here and is
 * answered (now, or later by fh_on_slow_timer) exactly once. */
static void fh_on_request(struct evhttp_request *req, void *arg) {
    fh_server *srv = arg;
    fh_fields f;
    fh_mode m;
    char buf[320];
    uint32_t seen;

    if (fh_is_stats(req)) {
        fh_send_stats(srv, req);
        return;
    }
    srv->requests++;
    if (srv->closing) {
        fh_send_text(srv, req, 503, "Service Unavailable", "shutting down\n");
        return;
    }
    if (srv->fail_all_ms > 0 && fh_elapsed_ms(srv) < srv->fail_all_ms) {
        fh_send_text(srv, req, 503, "Service Unavailable", "down (--fail-all-for)\n");
        return;
    }

    const char *egid = evhttp_find_header(evhttp_request_get_input_headers(req), "Errgate-Id");
    if (egid == NULL || *egid == '\0') egid = "-";
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const void *body = len > 0 ? evbuffer_pullup(in, -1) : NULL;
    fh_scan_body(body, len, &f);

    if (f.has_id && f.id_len > FH_ID_MAX) {
        fh_send_text(srv, req, 400, "Bad Request", "id too long\n");
        return;
    }
    if (f.has_mode && f.mode_len > FH_MODE_MAX) {
        fh_send_text(srv, req, 400, "Bad Request", "unknown mode\n");
        return;
    }
    const char *id = f.has_id ? f.id : egid;
    fh_mode_parse(f.has_mode ? f.mode : "ok", &m);

    switch (m.kind) {
    case FH_OK: fh_succeed(srv, req, id, egid); return;
    case FH_TRANSIENT:
        if (m.n > 0) {
            if (fh_bump(srv, req, id, &seen) != 0) return;
            if (seen <= m.n) {
                snprintf(buf, sizeof buf, "transient failure %" PRIu32 "/%lu\n", seen, m.n);
                fh_send_text(srv, req, 503, "Service Unavailable", buf);
                return;
            }
        }
        fh_succeed(srv, req, id, egid);
        return;
    case FH_RATELIMIT:
        if (fh_bump(srv, req, id, &seen) != 0) return;
        if (seen == 1) {
            snprintf(buf, sizeof buf, "%lu", (m.n + 999) / 1000);
            evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", buf);
            fh_send_text(srv, req, 429, "Too Many Requests", "rate limited\n");
            return;
        }
        fh_succeed(srv, req, id, egid);
        return;
    case FH_SLOW: fh_park(srv, req, m.n, id, egid); return;
    case FH_OUTAGE:
        if (fh_elapsed_ms(srv) < m.n) {
            fh_send_text(srv, req, 503, "Service Unavailable", "outage\n");
            return;
        }
        fh_succeed(srv, req, id, egid);
        return;
    case FH_PERMANENT: fh_send_text(srv, req, 400, "Bad Request", "permanent failure\n"); return;
    case FH_EXPLICIT: {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        snprintf(buf, sizeof buf, "%.*s", (int)m.cls_len, m.cls);
        evhttp_add_header(h, "Error-Class", buf);
        evhttp_add_header(h, "Error-Code", m.code);
        fh_send_text(srv, req, 400, "Bad Request", "explicit failure\n");
        return;
    }
    case FH_JSON: {
        int n = snprintf(buf, sizeof buf, "{\"error\":{\"class\":\"%.*s\",\"code\":\"%s\",\"message\":\"from body\"}}",
                         (int)m.cls_len, m.cls, m.code);
        /* mode <= FH_MODE_MAX bytes, so the body always fits buf */
        fh_send(srv, req, 418, "I'm a teapot", "application/json", buf, (size_t)n);
        return;
    }
    case FH_SEMANTIC: fh_send_text(srv, req, 422, "Unprocessable Entity", "semantic failure\n"); return;
    case FH_DUPLICATE: fh_send_text(srv, req, 409, "Conflict", "duplicate\n"); return;
    case FH_BUG: fh_send_text(srv, req, 500, "Internal Server Error", "handler bug\n"); return;
    case FH_UNAVAILABLE: fh_send_text(srv, req, 503, "Service Unavailable", "unavailable\n"); return;
    case FH_UNKNOWN:
    default: fh_send_text(srv, req, 400, "Bad Request", "unknown mode\n"); return;
    }
}

/* fh_on_signal: SIGINT/SIGTERM end the loop; main then cleans up. */
static void fh_on_signal(evutil_socket_t sig, short what, void *arg) {
    fh_server *srv = arg;
    event_base_loopbreak(srv->base);
}

/* ======================================================================== */
/* Setup and teardown                                                       */
/* ======================================================================== */

/* Parsed command line. Strings borrow from argv. */
typedef struct fh_options {
    unsigned long port;
    const char *bind;
    const char *log;
    unsigned long fail_all_ms;
    unsigned long max_ids;
    int log_time;
} fh_options;

static const char fh_usage[] =
    "usage: flaky-handler [--port N] [--bind ADDR] [--log FILE] [--log-time] [--fail-all-for MS]\n"
    "                     [--max-ids N]\n";

/* fh_parse_args: fill o from argv. Returns 0, 1 for --help (usage printed),
 * or 2 after printing one error line on stderr. */
static int fh_parse_args(int argc, char **argv, fh_options *o) {
    o->port = 0;
    o->bind = "127.0.0.1";
    o->log = NULL;
    o->fail_all_ms = 0;
    o->max_ids = FH_MAX_IDS_DEFAULT;
    o->log_time = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL, *eq;
        char name[32];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(fh_usage, stdout);
            return 1;
        }
        if (strcmp(a, "--log-time") == 0) { /* a flag: no value */
            o->log_time = 1;
            continue;
        }
        eq = strchr(a, '=');
        if (strncmp(a, "--", 2) == 0 && eq != NULL && (size_t)(eq - a) < sizeof name) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", strlen(a) < sizeof name ? a : "?");
        }
        int known = strcmp(name, "--port") == 0 || strcmp(name, "--bind") == 0 || strcmp(name, "--log") == 0 ||
                    strcmp(name, "--fail-all-for") == 0 || strcmp(name, "--max-ids") == 0;
        if (!known) {
            fprintf(stderr, "flaky-handler: unknown argument '%s' (try --help)\n", a);
            return 2;
        }
        if (v == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "flaky-handler: %s needs a value\n", name);
                return 2;
            }
            v = argv[++i];
        }
        if (strcmp(name, "--port") == 0) {
            if (fh_parse_ulong(v, 65535, &o->port) != 0) {
                fprintf(stderr, "flaky-handler: --port needs a number 0..65535, got '%s'\n", v);
                return 2;
            }
        } else if (strcmp(name, "--fail-all-for") == 0) {
            if (fh_parse_ulong(v, FH_MAX_FAIL_ALL_MS, &o->fail_all_ms) != 0) {
                fprintf(stderr, "flaky-handler: --fail-all-for needs milliseconds 0..%lu, got '%s'\n",
                        FH_MAX_FAIL_ALL_MS, v);
                return 2;
            }
        } else if (strcmp(name, "--max-ids") == 0) {
            if (fh_parse_ulong(v, 100000000UL, &o->max_ids) != 0 || o->max_ids == 0) {
                fprintf(stderr, "flaky-handler: --max-ids needs a number 1..100000000, got '%s'\n", v);
                return 2;
            }
        } else if (*v == '\0') {
            fprintf(stderr, "flaky-handler: %s needs a non-empty value\n", name);
            return 2;
        } else if (strcmp(name, "--bind") == 0) {
            o->bind = v;
        } else {
            o->log = v;
        }
    }
    return 0;
}

/* fh_server_close: answer parked requests (503, shutting down) and give the
 * loop one non-blocking pass to write them, then free everything srv owns,
 * in dependency order. Safe on a partly built srv.
 * Returns 0, or -1 if the log could not be written completely. */
static int fh_server_close(fh_server *srv) {
    srv->closing = 1; /* nothing new gets parked from here on */
    while (srv->pending != NULL) {
        fh_pending *p = srv->pending;
        fh_send_text(srv, p->req, 503, "Service Unavailable", "shutting down\n");
        fh_pending_free(p);
    }
    if (srv->base != NULL) event_base_loop(srv->base, EVLOOP_NONBLOCK);
    if (srv->sigint != NULL) event_free(srv->sigint);
    if (srv->sigterm != NULL) event_free(srv->sigterm);
    if (srv->http != NULL) evhttp_free(srv->http);
    if (srv->base != NULL) event_base_free(srv->base);
    fh_table_free(&srv->ids);
    int rc = 0;
    if (srv->log != NULL) {
        fh_log_flush(srv);
        if (fclose(srv->log) != 0 && !srv->log_failed) {
            fprintf(stderr, "flaky-handler: closing the log failed: %s\n", strerror(errno));
            srv->log_failed = 1;
        }
        srv->log = NULL;
    }
    if (srv->log_failed) rc = -1;
    memset(srv, 0, sizeof *srv);
    return rc;
}

/* fh_print_listening: write `listening=ADDR:PORT` for the bound socket fd to
 * stdout and flush it. Returns 0 or -1. */
static int fh_print_listening(evutil_socket_t fd) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN];
    unsigned port;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
        if (inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host) == NULL) return -1;
        port = ntohs(sin->sin_port);
        printf("listening=%s:%u\n", host, port);
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)&ss;
        if (inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host) == NULL) return -1;
        port = ntohs(sin6->sin6_port);
        printf("listening=[%s]:%u\n", host, port);
    } else {
        return -1;
    }
    return fflush(stdout) == 0 ? 0 : -1;
}

/* fh_server_open: build srv from o: log file, loop, HTTP server bound and
 * announced on stdout, signal handlers. Returns 0, or -1 after one line on
 * stderr (srv is then still safe to pass to fh_server_close). */
static int fh_server_open(fh_server *srv, const fh_options *o) {
    memset(srv, 0, sizeof *srv);
    srv->fail_all_ms = o->fail_all_ms;
    srv->log_time = o->log_time;
    if (fh_table_init(&srv->ids, o->max_ids) != 0) {
        fprintf(stderr, "flaky-handler: out of memory\n");
        return -1;
    }
    if (o->log != NULL) {
        srv->log = fopen(o->log, "a");
        if (srv->log == NULL) {
            fprintf(stderr, "flaky-handler: cannot open log '%s': %s\n", o->log, strerror(errno));
            return -1;
        }
    }
    srv->base = event_base_new();
    if (srv->base == NULL || (srv->http = evhttp_new(srv->base)) == NULL) {
        fprintf(stderr, "flaky-handler: cannot create the event loop\n");
        return -1;
    }
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                              EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                              EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_max_body_size(srv->http, FH_MAX_BODY);
    evhttp_set_gencb(srv->http, fh_on_request, srv);

    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(srv->http, o->bind, (ev_uint16_t)o->port);
    if (bs == NULL) {
        fprintf(stderr, "flaky-handler: cannot listen on %s:%lu: %s\n", o->bind, o->port, strerror(errno));
        return -1;
    }
    srv->sigint = evsignal_new(srv->base, SIGINT, fh_on_signal, srv);
    srv->sigterm = evsignal_new(srv->base, SIGTERM, fh_on_signal, srv);
    if (srv->sigint == NULL || srv->sigterm == NULL || evsignal_add(srv->sigint, NULL) != 0 ||
        evsignal_add(srv->sigterm, NULL) != 0) {
        fprintf(stderr, "flaky-handler: cannot install signal handlers\n");
        return -1;
    }
    if (fh_print_listening(evhttp_bound_socket_get_fd(bs)) != 0) {
        fprintf(stderr, "flaky-handler: cannot announce the listening address\n");
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &srv->started);
    return 0;
}

/* main: exit 0 after SIGINT/SIGTERM, 1 on a runtime failure, 2 on bad args. */
int main(int argc, char **argv) {
    fh_options o;
    fh_server srv;
    int rc = fh_parse_args(argc, argv, &o);
    if (rc != 0) return rc == 1 ? 0 : 2;
    signal(SIGPIPE, SIG_IGN); /* a client hanging up must not kill us */

    rc = 0;
    if (fh_server_open(&srv, &o) != 0) rc = 1;
    else if (event_base_dispatch(srv.base) < 0) {
        fprintf(stderr, "flaky-handler: event loop failed\n");
        rc = 1;
    }
    if (fh_server_close(&srv) != 0) rc = 1;
    libevent_global_shutdown();
    return rc;
}
