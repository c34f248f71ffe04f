/* admin.c — the admin HTTP endpoint (see admin.h).
 *
 * A small HTTP/1.1 server of its own on libevent bufferevents: libevent
 * 2.1's evhttp can neither cap its connections nor tell when one closes, so
 * a few hundred idle clients could take every descriptor of the process
 * (and its listener then spun on EMFILE, logging each time). Here:
 *   - idle clients cannot starve the probes (/healthz, /readyz, /metrics):
 *     the listener has TCP_DEFER_ACCEPT (DEFER_ACCEPT_S), so the kernel
 *     hands over a connection once its first bytes arrive, and a client
 *     that sends nothing waits outside that long (a flood of reconnecting
 *     idle clients churned through the slots faster than a probe's request
 *     arrived, measured: 12,000 connects a second);
 *   - at most max_connections are open; a connection beyond that is
 *     accepted and takes the place of the oldest one still waiting for its
 *     request with nothing of it in the kernel's receive queue (not
 *     answered, not waiting for a reload or a control): a probe's request
 *     arrives right after its connect and is answered at once, while an
 *     idle connection only gets older (evicted ones are counted, logged at
 *     a limited rate). Only when every open connection is busy is the new
 *     one closed at once;
 *   - an accept that fails for lack of descriptors (EMFILE, ENFILE) stops
 *     the listener for a second instead of spinning;
 *   - a request must arrive whole, headers and body, within
 *     EG_ADMIN_TIMEOUT_S of the connection and
 *     within EG_ADMIN_MAX_REQUEST bytes: 431 for headers, 413 for a body
 *     beyond that; chunked bodies are refused (411);
 *   - one request per connection: the answer says "Connection: close".
 * The request parser (eg_admin_parse) is a pure function over bytes, so it
 * is unit-tested and fuzzed alone. Bodies are built in an evbuffer and sent
 * in one reply; nothing blocks: POST /reload is answered when its reload,
 * built off the loop, ends (the connection waits without a deadline, the
 * build being bounded by its budget; a client gone meanwhile is forgotten). The token lives in memory only for the
 * server's life and is wiped when the server is freed. */
#include "admin.h"
#include "json.h"
#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOKEN_MAX 512
#define DEFER_ACCEPT_S 5 /* TCP_DEFER_ACCEPT: an idle connection waits in the kernel this long */
#define LISTEN_BACKLOG 1024

typedef struct conn conn;

struct eg_admin {
    struct event_base *base;
    struct evconnlistener *lis;
    struct event *resume_ev; /* re-enables the listener after EMFILE */
    eg_admin_ops ops;
    void *arg;
    char token[TOKEN_MAX + 1];
    size_t token_len; /* 0: mutating endpoints off */
    int max_conns;
    int nconns;
    conn *conns;      /* open connections, oldest first, freed with the server */
    conn *newest;     /* the last of conns */
    conn *serving;    /* the connection whose control request is being served, or NULL */
    uint64_t refused; /* connections closed at once at the cap (every open one busy) */
    uint64_t evicted; /* idle connections closed for a new one at the cap */
};

/* One client connection: its bufferevent and the deadline of the request
 * it is reading. */
struct conn {
    eg_admin *a;
    struct bufferevent *bev;
    struct event *deadline;
    int answered;                  /* the answer is queued; close once it is written */
    struct pending_reload *reload; /* a POST /reload waiting for its reload, or NULL */
    conn *prev, *next;
};

/* An answer being built: status, headers the route adds, body. */
typedef struct answer {
    int code;
    const char *reason;
    const char *ctype;
    char extra[160]; /* "Name: value\r\n" lines (Allow, WWW-Authenticate) */
    struct evbuffer *body;
} answer;

int eg_token_equal(const char *expected, size_t elen, const char *given, size_t n) {
    unsigned diff = (unsigned)(elen != n) | (elen == 0);
    for (size_t i = 0; i < elen; i++) {
        unsigned char g = i < n ? (unsigned char)given[i] : 0;
        diff |= (unsigned)(g ^ (unsigned char)expected[i]);
    }
    return diff == 0;
}

