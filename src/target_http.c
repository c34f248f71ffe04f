/* target_http.c — the HTTP target: POST each record to a URL.
 *
 * A pool of `concurrency` keep-alive connections (libevent's evhttp client),
 * each carrying at most one request at a time, so at most `concurrency`
 * requests are in flight. Request: POST, body = record value; headers
 * Errgate-Id, Errgate-Topic, Errgate-Partition, Errgate-Offset, Errgate-Key
 * (or Errgate-Key-Base64 for a key that is not printable ASCII), plus the
 * record's Kafka headers whose name is an HTTP token and whose value is
 * printable (others are skipped, never sent raw). Response: 2xx is success;
 * any other status is a failure of kind `http` carrying the status,
 * Error-Class, Error-Code, Retry-After (seconds or HTTP-date) and the first
 * EG_BODY_CAP bytes of the body (the Lua runtime reads a JSON error body).
 * Each request has its own deadline timer (timeout_ms); when it fires the
 * request is cancelled and the failure is of kind `timeout`. Any other
 * transport error (refused, reset, EOF) is of kind `connect`. Every finished
 * attempt is observed in the target latency histogram (metrics.h) by status
 * class: 2xx..5xx, timeout, connect. */
#include "metrics.h"
#include "target.h"
#include "util.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

typedef struct slot {
    struct http_target *ht;
    struct evhttp_connection *conn;
    struct evhttp_request *req;   /* borrowed from libevent while in flight */
    eg_record *rec;               /* NULL when the slot is free */
    struct event *deadline;
    int64_t started_ms;
    int64_t started_ns;           /* for the latency histogram (metrics.h) */
    int error;                    /* enum evhttp_request_error, -1 if none */
    struct slot *next_free;
} slot;

typedef struct http_target {
    eg_target base;
    char *host, *path, *host_header;
    int port;
    int timeout_ms;
    slot *slots;
    int nslots;
    slot *free_list;
    int nfree;
} http_target;

static void release(slot *s) {
    s->rec = NULL;
    s->req = NULL;
    s->error = -1;
    s->next_free = s->ht->free_list;
    s->ht->free_list = s;
    s->ht->nfree++;
    s->ht->base.inflight--;
}

/* An HTTP token character (RFC 9110). */
static int tchar(int c) {
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int printable(const char *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e) return 0;
    return 1;
}

static int reserved_header(const char *name) {
    return strncasecmp(name, "errgate-", 8) == 0 || strcasecmp(name, "host") == 0 ||
           strcasecmp(name, "content-length") == 0 || strcasecmp(name, "content-type") == 0 ||
           strcasecmp(name, "connection") == 0 || strcasecmp(name, "transfer-encoding") == 0;
}

static void base64(const unsigned char *in, size_t n, char *out) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = tbl[(v >> 18) & 63];
        out[o++] = tbl[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tbl[v & 63] : '=';
    }
    out[o] = '\0';
}

/* Parses Retry-After: delta-seconds or an IMF-fixdate. Returns ms or -1. */
static int64_t parse_retry_after(const char *v) {
    if (!v) return -1;
    while (*v == ' ') v++;
    if (isdigit((unsigned char)*v)) {
        char *end;
        long long s = strtoll(v, &end, 10);
        if (*end && *end != ' ') return -1;
        if (s > 86400) s = 86400;
        return s * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end) return -1;
    int64_t at = (int64_t)timegm(&tm) * 1000, now = eg_wall_ms();
    return at > now ? at - now : 0;
}

static void fail_transport(slot *s, eg_failure *f) {
    f->kind = s->error == EVREQ_HTTP_TIMEOUT ? EG_FK_TIMEOUT : EG_FK_CONNECT;
    const char *why = "connection failed";
    switch (s->error) {
    case EVREQ_HTTP_TIMEOUT: why = "request timed out"; break;
    case EVREQ_HTTP_EOF: why = "connection closed before a response"; break;
    case EVREQ_HTTP_INVALID_HEADER: why = "invalid response header"; break;
    case EVREQ_HTTP_BUFFER_ERROR: why = "connection error"; break;
    case EVREQ_HTTP_DATA_TOO_LONG: why = "response too long"; break;
    default: break;
    }
    f->message = eg_xstrdup(why);
}

