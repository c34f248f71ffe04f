/* admin.c — the admin HTTP endpoint (see admin.h).
 *
 * One evhttp server with a generic callback that routes on method and path.
 * Limits keep a slow or hostile client from costing memory: small header and
 * body caps and a short per-connection timeout. Bodies are built in an
 * evbuffer and sent in one reply; nothing blocks (POST /reload is answered
 * when its reload, built off the loop, ends). The token lives in memory
 * only for the server's life and is wiped when the server is freed. */
#include "admin.h"
#include "log.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define TOKEN_MAX 512

struct eg_admin {
    struct evhttp *http;
    eg_admin_ops ops;
    void *arg;
    char token[TOKEN_MAX + 1];
    size_t token_len;  /* 0: mutating endpoints off */
};

int eg_token_equal(const char *expected, size_t elen, const char *given, size_t n) {
    unsigned diff = (unsigned)(elen != n) | (elen == 0);
    for (size_t i = 0; i < elen; i++) {
        unsigned char g = i < n ? (unsigned char)given[i] : 0;
        diff |= (unsigned)(g ^ (unsigned char)expected[i]);
    }
    return diff == 0;
}

void eg_json_str(struct evbuffer *out, const char *s) {
    evbuffer_add(out, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') evbuffer_add_printf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f) evbuffer_add_printf(out, "\\u%04x", *p);
        else evbuffer_add(out, p, 1);
    }
    evbuffer_add(out, "\"", 1);
}

/* Sends code with body (which it drains) and a content type. */
static void reply(struct evhttp_request *req, int code, const char *reason, const char *ctype,
                  struct evbuffer *body) {
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_send_reply(req, code, reason, body);
}

static void reply_json(struct evhttp_request *req, int code, const char *reason, struct evbuffer *body) {
    evbuffer_add(body, "\n", 1);
    reply(req, code, reason, "application/json", body);
}

/* A JSON {"error": msg} reply. */
static void reply_error(struct evhttp_request *req, int code, const char *reason, const char *msg) {
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"error\":");
    eg_json_str(b, msg);
    evbuffer_add(b, "}", 1);
    reply_json(req, code, reason, b);
    evbuffer_free(b);
}

/* Checks the bearer token of a mutating request; answers and returns 0 when
 * it is refused. */
static int authorized(eg_admin *a, struct evhttp_request *req) {
    if (a->token_len == 0) {
        reply_error(req, 403, "Forbidden", "mutating endpoints are disabled (no admin.token_file)");
        return 0;
    }
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    const char *tok = NULL;
    if (h && strncasecmp(h, "Bearer ", 7) == 0) {
        tok = h + 7;
        while (*tok == ' ') tok++;
    }
    if (!tok || !eg_token_equal(a->token, a->token_len, tok, strlen(tok))) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
        reply_error(req, 401, "Unauthorized", "a valid bearer token is required");
        eg_log_msg(EG_WARN, "admin_unauthorized", "%s %s refused", "POST", evhttp_request_get_uri(req));
        return 0;
    }
    return 1;
}

/* A POST /reload waiting for its reload to end (evhttp keeps an unanswered
 * request alive even when the client goes away). */
typedef struct pending_reload {
    eg_admin *a;
    struct evhttp_request *req;
} pending_reload;

static void reload_done(void *arg, int rc, const char *err) {
    pending_reload *pr = arg;
    eg_admin *a = pr->a;
    struct evbuffer *b = evbuffer_new();
    if (rc == 0) {
        evbuffer_add_printf(b, "{\"result\":\"reloaded\",\"policy\":");
    } else {
        evbuffer_add_printf(b, "{\"result\":\"failed\",\"error\":");
        eg_json_str(b, err);
        evbuffer_add_printf(b, ",\"policy\":");
    }
    a->ops.policy(a->arg, b);
    evbuffer_add(b, "}", 1);
    if (rc == 0) reply_json(pr->req, 200, "OK", b);
    else reply_json(pr->req, 422, "Unprocessable Entity", b);
    evbuffer_free(b);
    free(pr);
}

static void on_request(struct evhttp_request *req, void *arg) {
    eg_admin *a = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!path) path = "/";
    int get = cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD;
    struct evbuffer *b = evbuffer_new();
    if (strcmp(path, "/reload") == 0) {
        if (cmd != EVHTTP_REQ_POST) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "POST");
            reply_error(req, 405, "Method Not Allowed", "use POST");
        } else if (authorized(a, req)) {
            pending_reload *pr = eg_xcalloc(1, sizeof *pr);
            pr->a = a;
            pr->req = req;
            a->ops.reload(a->arg, "admin", reload_done, pr);
        }
    } else if (!get) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_error(req, 405, "Method Not Allowed", "use GET");
    } else if (strcmp(path, "/metrics") == 0) {
        a->ops.metrics(a->arg, b);
        reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", b);
    } else if (strcmp(path, "/healthz") == 0) {
        evbuffer_add_printf(b, "{\"status\":\"ok\"}");
        reply_json(req, 200, "OK", b);
    } else if (strcmp(path, "/readyz") == 0) {
        char why[256] = "";
        int ok = a->ops.ready(a->arg, why, sizeof why);
        evbuffer_add_printf(b, "{\"ready\":%s", ok ? "true" : "false");
        if (!ok) {
            evbuffer_add_printf(b, ",\"reason\":");
            eg_json_str(b, why);
        }
        evbuffer_add(b, "}", 1);
        reply_json(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", b);
    } else if (strcmp(path, "/policy") == 0) {
        a->ops.policy(a->arg, b);
        reply_json(req, 200, "OK", b);
    } else if (strcmp(path, "/lanes") == 0) {
        a->ops.lanes(a->arg, b);
        reply_json(req, 200, "OK", b);
    } else {
        reply_error(req, 404, "Not Found", "unknown path (try /metrics, /healthz, /readyz, /policy, /lanes, POST /reload)");
    }
    evbuffer_free(b);
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

eg_admin *eg_admin_new(struct event_base *base, const char *listen, const char *token_file,
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
    eg_admin *a = eg_xcalloc(1, sizeof *a);
    a->ops = *ops;
    a->arg = arg;
    if (token_file && read_token(a, token_file, err, errlen) != 0) {
        eg_admin_free(a);
        return NULL;
    }
    a->http = evhttp_new(base);
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST);
    evhttp_set_max_headers_size(a->http, 8192);
    evhttp_set_max_body_size(a->http, 4096);
    evhttp_set_timeout(a->http, 10);
    evhttp_set_gencb(a->http, on_request, a);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(a->http, host, (ev_uint16_t)port);
    if (!bs) {
        snprintf(err, errlen, "admin.listen: cannot listen on %s: %s", listen, strerror(errno));
        eg_admin_free(a);
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[300] = "?";
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0) {
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
        eg_log_end(&l);
    }
    return a;
}

void eg_admin_free(eg_admin *a) {
    if (!a) return;
    if (a->http) evhttp_free(a->http);
    explicit_bzero(a->token, sizeof a->token);
    free(a);
}