/* Sets the status line and content type of an (reason is borrowed: a literal). */
static void set_answer(answer *an, int code, const char *reason, const char *ctype) {
    an->code = code;
    an->reason = reason;
    an->ctype = ctype;
}

/* Ends a JSON answer: its body (already in an) gets its newline. */
static void reply_json(answer *an, int code, const char *reason) {
    evbuffer_add(an->body, "\n", 1);
    set_answer(an, code, reason, "application/json");
}

/* A JSON {"error": msg} answer (replaces the body). */
static void reply_error(answer *an, int code, const char *reason, const char *msg) {
    evbuffer_drain(an->body, evbuffer_get_length(an->body));
    evbuffer_add_printf(an->body, "{\"error\":");
    eg_json_str(an->body, msg);
    evbuffer_add(an->body, "}", 1);
    reply_json(an, code, reason);
}

/* Checks the bearer token of a mutating request; answers and returns 0 when
 * it is refused. */
static int authorized(eg_admin *a, const eg_admin_req *rq, answer *an) {
    if (a->token_len == 0) {
        reply_error(an, 403, "Forbidden", "mutating endpoints are disabled (no admin.token_file)");
        return 0;
    }
    const char *h = rq->authorization;
    const char *tok = NULL;
    size_t n = 0;
    if (h && rq->authorization_len >= 7 && strncasecmp(h, "Bearer ", 7) == 0) {
        tok = h + 7;
        n = rq->authorization_len - 7;
        while (n && *tok == ' ') tok++, n--;
    }
    if (!tok || !eg_token_equal(a->token, a->token_len, tok, n)) {
        snprintf(an->extra, sizeof an->extra, "WWW-Authenticate: Bearer\r\n");
        reply_error(an, 401, "Unauthorized", "a valid bearer token is required");
        eg_log_msg(EG_WARN, "admin_unauthorized", "POST %s refused", rq->path);
        return 0;
    }
    return 1;
}

/* A POST /reload waiting for its reload to end: c is NULL once the client's
 * connection is gone. */
struct pending_reload {
    eg_admin *a;
    conn *c;
};
typedef struct pending_reload pending_reload;

static void send_answer(conn *c, const eg_admin_req *rq, answer *an);

/* The reload's outcome, answered to the connection still waiting for it. */
static void reload_done(void *arg, int rc, const char *err) {
    pending_reload *pr = arg;
    if (pr->c) {
        eg_admin *a = pr->a;
        answer an = {.body = evbuffer_new()};
        struct evbuffer *b = an.body;
        if (rc == 0) {
            evbuffer_add_printf(b, "{\"result\":\"reloaded\",\"policy\":");
        } else {
            evbuffer_add_printf(b, "{\"result\":\"failed\",\"error\":");
            eg_json_str(b, err);
            evbuffer_add_printf(b, ",\"policy\":");
        }
        a->ops.policy(a->arg, b);
        evbuffer_add(b, "}", 1);
        if (rc == 0) reply_json(&an, 200, "OK");
        else reply_json(&an, 422, "Unprocessable Entity");
        pr->c->reload = NULL;
        send_answer(pr->c, NULL, &an);
        evbuffer_free(an.body);
    }
    free(pr);
}

static const struct {
    int code;
    const char *reason;
} control_reasons[] = {{200, "OK"},       {400, "Bad Request"},        {404, "Not Found"}, {405, "Method Not Allowed"},
                       {409, "Conflict"}, {503, "Service Unavailable"}};

/* The reason phrase of a control's status code. */
static const char *control_reason(int code) {
    for (size_t i = 0; i < sizeof control_reasons / sizeof control_reasons[0]; i++)
        if (control_reasons[i].code == code) return control_reasons[i].reason;
    return "Error";
}

eg_admin_pending *eg_admin_defer(eg_admin *a) {
    pending_reload *pr = eg_xcalloc(1, sizeof *pr);
    pr->a = a;
    pr->c = a->serving;
    if (pr->c) {
        pr->c->reload = pr;
        evtimer_del(pr->c->deadline); /* the owner answers within its own bound */
    }
    return pr;
}

