/* target_http.c — the HTTP target: POST each record to a URL (libcurl).
 *
 * libcurl's multi interface runs on the gateway's libevent loop: curl tells
 * us which sockets to watch (one event per socket) and when to wake it (one
 * timer), and we hand it readiness through curl_multi_socket_action. curl
 * does the protocol: http:// and https:// (TLS, client certificates),
 * HTTP/1.1 keep-alive and HTTP/2 multiplexing, interim 1xx responses,
 * chunked and close-delimited bodies, asynchronous DNS (its threaded
 * resolver: nothing blocks the loop). errgate keeps what is its own:
 *
 * - the pool bound: `concurrency` slots, each one easy handle carrying at
 *   most one request; a slot belongs to one record from submit to done, and
 *   a response is credited only to the record of the handle it came back on;
 * - the request: POST, body = record value (borrowed, not copied); headers
 *   Errgate-Id, Errgate-Topic, Errgate-Partition, Errgate-Offset, Errgate-Key
 *   (or Errgate-Key-Base64 for a key that is not printable ASCII), the
 *   configured static headers (target.http.headers; values read from files
 *   are re-read on reload and never logged), then the record's Kafka headers
 *   whose name is an HTTP token and whose value is printable (others are
 *   skipped, never sent raw);
 * - the answer: 2xx is success; any other status is a failure of kind `http`
 *   carrying the status, Error-Class, Error-Code, Retry-After (seconds or
 *   HTTP-date) and the first EG_BODY_CAP bytes of the body (the Lua runtime
 *   reads a JSON error body's class, code and message from it). Body bytes
 *   are counted and dropped as they arrive: past max_response_bytes the
 *   transfer stops and its connection is closed, and the status still
 *   counts (its status line and headers were complete and in turn);
 * - the deadline: timeout_ms per request (CURLOPT_TIMEOUT_MS), a failure of
 *   kind `timeout`;
 * - framing (HTTP/1.x): anything that cannot belong to the request in flight
 *   fails that request alone with kind `connect` and its connection is never
 *   used again: a malformed status line or header (curl refuses it); bytes
 *   beyond the end of the answer in the same read, after a body with a
 *   length, after chunks or after an answer without body (curl drops them
 *   and says so only in its verbose text, switched on at the end of the
 *   final answer's headers: reuse is forbidden the moment it says so); and
 *   bytes already waiting on the connection when the answer is seen done
 *   (unsolicited: the socket is shut down so that curl's liveness check
 *   discards it, unless curl already gave the connection to the next
 *   request, whose answer they then are). TLS handshake or verification
 *   failures are kind `connect`, code `tls`; other transport errors kind
 *   `connect`.
 * Every finished attempt is observed in the target latency histogram by
 * status class: 2xx..5xx, timeout, connect.
 *
 * Cost per request (bench/http_cost.sh measures it): the URL is parsed once
 * and handed to curl as a CURLU; header lines are copied into per-slot
 * arrays, never formatted. What remains is mostly curl 7.88's own: its
 * printf engine appends every byte of the request head one at a time
 * (about half of curl's share), its response header parsing and its
 * connection-cache lookup. Verbose text is on only from the end of the
 * final answer's headers to the end of a body with a length, so it is
 * formatted on few requests (a bodyless or chunked answer keeps it on to
 * the end: one line more). */
#include "log.h"
#include "metrics.h"
#include "target.h"
#include "util.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES_MAX (64 * 1024) /* response header bytes, 1xx included */

/* A request's header lines as a curl_slist whose nodes and text live in
 * arrays the slot keeps from one request to the next (no allocation per
 * line; curl only reads the list). */
typedef struct hdrlist {
    struct curl_slist *nodes;
    size_t *off; /* each line's offset in buf */
    int n, cap;
    char *buf;
    size_t len, size;
} hdrlist;

typedef struct slot {
    struct http_target *ht;
    CURL *easy;
    eg_record *rec;   /* NULL when the slot is free */
    hdrlist hdrs;     /* this request's header lines, reused */
    curl_socket_t fd; /* the socket curl last watched for this request */
    int64_t started_ms;
    int64_t started_ns; /* for the latency histogram (metrics.h) */
    char *body;         /* the first EG_BODY_CAP bytes of the body */
    size_t body_len;
    size_t body_seen; /* body bytes read, kept or not */
    size_t header_seen;
    int over_cap; /* stopped reading: body beyond max_response_bytes */
    int headers_too_big;
    int verbose;       /* curl's verbose text is on for this transfer */
    curl_off_t length; /* the final answer's Content-Length, -1 none */
    int excess;        /* curl dropped bytes beyond the end of the answer */
    char reason[64];   /* the last status line's reason phrase ("" on HTTP/2) */
    char errbuf[CURL_ERROR_SIZE];
    struct slot *next_free;
} slot;