static void fill_http_failure(struct evhttp_request *req, int code, eg_failure *f) {
    f->kind = EG_FK_HTTP;
    f->status = code;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    const char *v;
    if ((v = evhttp_find_header(in, "Error-Class")) && *v) f->class_hint = eg_xstrdup(v);
    if ((v = evhttp_find_header(in, "Error-Code")) && *v) f->code = eg_xstrdup(v);
    f->retry_after_ms = parse_retry_after(evhttp_find_header(in, "Retry-After"));
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(body);
    if (n > EG_BODY_CAP) n = EG_BODY_CAP;
    if (n) {
        f->body = eg_xmalloc(n + 1);
        evbuffer_copyout(body, f->body, n);
        f->body[n] = '\0';
        f->body_len = n;
    }
    char msg[256];
    const char *reason = evhttp_request_get_response_code_line(req);
    if (f->body && f->body[0] != '{' && printable(f->body, f->body_len > 200 ? 200 : f->body_len))
        snprintf(msg, sizeof msg, "HTTP %d: %.*s", code, (int)(f->body_len > 200 ? 200 : f->body_len), f->body);
    else
        snprintf(msg, sizeof msg, "HTTP %d %s", code, reason ? reason : "");
    f->message = eg_xstrdup(msg);
}

static void on_response(struct evhttp_request *req, void *arg) {
    slot *s = arg;
    eg_record *rec = s->rec;
    if (!rec) return; /* already timed out or cancelled */
    evtimer_del(s->deadline);
    http_target *ht = s->ht;
    eg_failure f;
    memset(&f, 0, sizeof f);
    f.retry_after_ms = -1;
    f.latency_ms = eg_now_ms() - s->started_ms;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    int ok = code >= 200 && code < 300;
    static const char *const classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    eg_metrics_observe_target(code == 0 ? "connect" : code >= 100 && code < 600 ? classes[code / 100 - 1] : "other",
                              (double)(eg_now_ns() - s->started_ns) / 1e9);
    if (!ok) {
        if (code == 0) fail_transport(s, &f);
        else fill_http_failure(req, code, &f);
    }
    release(s);
    ht->base.done(rec, ok ? NULL : &f, 0, ht->base.done_arg);
}

static void on_error(enum evhttp_request_error err, void *arg) {
    slot *s = arg;
    s->error = (int)err;
}

static void on_deadline(evutil_socket_t fd, short what, void *arg) {
    slot *s = arg;
    eg_record *rec = s->rec;
    if (!rec) return;
    http_target *ht = s->ht;
    eg_failure f;
    memset(&f, 0, sizeof f);
    f.retry_after_ms = -1;
    f.latency_ms = eg_now_ms() - s->started_ms;
    eg_metrics_observe_target(s->req ? "timeout" : "connect", (double)(eg_now_ns() - s->started_ns) / 1e9);
    if (!s->req) { /* evhttp_make_request refused the request */
        fail_transport(s, &f);
    } else {
        evhttp_cancel_request(s->req); /* no callback follows; the connection resets */
        f.kind = EG_FK_TIMEOUT;
        char msg[64];
        snprintf(msg, sizeof msg, "no response within %d ms", ht->timeout_ms);
        f.message = eg_xstrdup(msg);
    }
    release(s);
    ht->base.done(rec, &f, 0, ht->base.done_arg);
}