void eg_admin_answer(eg_admin_pending *pr, int code, struct evbuffer *body) {
    if (pr->c) {
        answer an = {.body = body};
        reply_json(&an, code, control_reason(code));
        pr->c->reload = NULL;
        send_answer(pr->c, NULL, &an);
    }
    evbuffer_free(body);
    free(pr);
}

/* Routes one parsed request of c (its body: rq->content_length bytes at
 * body) into an. Returns 1 when the answer comes later (POST /reload, a
 * deferred control), else 0. */
static int route(eg_admin *a, conn *c, const eg_admin_req *rq, const char *body, answer *an) {
    const char *path = rq->path;
    int get = rq->method == EG_ADMIN_GET || rq->method == EG_ADMIN_HEAD;
    struct evbuffer *b = an->body;
    if (strcmp(path, "/reload") == 0) {
        if (rq->method != EG_ADMIN_POST) {
            snprintf(an->extra, sizeof an->extra, "Allow: POST\r\n");
            reply_error(an, 405, "Method Not Allowed", "use POST");
        } else if (authorized(a, rq, an)) {
            pending_reload *pr = eg_xcalloc(1, sizeof *pr);
            pr->a = a;
            pr->c = c;
            c->reload = pr;
            evtimer_del(c->deadline); /* the build is bounded by its budget */
            a->ops.reload(a->arg, "admin", reload_done, pr);
            return 1;
        }
    } else if (a->ops.control && a->ops.control(a->arg, rq->method, path, NULL, 0, NULL)) {
        if (get || authorized(a, rq, an)) {
            a->serving = c;
            int code = a->ops.control(a->arg, rq->method, path, body, rq->content_length, b);
            a->serving = NULL;
            if (code == EG_ADMIN_DEFERRED) return 1;
            reply_json(an, code, control_reason(code));
        }
    } else if (!get) {
        snprintf(an->extra, sizeof an->extra, "Allow: GET, HEAD\r\n");
        reply_error(an, 405, "Method Not Allowed", "use GET");
    } else if (strcmp(path, "/metrics") == 0) {
        a->ops.metrics(a->arg, b);
        set_answer(an, 200, "OK", "text/plain; version=0.0.4; charset=utf-8");
    } else if (strcmp(path, "/healthz") == 0) {
        evbuffer_add_printf(b, "{\"status\":\"ok\"}");
        reply_json(an, 200, "OK");
    } else if (strcmp(path, "/readyz") == 0) {
        char why[256] = "";
        int ok = a->ops.ready(a->arg, why, sizeof why);
        evbuffer_add_printf(b, "{\"ready\":%s", ok ? "true" : "false");
        if (!ok) {
            evbuffer_add_printf(b, ",\"reason\":");
            eg_json_str(b, why);
        }
        evbuffer_add(b, "}", 1);
        reply_json(an, ok ? 200 : 503, ok ? "OK" : "Service Unavailable");
    } else if (strcmp(path, "/policy") == 0) {
        a->ops.policy(a->arg, b);
        reply_json(an, 200, "OK");
    } else if (strcmp(path, "/lanes") == 0) {
        a->ops.lanes(a->arg, b);
        reply_json(an, 200, "OK");
    } else {
        reply_error(an, 404, "Not Found",
                    "unknown path (try /metrics, /healthz, /readyz, /policy, /lanes, POST /reload, POST /resume, "
                    "POST /dlq-guard/reset, /overrides)");
    }
    return 0;
}

/* ------------------------------------------------------------- parsing */

static const struct {
    int code;
    const char *reason;
} refusals[] = {{400, "Bad Request"},
                {411, "Length Required"},
                {413, "Content Too Large"},
                {431, "Request Header Fields Too Large"},
                {505, "HTTP Version Not Supported"},
                {0, NULL}};

/* tchar of RFC 9110 (header names and methods). */
static int tchar(unsigned char c) { return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c)); }

/* Case-insensitive: does the n-byte name equal lit? */
static int name_is(const char *name, size_t n, const char *lit) {
    return strlen(lit) == n && strncasecmp(name, lit, n) == 0;
}