/* A socket the loop watches for curl, on a list so that destroy frees what
 * is left. A connection socket curl opened through open_socket (`owned`)
 * keeps its watch from open to close: while its connection waits in curl's
 * cache between requests curl stops watching it, and the watch is parked,
 * left registered for reading, so that the next request on the connection
 * costs no epoll_ctl; a parked socket that turns readable (the server
 * closed it or sent bytes nobody asked for) is unregistered, and curl finds
 * it dead before any reuse. Other sockets are watched only while curl asks. */
typedef struct sockwatch {
    struct http_target *ht;
    struct event *ev;
    curl_socket_t fd;
    short kind; /* the events registered, 0 when none */
    int owned;  /* opened by open_socket, closed by close_socket */
    int parked; /* curl does not watch it now */
    struct sockwatch *prev, *next;
} sockwatch;

typedef struct http_target {
    eg_target base;
    struct event_base *evbase;
    const eg_config *cfg; /* borrowed: the gateway's config outlives the target */
    CURLM *multi;
    struct event *timer;
    CURLU *url; /* parsed once; its host replaced by tls.server_name, if set */
    struct curl_slist *connect_to;
    int https;
    char **static_lines; /* "Name: value" per configured header */
    slot *slots;
    int nslots;
    slot *free_list;
    int nfree;
    sockwatch *watches;
} http_target;

static void check_done(http_target *ht);

/* Ends the slot's request (removing the handle aborts an unfinished
 * transfer) and puts the slot back on the free list. */
static void release(slot *s) {
    http_target *ht = s->ht;
    curl_multi_remove_handle(ht->multi, s->easy);
    s->rec = NULL;
    s->next_free = ht->free_list;
    ht->free_list = s;
    ht->nfree++;
    ht->base.inflight--;
}

/* ------------------------------------------------------------ loop glue */

static void on_socket_ready(evutil_socket_t fd, short what, void *arg);

static sockwatch *watch_find(http_target *ht, curl_socket_t fd) {
    for (sockwatch *w = ht->watches; w; w = w->next)
        if (w->fd == fd) return w;
    return NULL;
}

/* A new watch of fd, registered for nothing yet. */
static sockwatch *watch_new(http_target *ht, curl_socket_t fd, int owned) {
    sockwatch *w = eg_xcalloc(1, sizeof *w);
    w->ht = ht;
    w->fd = fd;
    w->owned = owned;
    w->ev = event_new(ht->evbase, fd, 0, on_socket_ready, w);
    w->next = ht->watches;
    if (w->next) w->next->prev = w;
    ht->watches = w;
    return w;
}

/* Registers w for `kind` (EV_READ and/or EV_WRITE; 0: unregisters);
 * nothing to do when it already is. */
static void watch_set(sockwatch *w, short kind) {
    if (w->kind == kind) return;
    if (w->kind) event_del(w->ev);
    w->kind = kind;
    if (!kind) return;
    event_assign(w->ev, w->ht->evbase, w->fd, kind | EV_PERSIST, on_socket_ready, w);
    event_add(w->ev, NULL);
}

static void watch_free(sockwatch *w) {
    http_target *ht = w->ht;
    event_free(w->ev);
    if (w->prev) w->prev->next = w->next;
    else ht->watches = w->next;
    if (w->next) w->next->prev = w->prev;
    free(w);
}

static void on_socket_ready(evutil_socket_t fd, short what, void *arg) {
    sockwatch *w = arg;
    http_target *ht = w->ht;
    if (w->parked) { /* an idle connection turned readable: curl will find it dead */
        watch_set(w, 0);
        return;
    }
    int running, flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);
    curl_multi_socket_action(ht->multi, fd, flags, &running); /* may free w */
    check_done(ht);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    http_target *ht = arg;
    int running;
    curl_multi_socket_action(ht->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(ht);
}

/* CURLMOPT_SOCKETFUNCTION: watch fd for what curl asks, or stop watching
 * (an owned socket's watch is parked). */