static int ht_submit(eg_target *t, eg_record *rec) {
    http_target *ht = (http_target *)t;
    slot *s = ht->free_list;
    if (!s) return -1;
    struct evhttp_request *req = evhttp_request_new(on_response, s);
    if (!req) return -1;
    ht->free_list = s->next_free;
    ht->nfree--;
    t->inflight++;
    s->rec = rec;
    s->req = req;
    s->error = -1;
    s->started_ms = eg_now_ms();
    s->started_ns = eg_now_ns();
    evhttp_request_set_error_cb(req, on_error);

    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char num[32], id[320];
    const rd_kafka_message_t *m = rec->msg;
    evhttp_add_header(h, "Host", ht->host_header);
    evhttp_add_header(h, "Content-Type", "application/octet-stream");
    eg_record_id(rec, id, sizeof id);
    evhttp_add_header(h, "Errgate-Id", id);
    if (printable(rec->topic, strlen(rec->topic))) evhttp_add_header(h, "Errgate-Topic", rec->topic);
    snprintf(num, sizeof num, "%d", (int)rec->partition);
    evhttp_add_header(h, "Errgate-Partition", num);
    snprintf(num, sizeof num, "%lld", (long long)rec->offset);
    evhttp_add_header(h, "Errgate-Offset", num);
    if (m->key && m->key_len <= 4096) {
        char *k = eg_xmalloc(m->key_len * 4 / 3 + 8);
        if (printable(m->key, m->key_len)) {
            memcpy(k, m->key, m->key_len);
            k[m->key_len] = '\0';
            evhttp_add_header(h, "Errgate-Key", k);
        } else {
            base64(m->key, m->key_len, k);
            evhttp_add_header(h, "Errgate-Key-Base64", k);
        }
        free(k);
    }
    rd_kafka_headers_t *hdrs = NULL;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char *name;
        const void *val;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; i++) {
            int ok = *name && val && size <= 8192 && printable(val, size) && !reserved_header(name);
            for (const char *p = name; ok && *p; p++) ok = tchar((unsigned char)*p);
            if (!ok) continue;
            char *v = eg_xstrndup(val, size);
            evhttp_add_header(h, name, v);
            free(v);
        }
    }
    if (m->payload && m->len) evbuffer_add(evhttp_request_get_output_buffer(req), m->payload, m->len);
    struct timeval tv = {ht->timeout_ms / 1000, (ht->timeout_ms % 1000) * 1000};
    evtimer_add(s->deadline, &tv);
    if (evhttp_make_request(s->conn, req, EVHTTP_REQ_POST, ht->path) != 0) {
        /* libevent freed the request; report a connect failure from the loop */
        s->req = NULL;
        s->error = EVREQ_HTTP_BUFFER_ERROR;
        struct timeval now = {0, 0};
        evtimer_add(s->deadline, &now);
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
        evtimer_del(s->deadline);
        if (s->req) evhttp_cancel_request(s->req);
        release(s);
        t->done(rec, NULL, 1, t->done_arg);
    }
}

static void ht_destroy(eg_target *t) {
    http_target *ht = (http_target *)t;
    ht_cancel_all(t);
    for (int i = 0; i < ht->nslots; i++) {
        event_free(ht->slots[i].deadline);
        evhttp_connection_free(ht->slots[i].conn);
    }
    free(ht->slots);
    free(ht->host);
    free(ht->path);
    free(ht->host_header);
    free(ht);
}

static const eg_target_ops http_ops = {
    .submit = ht_submit, .available = ht_available, .cancel_all = ht_cancel_all, .destroy = ht_destroy};

eg_target *eg_target_http_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen) {
    struct evhttp_uri *uri = evhttp_uri_parse(cfg->http_url);
    if (!uri || !evhttp_uri_get_host(uri)) {
        snprintf(err, errlen, "target.http.url: cannot parse \"%s\"", cfg->http_url);
        if (uri) evhttp_uri_free(uri);
        return NULL;
    }
    http_target *ht = eg_xcalloc(1, sizeof *ht);
    ht->base.ops = &http_ops;
    ht->host = eg_xstrdup(evhttp_uri_get_host(uri));
    ht->port = evhttp_uri_get_port(uri) > 0 ? evhttp_uri_get_port(uri) : 80;
    const char *path = evhttp_uri_get_path(uri), *query = evhttp_uri_get_query(uri);
    size_t n = strlen(path && *path ? path : "/") + (query ? strlen(query) + 1 : 0) + 1;
    ht->path = eg_xmalloc(n);
    snprintf(ht->path, n, "%s%s%s", path && *path ? path : "/", query ? "?" : "", query ? query : "");
    ht->host_header = eg_xmalloc(strlen(ht->host) + 16);
    sprintf(ht->host_header, "%s:%d", ht->host, ht->port);
    evhttp_uri_free(uri);
    ht->timeout_ms = cfg->http_timeout_ms;
    ht->nslots = cfg->http_concurrency;
    ht->slots = eg_xcalloc((size_t)ht->nslots, sizeof *ht->slots);
    /* libevent's own read/write timeout is a backstop behind the deadline timer */
    struct timeval backstop = {ht->timeout_ms / 1000 + 2, 0};
    for (int i = ht->nslots - 1; i >= 0; i--) {
        slot *s = &ht->slots[i];
        s->ht = ht;
        s->error = -1;
        s->conn = evhttp_connection_base_new(base, NULL, ht->host, (unsigned short)ht->port);
        evhttp_connection_set_retries(s->conn, 0);
        evhttp_connection_set_timeout_tv(s->conn, &backstop);
        s->deadline = evtimer_new(base, on_deadline, s);
        s->next_free = ht->free_list;
        ht->free_list = s;
    }
    ht->nfree = ht->nslots;
    return &ht->base;
}