int eg_admin_parse(const char *buf, size_t len, eg_admin_req *rq) {
    memset(rq, 0, sizeof *rq);
    const char *end = NULL;
    for (size_t i = 0; i + 3 < len && !end; i++)
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') end = buf + i;
    if (!end) return len >= EG_ADMIN_MAX_REQUEST ? -431 : 0;
    size_t hlen = (size_t)(end - buf) + 4;
    if (hlen > EG_ADMIN_MAX_REQUEST) return -431;
    /* request line: METHOD SP TARGET SP HTTP/1.x */
    const char *p = buf, *eol = memchr(buf, '\r', hlen);
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || sp1 == p) return -400;
    for (const char *q = p; q < sp1; q++)
        if (!tchar((unsigned char)*q)) return -400;
    size_t mlen = (size_t)(sp1 - p);
    rq->method = mlen == 3 && !strncmp(p, "GET", 3)      ? EG_ADMIN_GET
                 : mlen == 4 && !strncmp(p, "HEAD", 4)   ? EG_ADMIN_HEAD
                 : mlen == 4 && !strncmp(p, "POST", 4)   ? EG_ADMIN_POST
                 : mlen == 6 && !strncmp(p, "DELETE", 6) ? EG_ADMIN_DELETE
                                                         : EG_ADMIN_OTHER;
    const char *tgt = sp1 + 1, *sp2 = memchr(tgt, ' ', (size_t)(eol - tgt));
    if (!sp2 || sp2 == tgt || (size_t)(sp2 - tgt) >= sizeof rq->target) return -400;
    for (const char *q = tgt; q < sp2; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) return -400;
    memcpy(rq->target, tgt, (size_t)(sp2 - tgt));
    rq->target[sp2 - tgt] = '\0';
    const char *ver = sp2 + 1;
    if ((size_t)(eol - ver) != 8 || strncmp(ver, "HTTP/", 5) != 0) return -400;
    if (strncmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1')) return -505;
    struct evhttp_uri *u = evhttp_uri_parse_with_flags(rq->target, 0);
    if (!u) return -400;
    const char *path = evhttp_uri_get_path(u);
    eg_strlcpy(rq->path, path && *path ? path : "/", sizeof rq->path);
    evhttp_uri_free(u);
    /* header fields */
    int nfields = 0, has_cl = 0;
    for (p = eol + 2; p < end + 2; p = eol + 2) {
        eol = memchr(p, '\r', (size_t)(end + 2 - p));
        if (!eol || eol[1] != '\n') return -400;
        if (++nfields > EG_ADMIN_MAX_FIELDS) return -431;
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        if (!colon || colon == p) return -400; /* also refuses obs-fold (a line starting with a space) */
        for (const char *q = p; q < colon; q++)
            if (!tchar((unsigned char)*q)) return -400;
        const char *v = colon + 1, *ve = eol;
        for (const char *q = v; q < ve; q++)
            if (*q == '\n' || *q == '\0') return -400;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        size_t nl = (size_t)(colon - p);
        if (name_is(p, nl, "Content-Length")) {
            uint64_t cl = 0;
            if (has_cl++ || v == ve || ve - v > 12) return -400;
            for (const char *q = v; q < ve; q++) {
                if (*q < '0' || *q > '9') return -400;
                cl = cl * 10 + (uint64_t)(*q - '0');
            }
            if (cl > EG_ADMIN_MAX_REQUEST - hlen) return -413;
            rq->content_length = (size_t)cl;
        } else if (name_is(p, nl, "Transfer-Encoding")) {
            return -411;
        } else if (name_is(p, nl, "Authorization")) {
            rq->authorization = v;
            rq->authorization_len = (size_t)(ve - v);
        }
    }
    rq->header_len = hlen;
    return 1;
}

/* ---------------------------------------------------------- connections */

static void conn_free(conn *c) {
    eg_admin *a = c->a;
    if (c->reload) c->reload->c = NULL; /* its reload's answer goes nowhere */
    if (c->prev) c->prev->next = c->next;
    else a->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    else a->newest = c->prev;
    event_free(c->deadline);
    bufferevent_free(c->bev);
    a->nconns--;
    free(c);
}