static int curl_socket_cb(CURL *e, curl_socket_t fd, int what, void *arg, void *sockp) {
    http_target *ht = arg;
    sockwatch *w = sockp ? sockp : watch_find(ht, fd);
    slot *s = NULL;
    if (e && what != CURL_POLL_REMOVE && curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&s) == CURLE_OK && s)
        s->fd = fd;
    if (what == CURL_POLL_REMOVE) {
        if (!w) return 0;
        curl_multi_assign(ht->multi, fd, NULL);
        if (!w->owned) {
            watch_free(w);
        } else {
            w->parked = 1;
            if (w->kind & EV_WRITE) watch_set(w, EV_READ); /* an idle socket is always writable */
        }
        return 0;
    }
    if (!w) w = watch_new(ht, fd, 0);
    if (!sockp) curl_multi_assign(ht->multi, fd, w);
    w->parked = 0;
    watch_set(w, (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0));
    return 0;
}

/* CURLOPT_OPENSOCKETFUNCTION: a connection socket, with its watch (see
 * sockwatch). A watch left on the same number is stale and goes first. */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a) {
    http_target *ht = arg;
    curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
    if (fd == CURL_SOCKET_BAD) return fd;
    sockwatch *stale = watch_find(ht, fd);
    if (stale) watch_free(stale);
    if (purpose == CURLSOCKTYPE_IPCXN) watch_new(ht, fd, 1);
    return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: the socket's watch ends before the socket. */
static int close_socket(void *arg, curl_socket_t fd) {
    sockwatch *w = watch_find(arg, fd);
    if (w) watch_free(w);
    return close(fd);
}

/* CURLMOPT_TIMERFUNCTION: one timer; -1 removes it. */
static int curl_timer_cb(CURLM *m, long ms, void *arg) {
    http_target *ht = arg;
    if (ms < 0) {
        evtimer_del(ht->timer);
        return 0;
    }
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(ht->timer, &tv);
    return 0;
}

/* ------------------------------------------------------------- response */

/* CURLOPT_WRITEFUNCTION: keeps the first EG_BODY_CAP bytes, counts the
 * rest, stops the transfer past max_response_bytes; silences curl's
 * verbose text once a body with a length is complete. */
static size_t on_body(char *p, size_t size, size_t n, void *arg) {
    slot *s = arg;
    size_t len = size * n;
    if (s->body_len < EG_BODY_CAP) {
        size_t k = EG_BODY_CAP - s->body_len < len ? EG_BODY_CAP - s->body_len : len;
        memcpy(s->body + s->body_len, p, k);
        s->body_len += k;
    }
    s->body_seen += len;
    if (s->verbose && s->length > 0 && s->body_seen >= (size_t)s->length) {
        curl_easy_setopt(s->easy, CURLOPT_VERBOSE, 0L); /* curl reports excess before the last write */
        s->verbose = 0;
    }
    if (s->body_seen > (size_t)s->ht->cfg->http_max_response_bytes) {
        s->over_cap = 1;
        return 0; /* CURLE_WRITE_ERROR: curl closes the connection */
    }
    return len;
}

/* Copies the reason phrase of status line p[0..n) ("HTTP/1.1 503 Service
 * Unavailable\r\n") into out, printable ASCII only, "" when there is none. */
static void status_reason(const char *p, size_t n, char *out, size_t outlen) {
    size_t i = 0, o = 0;
    while (i < n && p[i] != ' ') i++; /* the version */
    while (i < n && p[i] == ' ') i++;
    while (i < n && p[i] >= '0' && p[i] <= '9') i++; /* the code */
    while (i < n && p[i] == ' ') i++;
    for (; i < n && o + 1 < outlen && p[i] != '\r' && p[i] != '\n'; i++)
        out[o++] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?';
    out[o] = '\0';
}

/* CURLOPT_HEADERFUNCTION: bounds the header bytes (interim responses
 * included); curl keeps the final response's headers for curl_easy_header.
 * Bytes after the end of an answer in the same read are dropped by curl,
 * and it says so only in its verbose text ("Excess found" after a body
 * with a length or without body, "Leftovers after chunking"): at the end of
 * the final answer's headers curl is asked to talk for the rest of this
 * transfer, and on_debug listens. */
static size_t on_header(char *p, size_t size, size_t n, void *arg) {
    slot *s = arg;
    s->header_seen += size * n;
    if (s->header_seen > HEADER_BYTES_MAX) {
        s->headers_too_big = 1;
        return 0;
    }
    if (size * n > 5 && memcmp(p, "HTTP/", 5) == 0) status_reason(p, size * n, s->reason, sizeof s->reason);
    if (size * n <= 2 && (p[0] == '\r' || p[0] == '\n') && !s->verbose) {
        long status = 0;
        curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200) {
            curl_easy_getinfo(s->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &s->length);
            curl_easy_setopt(s->easy, CURLOPT_VERBOSE, 1L);
            s->verbose = 1;
        }
    }
    return size * n;
}