/* (Re)starts c's EG_ADMIN_TIMEOUT_S deadline (on_deadline drops it). */
static void arm_deadline(conn *c) {
    struct timeval tv = {EG_ADMIN_TIMEOUT_S, 0};
    evtimer_add(c->deadline, &tv);
}

/* Queues the answer; the connection closes once it is written. */
static void send_answer(conn *c, const eg_admin_req *rq, answer *an) {
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t blen = evbuffer_get_length(an->body);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\n%s"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                        an->code, an->reason, an->ctype, an->extra, blen);
    if (rq && rq->method == EG_ADMIN_HEAD) evbuffer_drain(an->body, blen);
    else evbuffer_add_buffer(out, an->body);
    c->answered = 1;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_enable(c->bev, EV_WRITE);
    arm_deadline(c); /* a client that does not read its answer is dropped too */
}

/* Answers a request the parser refused (code = -rc). */
static void send_refusal(conn *c, int code) {
    answer an = {.body = evbuffer_new()};
    const char *reason = "Bad Request";
    for (int i = 0; refusals[i].code; i++)
        if (refusals[i].code == code) reason = refusals[i].reason;
    reply_error(&an, code, reason,
                code == 431 || code == 413 ? "request too large"
                : code == 411              ? "chunked bodies are not accepted; send Content-Length"
                                           : reason);
    send_answer(c, NULL, &an);
    evbuffer_free(an.body);
}

/* bufferevent read callback: once a whole request is in, routes and answers
 * it (a malformed one gets its refusal); nothing more is read from a
 * connection that was answered or waits for its reload. */
static void on_read(struct bufferevent *bev, void *arg) {
    conn *c = arg;
    if (c->answered || c->reload) return;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len = evbuffer_get_length(in);
    size_t peek = len < EG_ADMIN_MAX_REQUEST ? len : EG_ADMIN_MAX_REQUEST;
    const char *buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)peek);
    eg_admin_req rq;
    int rc = eg_admin_parse(buf, peek, &rq);
    if (rc < 0) {
        send_refusal(c, -rc);
        return;
    }
    if (rc == 0 || len < rq.header_len + rq.content_length) return; /* more to come */
    answer an = {.body = evbuffer_new()};
    if (route(c->a, c, &rq, buf + rq.header_len, &an) == 0) send_answer(c, &rq, &an); /* rq points into in */
    evbuffer_free(an.body);
    evbuffer_drain(in, len);
}

/* bufferevent write callback: an answered connection is freed once its
 * answer is written. */
static void on_written(struct bufferevent *bev, void *arg) {
    conn *c = arg;
    if (c->answered && evbuffer_get_length(bufferevent_get_output(bev)) == 0) conn_free(c);
}

/* bufferevent event callback: EOF, error or timeout frees the connection. */
static void on_conn_event(struct bufferevent *bev, short what, void *arg) {
    conn_free(arg); /* EOF, error or a bufferevent timeout: drop it */
}

/* The connection's deadline passed before it was answered: dropped. */
static void on_deadline(evutil_socket_t fd, short what, void *arg) { conn_free(arg); }

/* 1 when c waits for its request and none of it is in the kernel's
 * receive queue (a request that arrived and is not read yet, a probe's
 * typically, is not idle). */
static int idle(conn *c) {
    if (c->answered || c->reload) return 0;
    int pending = 0;
    return ioctl(bufferevent_getfd(c->bev), FIONREAD, &pending) != 0 || pending == 0;
}

/* At the cap: frees the oldest idle connection (see idle). Returns 1, or 0
 * when every open connection is busy. */
static int evict_idle(eg_admin *a) {
    for (conn *c = a->conns; c; c = c->next) {
        if (!idle(c)) continue;
        conn_free(c);
        a->evicted++;
        eg_log_msg(EG_WARN, "admin_connection_evicted",
                   "%d connections open (admin.max_connections); "
                   "closed the oldest one without a request for a new one (%llu so far)",
                   a->nconns + 1, (unsigned long long)a->evicted);
        return 1;
    }
    return 0;
}