/* CURLOPT_DEBUGFUNCTION (only while verbose): on curl's "Excess found" or
 * "Leftovers after chunking", notes it and forbids the connection's reuse
 * at once (curl would otherwise hand it to the next request before we see
 * this one done). */
static int on_debug(CURL *e, curl_infotype type, char *text, size_t n, void *arg) {
    slot *s = arg;
    if (type == CURLINFO_TEXT && !s->excess &&
        ((n >= 12 && memcmp(text, "Excess found", 12) == 0) ||
         (n >= 24 && memcmp(text, "Leftovers after chunking", 24) == 0))) {
        s->excess = 1;
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    }
    return 0;
}

static int printable(const char *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e) return 0;
    return 1;
}

/* The final response's header `name`, or NULL. */
static const char *response_header(CURL *e, const char *name) {
    struct curl_header *h;
    return curl_easy_header(e, name, 0, CURLH_HEADER, -1, &h) == CURLHE_OK ? h->value : NULL;
}

/* Parses Retry-After: delta-seconds or an IMF-fixdate. Returns ms or -1. */
static int64_t parse_retry_after(const char *v) {
    if (!v) return -1;
    while (*v == ' ') v++;
    if (isdigit((unsigned char)*v)) {
        char *end;
        long long sec = strtoll(v, &end, 10);
        if (*end && *end != ' ') return -1;
        if (sec > 86400) sec = 86400;
        return sec * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end) return -1;
    int64_t at = (int64_t)timegm(&tm) * 1000, now = eg_wall_ms();
    return at > now ? at - now : 0;
}

/* Whether another request in flight already took over fd: curl may hand a
 * connection to the next transfer before we see the previous one done. */
static int taken_over(const slot *s, curl_socket_t fd) {
    for (int i = 0; i < s->ht->nslots; i++) {
        const slot *o = &s->ht->slots[i];
        if (o != s && o->rec && o->fd == fd) return 1;
    }
    return 0;
}

/* Framing check of a transfer curl completed without error (HTTP/1.x; an
 * HTTP/2 stream is framed by the protocol). Returns NULL when the answer
 * belongs to its request alone, else why not (the connection is then never
 * used again). Bytes waiting on a connection another request already took
 * over are that request's answer, not unsolicited. */
static const char *framing_anomaly(slot *s) {
    long version = 0;
    curl_easy_getinfo(s->easy, CURLINFO_HTTP_VERSION, &version);
    if (version == CURL_HTTP_VERSION_2_0 || version == CURL_HTTP_VERSION_3) return NULL;
    if (s->excess) return "bytes beyond the end of the response"; /* its connection was not kept */
    curl_socket_t fd = CURL_SOCKET_BAD;
    curl_easy_getinfo(s->easy, CURLINFO_ACTIVESOCKET, &fd);
    char b;
    if (fd == CURL_SOCKET_BAD || taken_over(s, fd) || recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) return NULL;
    shutdown(fd, SHUT_RDWR); /* curl finds it dead and closes it before any reuse */
    return "unsolicited bytes after the response";
}

/* Whether curl's result rc (and its message) is a TLS handshake or
 * verification failure: kind connect, code tls. */
static int tls_error(http_target *ht, CURLcode rc, const char *errbuf) {
    switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED: return 1;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR: /* e.g. a TLS 1.3 alert: certificate required */
        return ht->https && (strstr(errbuf, "SSL") || strstr(errbuf, "TLS") || strstr(errbuf, "alert"));
    default: return 0;
    }
}

/* A non-2xx answer as a failure of kind http (f takes fresh strings). */
static void fill_http_failure(slot *s, long status, eg_failure *f) {
    f->kind = EG_FK_HTTP;
    f->status = (int)status;
    const char *v;
    if ((v = response_header(s->easy, "Error-Class")) && *v) f->class_hint = eg_xstrdup(v);
    if ((v = response_header(s->easy, "Error-Code")) && *v) f->code = eg_xstrdup(v);
    f->retry_after_ms = parse_retry_after(response_header(s->easy, "Retry-After"));
    if (s->body_len) {
        f->body = eg_xstrndup(s->body, s->body_len);
        f->body_len = s->body_len;
    }
    /* a JSON body's error.message is the message (the Lua runtime reads it);
     * a short text body is quoted; otherwise the status line (with its
     * reason phrase), or the policy describes the status */
    size_t n = s->body_len > 200 ? 200 : s->body_len;
    char msg[256];
    if (n && s->body[0] != '{' && printable(s->body, n)) {
        snprintf(msg, sizeof msg, "HTTP %ld: %.*s", status, (int)n, s->body);
        f->message = eg_xstrdup(msg);
    } else if ((!n || s->body[0] != '{') && s->reason[0]) {
        snprintf(msg, sizeof msg, "HTTP %ld %s", status, s->reason);
        f->message = eg_xstrdup(msg);
    }
}