/* evconnlistener callback: adopts a new connection (owned by a->conns,
 * appended as the newest); beyond admin.max_connections it takes the place
 * of the oldest idle one, or is closed at once (counted and logged) when
 * none is idle. */
static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg) {
    eg_admin *a = arg;
    if (a->nconns >= a->max_conns && !evict_idle(a)) {
        close(fd);
        a->refused++;
        eg_log_msg(EG_WARN, "admin_connection_refused",
                   "%d connections open (admin.max_connections), each busy; "
                   "closed a new one (%llu so far)",
                   a->nconns, (unsigned long long)a->refused);
        return;
    }
    conn *c = eg_xcalloc(1, sizeof *c);
    c->a = a;
    c->bev = bufferevent_socket_new(a->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->deadline = evtimer_new(a->base, on_deadline, c);
    if (!c->bev || !c->deadline) {
        if (c->bev) bufferevent_free(c->bev);
        else close(fd);
        if (c->deadline) event_free(c->deadline);
        free(c);
        return;
    }
    c->prev = a->newest;
    if (a->newest) a->newest->next = c;
    else a->conns = c;
    a->newest = c;
    a->nconns++;
    bufferevent_setcb(c->bev, on_read, on_written, on_conn_event, c);
    bufferevent_setwatermark(c->bev, EV_READ, 0, EG_ADMIN_MAX_REQUEST + 1);
    bufferevent_enable(c->bev, EV_READ);
    arm_deadline(c);
}

/* Timer: the listener paused on EMFILE/ENFILE accepts again. */
static void on_resume(evutil_socket_t fd, short what, void *arg) {
    eg_admin *a = arg;
    evconnlistener_enable(a->lis);
}

/* accept(2) failed for another reason than a transient one: out of
 * descriptors, typically. The listener would be readable again at once, so
 * it rests for a second. */
static void on_accept_error(struct evconnlistener *lis, void *arg) {
    eg_admin *a = arg;
    int e = EVUTIL_SOCKET_ERROR();
    eg_log_msg(EG_ERROR, "admin_accept_failed", "%s; not accepting for 1 s (%d connections open)",
               evutil_socket_error_to_string(e), a->nconns);
    evconnlistener_disable(lis);
    struct timeval tv = {1, 0};
    evtimer_add(a->resume_ev, &tv);
}

/* Reads the token file: the first line, surrounding whitespace trimmed. */
static int read_token(eg_admin *a, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "admin.token_file: cannot read '%s': %s", path, strerror(errno));
        return -1;
    }
    char buf[TOKEN_MAX + 2];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *s = buf;
    while (*s && isspace((unsigned char)*s)) s++;
    size_t len = strcspn(s, "\r\n");
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    if (len == 0 || len > TOKEN_MAX) {
        snprintf(err, errlen, "admin.token_file: '%s' must hold a token of 1 to %d characters", path, TOKEN_MAX);
        explicit_bzero(buf, sizeof buf);
        return -1;
    }
    memcpy(a->token, s, len);
    a->token[len] = '\0';
    a->token_len = len;
    explicit_bzero(buf, sizeof buf);
    return 0;
}

/* A new server of ops/arg with its token read, or NULL with err. */
static eg_admin *admin_alloc(struct event_base *base, const char *token_file, int max_connections,
                             const eg_admin_ops *ops, void *arg, char *err, size_t errlen) {
    eg_admin *a = eg_xcalloc(1, sizeof *a);
    a->base = base;
    a->ops = *ops;
    a->arg = arg;
    a->max_conns = max_connections > 0 ? max_connections : 1;
    if (token_file && read_token(a, token_file, err, errlen) != 0) {
        eg_admin_free(a);
        return NULL;
    }
    return a;
}

/* The common end of eg_admin_new and eg_admin_new_fd: a->lis listens. */
static eg_admin *admin_listening(eg_admin *a) {
    struct event_base *base = a->base;
    evconnlistener_set_error_cb(a->lis, on_accept_error);
#ifdef TCP_DEFER_ACCEPT
    /* a connection is handed to accept(2) only once its first bytes came
     * (or after DEFER_ACCEPT_S): idle clients wait in the kernel, and a
     * flood of them does not churn through the slots probes need */
    int defer = DEFER_ACCEPT_S;
    setsockopt(evconnlistener_get_fd(a->lis), IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
#endif
    a->resume_ev = evtimer_new(base, on_resume, a);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[300] = "?";
    if (getsockname(evconnlistener_get_fd(a->lis), (struct sockaddr *)&ss, &sl) == 0) {
        char ip[INET6_ADDRSTRLEN] = "?";
        int p = 0;
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
            p = ntohs(in->sin_port);
            snprintf(addr, sizeof addr, "%s:%d", ip, p);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
            p = ntohs(in6->sin6_port);
            snprintf(addr, sizeof addr, "[%s]:%d", ip, p);
        }
    }
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "admin_listening")) {
        eg_log_str(&l, "address", addr);
        eg_log_int(&l, "reload_enabled", a->token_len > 0);
        eg_log_int(&l, "max_connections", a->max_conns);
        eg_log_end(&l);
    }
    return a;
}

eg_admin *eg_admin_new_fd(struct event_base *base, int fd, const char *token_file, int max_connections,
                          const eg_admin_ops *ops, void *arg, char *err, size_t errlen) {
    eg_admin *a = admin_alloc(base, token_file, max_connections, ops, arg, err, errlen);
    if (!a) return close(fd), NULL;
    evutil_make_socket_nonblocking(fd);
    evutil_make_socket_closeonexec(fd);
    a->lis = evconnlistener_new(base, on_accept, a, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, LISTEN_BACKLOG, fd);
    if (!a->lis) {
        snprintf(err, errlen, "admin: cannot listen on the inherited socket %d: %s", fd, strerror(errno));
        close(fd);
        eg_admin_free(a);
        return NULL;
    }
    return admin_listening(a);
}

eg_admin *eg_admin_new(struct event_base *base, const char *listen, const char *token_file, int max_connections,
                       const eg_admin_ops *ops, void *arg, char *err, size_t errlen) {
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host) {
        snprintf(err, errlen, "admin.listen: expected \"host:port\", got \"%s\"", listen);
        return NULL;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || end == colon + 1) {
        snprintf(err, errlen, "admin.listen: bad port in \"%s\"", listen);
        return NULL;
    }
    eg_admin *a = admin_alloc(base, token_file, max_connections, ops, arg, err, errlen);
    if (!a) return NULL;
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%ld", port);
    struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = EVUTIL_AI_PASSIVE},
                           *ai = NULL;
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    int gai = evutil_getaddrinfo(host, portstr, &hints, &ai);
    if (gai != 0 || !ai) {
        snprintf(err, errlen, "admin.listen: cannot resolve \"%s\": %s", listen, evutil_gai_strerror(gai));
        eg_admin_free(a);
        return NULL;
    }
    a->lis =
        evconnlistener_new_bind(base, on_accept, a, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                LISTEN_BACKLOG, ai->ai_addr, (int)ai->ai_addrlen);
    evutil_freeaddrinfo(ai);
    if (!a->lis) {
        snprintf(err, errlen, "admin.listen: cannot listen on %s: %s", listen, strerror(errno));
        eg_admin_free(a);
        return NULL;
    }
    return admin_listening(a);
}

size_t eg_admin_token(const eg_admin *a, char *out, size_t outlen) {
    if (!a || !a->token_len || a->token_len >= outlen) {
        if (outlen) out[0] = '\0';
        return 0;
    }
    memcpy(out, a->token, a->token_len + 1);
    return a->token_len;
}

void eg_admin_free(eg_admin *a) {
    if (!a) return;
    while (a->conns) conn_free(a->conns);
    if (a->lis) evconnlistener_free(a->lis);
    if (a->resume_ev) event_free(a->resume_ev);
    explicit_bzero(a->token, sizeof a->token);
    free(a);
}