/* One finished transfer: decide, release the slot, report. */
static void finish(slot *s, CURLcode rc) {
    http_target *ht = s->ht;
    eg_record *rec = s->rec;
    long status = 0;
    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
    eg_failure f;
    memset(&f, 0, sizeof f);
    f.retry_after_ms = -1;
    f.latency_ms = eg_now_ms() - s->started_ms;
    if (rc == CURLE_WRITE_ERROR && s->over_cap) rc = CURLE_OK; /* the status stands */
    const char *anomaly = rc == CURLE_OK ? framing_anomaly(s) : NULL;
    const char *metric = "connect";
    int ok = 0;
    if (rc == CURLE_OK && !anomaly) {
        static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
        metric = status >= 100 && status < 600 ? classes[status / 100 - 1] : "other";
        ok = status >= 200 && status < 300;
        if (!ok) fill_http_failure(s, status, &f);
    } else if (rc == CURLE_OPERATION_TIMEDOUT) {
        metric = "timeout";
        f.kind = EG_FK_TIMEOUT;
        char msg[64];
        snprintf(msg, sizeof msg, "no response within %d ms", ht->cfg->http_timeout_ms);
        f.message = eg_xstrdup(msg);
    } else {
        f.kind = EG_FK_CONNECT;
        if (anomaly) f.message = eg_xstrdup(anomaly);
        else if (s->headers_too_big) f.message = eg_xstrdup("response headers too large");
        else f.message = eg_xstrdup(s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc));
        if (!anomaly && tls_error(ht, rc, s->errbuf)) f.code = eg_xstrdup("tls");
        eg_log_msg(EG_DEBUG, "http_transport_failure", "%s/%d/%lld: %s", rec->topic, (int)rec->partition,
                   (long long)rec->offset, f.message);
    }
    eg_metrics_observe_target(metric, (double)(eg_now_ns() - s->started_ns) / 1e9);
    release(s);
    ht->base.done(rec, ok ? NULL : &f, 0, ht->base.done_arg);
}

/* Reports every transfer curl finished. A done callback may submit (the
 * next record takes the slot) or cancel all; curl drops the messages of
 * handles removed meanwhile. */
static void check_done(http_target *ht) {
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(ht->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        slot *s = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        if (s && s->rec) finish(s, m->data.result);
    }
}

/* -------------------------------------------------------------- request */

static void base64(const unsigned char *in, size_t n, char *out) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = tbl[(v >> 18) & 63];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tbl[v & 63] : '=';
    }
    out[o] = '\0';
}

/* Makes room for n more bytes in h's text. */
static void hl_reserve(hdrlist *h, size_t n) {
    if (h->size - h->len >= n) return;
    h->size = (h->len + n) * 2;
    h->buf = eg_xrealloc(h->buf, h->size);
}

/* Appends p[0..n) to the line being built (no formatting: curl's own
 * per-byte formatter already costs enough per request). */
static void hl_put(hdrlist *h, const char *p, size_t n) {
    if (!n) return;
    hl_reserve(h, n);
    memcpy(h->buf + h->len, p, n);
    h->len += n;
}

static void hl_str(hdrlist *h, const char *p) { hl_put(h, p, strlen(p)); }

/* Appends v in decimal. */
static void hl_num(hdrlist *h, long long v) {
    char d[24];
    int i = sizeof d;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do d[--i] = (char)('0' + u % 10);
    while ((u /= 10));
    if (v < 0) d[--i] = '-';
    hl_put(h, d + i, sizeof d - (size_t)i);
}

/* Ends the line begun at offset `start` (NUL-terminates it, records it). */
static void hl_end(hdrlist *h, size_t start) {
    hl_put(h, "", 1);
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->nodes = eg_xrealloc(h->nodes, (size_t)h->cap * sizeof *h->nodes);
        h->off = eg_xrealloc(h->off, (size_t)h->cap * sizeof *h->off);
    }
    h->off[h->n++] = start;
}

/* Appends the line `line` as it is. */
static void hl_raw(hdrlist *h, const char *line) {
    size_t start = h->len;
    hl_str(h, line);
    hl_end(h, start);
}

/* Appends the line "name: value" ("name;" for an empty value: curl's way
 * of sending one). */
static void hl_line(hdrlist *h, const char *name, const char *v, size_t n) {
    size_t start = h->len;
    hl_str(h, name);
    if (n) {
        hl_put(h, ": ", 2);
        hl_put(h, v, n);
    } else {
        hl_put(h, ";", 1);
    }
    hl_end(h, start);
}

/* Appends the line "name: v" with v in decimal. */
static void hl_line_num(hdrlist *h, const char *name, long long v) {
    size_t start = h->len;
    hl_str(h, name);
    hl_put(h, ": ", 2);
    hl_num(h, v);
    hl_end(h, start);
}

/* The request's header lines: fixed ones, Errgate-*, static, forwarded. */
static struct curl_slist *request_headers(slot *s, eg_record *rec) {
    http_target *ht = s->ht;
    const rd_kafka_message_t *m = rec->msg;
    hdrlist *h = &s->hdrs;
    char id[320];
    h->n = 0;
    h->len = 0;
    hl_line(h, "Content-Type", "application/octet-stream", 24);
    hl_raw(h, "Expect:"); /* "Name:" removes curl's own header: no 100-continue round trip */
    hl_raw(h, "Accept:");
    eg_record_id(rec, id, sizeof id);
    hl_line(h, "Errgate-Id", id, strlen(id));
    if (printable(rec->topic, strlen(rec->topic))) hl_line(h, "Errgate-Topic", rec->topic, strlen(rec->topic));
    hl_line_num(h, "Errgate-Partition", rec->partition);
    hl_line_num(h, "Errgate-Offset", rec->offset);
    if (m->key && m->key_len <= 4096) {
        if (!m->key_len || printable(m->key, m->key_len)) {
            hl_line(h, "Errgate-Key", m->key, m->key_len);
        } else {
            char b64[4096 / 3 * 4 + 8];
            base64(m->key, m->key_len, b64);
            hl_line(h, "Errgate-Key-Base64", b64, strlen(b64));
        }
    }
    for (int i = 0; i < ht->cfg->nhttp_headers; i++) hl_raw(h, ht->static_lines[i]);
    rd_kafka_headers_t *hdrs = NULL;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; i++) {
            int ok =
                strlen(name) <= 256 && val && size <= 8192 && printable(val, size) && eg_http_header_sendable(name);
            for (int k = 0; ok && k < ht->cfg->nhttp_headers; k++) /* configured headers win */
                ok = strcasecmp(name, ht->cfg->http_headers[k].name) != 0;
            if (ok) hl_line(h, name, val, size);
        }
    }
    for (int i = 0; i < h->n; i++) {
        h->nodes[i].data = h->buf + h->off[i];
        h->nodes[i].next = i + 1 < h->n ? &h->nodes[i + 1] : NULL;
    }
    return h->nodes;
}

static int ht_submit(eg_target *t, eg_record *rec) {
    http_target *ht = (http_target *)t;
    slot *s = ht->free_list;
    if (!s) return -1;
    ht->free_list = s->next_free;
    ht->nfree--;
    t->inflight++;
    s->rec = rec;
    s->fd = CURL_SOCKET_BAD;
    s->started_ms = eg_now_ms();
    s->started_ns = eg_now_ns();
    s->body_len = s->body_seen = s->header_seen = 0;
    s->reason[0] = '\0';
    if (s->excess) curl_easy_setopt(s->easy, CURLOPT_FORBID_REUSE, 0L);
    s->over_cap = s->headers_too_big = s->excess = 0;
    if (s->verbose) {
        curl_easy_setopt(s->easy, CURLOPT_VERBOSE, 0L);
        s->verbose = 0;
    }
    s->errbuf[0] = '\0';
    const rd_kafka_message_t *m = rec->msg;
    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, request_headers(s, rec));
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, m->payload && m->len ? (const char *)m->payload : "");
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(m->payload ? m->len : 0));
    CURLMcode mc = curl_multi_add_handle(ht->multi, s->easy);
    if (mc != CURLM_OK) { /* cannot happen with a free slot; keep the record runnable */
        eg_log_msg(EG_ERROR, "http_target", "curl_multi_add_handle: %s", curl_multi_strerror(mc));
        release(s);
        return -1;
    }
    return 0;
}

static int ht_available(const eg_target *t) { return ((const http_target *)t)->nfree; }

static void ht_cancel_all(eg_target *t) {
    http_target *ht = (http_target *)t;
    for (int i = 0; i < ht->nslots; i++) {
        slot *s = &ht->slots[i];
        if (!s->rec) continue;
        eg_record *rec = s->rec;
        release(s); /* removing the handle aborts the transfer */
        t->done(rec, NULL, 1, t->done_arg);
    }
}

/* --------------------------------------------------- static headers, setup */

/* Reads a header value from a file: its content without trailing white
 * space, printable, on one line. The value never goes into err. */
static char *read_header_file(const eg_http_header *h, char *err, size_t errlen) {
    FILE *fp = fopen(h->file, "rb");
    if (!fp) {
        snprintf(err, errlen, "target.http.headers.%s: cannot read file '%s': %s", h->name, h->file, strerror(errno));
        return NULL;
    }
    char *buf = eg_xmalloc(8193);
    size_t n = fread(buf, 1, 8193, fp);
    fclose(fp);
    while (n && strchr(" \t\r\n", buf[n - 1])) n--;
    const char *why = n > 8192 ? "larger than 8 KiB" : n == 0 ? "empty" : NULL;
    for (size_t i = 0; !why && i < n; i++)
        if (((unsigned char)buf[i] < 0x20 && buf[i] != '\t') || (unsigned char)buf[i] == 0x7f)
            why = "not printable text on one line";
    if (why) {
        snprintf(err, errlen, "target.http.headers.%s: file '%s' is %s", h->name, h->file, why);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static void free_lines(char **lines, int n) {
    for (int i = 0; lines && i < n; i++) free(lines[i]);
    free(lines);
}

/* Builds "Name: value" for every configured header into a fresh array. */
static char **build_static_lines(const eg_config *cfg, char *err, size_t errlen) {
    char **lines = eg_xcalloc((size_t)cfg->nhttp_headers + 1, sizeof *lines);
    for (int i = 0; i < cfg->nhttp_headers; i++) {
        const eg_http_header *h = &cfg->http_headers[i];
        char *v = h->value ? eg_xstrdup(h->value) : read_header_file(h, err, errlen);
        if (!v) {
            free_lines(lines, i);
            return NULL;
        }
        lines[i] = eg_xmalloc(strlen(h->name) + strlen(v) + 3);
        sprintf(lines[i], "%s: %s", h->name, v);
        free(v);
    }
    return lines;
}

static int ht_reload(eg_target *t, char *err, size_t errlen) {
    http_target *ht = (http_target *)t;
    char **lines = build_static_lines(ht->cfg, err, errlen);
    if (!lines) return -1;
    free_lines(ht->static_lines, ht->cfg->nhttp_headers); /* in-flight requests hold copies */
    ht->static_lines = lines;
    return 0;
}

static void ht_destroy(eg_target *t) {
    http_target *ht = (http_target *)t;
    ht_cancel_all(t);
    for (int i = 0; i < ht->nslots; i++) {
        slot *s = &ht->slots[i];
        if (s->easy) curl_easy_cleanup(s->easy);
        free(s->body);
        free(s->hdrs.nodes);
        free(s->hdrs.off);
        free(s->hdrs.buf);
    }
    if (ht->multi) curl_multi_cleanup(ht->multi);
    while (ht->watches) watch_free(ht->watches); /* sockets curl closed without telling */
    if (ht->timer) event_free(ht->timer);
    curl_slist_free_all(ht->connect_to);
    free_lines(ht->static_lines, ht->cfg->nhttp_headers);
    free(ht->slots);
    curl_url_cleanup(ht->url);
    free(ht);
    curl_global_cleanup();
}

static const eg_target_ops http_ops = {.submit = ht_submit,
                                       .available = ht_available,
                                       .cancel_all = ht_cancel_all,
                                       .reload = ht_reload,
                                       .destroy = ht_destroy};

/* Resolves the URL once: with tls.server_name, the request names (and
 * verifies, and sends as SNI) server_name while connecting to the URL's
 * host and port (CURLOPT_CONNECT_TO). */
static int setup_url(http_target *ht, char *err, size_t errlen) {
    const eg_config *cfg = ht->cfg;
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    int rc = -1;
    if (!u || curl_url_set(u, CURLUPART_URL, cfg->http_url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(err, errlen, "target.http.url: cannot parse \"%s\"", cfg->http_url);
        goto out;
    }
    if (cfg->http_server_name) {
        char line[600];
        snprintf(line, sizeof line, "%s:%s:%s:%s", cfg->http_server_name, port, host, port);
        if (!(ht->connect_to = curl_slist_append(NULL, line))) {
            snprintf(err, errlen, "target.http: out of memory");
            goto out;
        }
        if (curl_url_set(u, CURLUPART_HOST, cfg->http_server_name, 0) != CURLUE_OK) {
            snprintf(err, errlen, "target.http.tls.server_name: cannot use \"%s\"", cfg->http_server_name);
            goto out;
        }
    }
    ht->url = u; /* curl copies it per transfer instead of parsing the URL again */
    u = NULL;
    rc = 0;
out:
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

/* The options every request of a slot shares. */
static int setup_easy(http_target *ht, slot *s) {
    const eg_config *cfg = ht->cfg;
    CURL *e = s->easy;
    int verify = cfg->http_verify;
    CURLcode rc = CURLE_OK;
#define SET(opt, val) \
    if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, val)
    SET(CURLOPT_CURLU, ht->url);
    SET(CURLOPT_PRIVATE, (void *)s);
    SET(CURLOPT_OPENSOCKETFUNCTION, open_socket);
    SET(CURLOPT_OPENSOCKETDATA, (void *)ht);
    SET(CURLOPT_CLOSESOCKETFUNCTION, close_socket);
    SET(CURLOPT_CLOSESOCKETDATA, (void *)ht);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_TIMEOUT_MS, (long)cfg->http_timeout_ms);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, (void *)s);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, (void *)s);
    SET(CURLOPT_ERRORBUFFER, s->errbuf);
    SET(CURLOPT_DEBUGFUNCTION, on_debug);
    SET(CURLOPT_DEBUGDATA, (void *)s);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_PROXY, "");    /* the target is reached directly, whatever the environment says */
    SET(CURLOPT_NOPROXY, "*"); /* (and curl need not read no_proxy from the environment per request) */
    SET(CURLOPT_HTTP_VERSION, cfg->http_version == 2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    if (cfg->http_version == 2) SET(CURLOPT_PIPEWAIT, 1L); /* wait to multiplex rather than open more */
    if (ht->connect_to) SET(CURLOPT_CONNECT_TO, ht->connect_to);
    if (ht->https) {
        SET(CURLOPT_SSL_VERIFYPEER, verify ? 1L : 0L);
        SET(CURLOPT_SSL_VERIFYHOST, verify ? 2L : 0L);
        if (cfg->http_ca_file) SET(CURLOPT_CAINFO, cfg->http_ca_file);
        if (cfg->http_cert_file) SET(CURLOPT_SSLCERT, cfg->http_cert_file);
        if (cfg->http_key_file) SET(CURLOPT_SSLKEY, cfg->http_key_file);
    }
#undef SET
    return rc == CURLE_OK ? 0 : -1;
}

eg_target *eg_target_http_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "target.http: libcurl failed to initialise");
        return NULL;
    }
    http_target *ht = eg_xcalloc(1, sizeof *ht);
    ht->base.ops = &http_ops;
    ht->evbase = base;
    ht->cfg = cfg;
    ht->https = strncmp(cfg->http_url, "https://", 8) == 0;
    ht->nslots = cfg->http_concurrency;
    ht->slots = eg_xcalloc((size_t)ht->nslots, sizeof *ht->slots);
    if (setup_url(ht, err, errlen) != 0 || !(ht->static_lines = build_static_lines(cfg, err, errlen))) goto fail;
    ht->multi = curl_multi_init();
    ht->timer = evtimer_new(base, on_timer, ht);
    if (!ht->multi || !ht->timer) {
        snprintf(err, errlen, "target.http: cannot create the libcurl multi handle");
        goto fail;
    }
    curl_multi_setopt(ht->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    curl_multi_setopt(ht->multi, CURLMOPT_SOCKETDATA, ht);
    curl_multi_setopt(ht->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    curl_multi_setopt(ht->multi, CURLMOPT_TIMERDATA, ht);
    /* room for every slot's connection: curl never closes one of ours to make space */
    curl_multi_setopt(ht->multi, CURLMOPT_MAXCONNECTS, (long)ht->nslots * 2);
    curl_multi_setopt(ht->multi, CURLMOPT_PIPELINING, cfg->http_version == 2 ? CURLPIPE_MULTIPLEX : CURLPIPE_NOTHING);
    for (int i = ht->nslots - 1; i >= 0; i--) {
        slot *s = &ht->slots[i];
        s->ht = ht;
        s->body = eg_xmalloc(EG_BODY_CAP);
        if (!(s->easy = curl_easy_init()) || setup_easy(ht, s) != 0) {
            snprintf(err, errlen, "target.http: cannot set up a libcurl handle");
            goto fail;
        }
        s->next_free = ht->free_list;
        ht->free_list = s;
    }
    ht->nfree = ht->nslots;
    if (ht->https && !cfg->http_verify)
        eg_log_msg(EG_WARN, "tls_verify_off",
                   "target.http.tls.verify = false: the target's certificate and name are not checked");
    return &ht->base;
fail:
    ht_destroy(&ht->base);
    return NULL;
}
