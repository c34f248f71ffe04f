/* admin.h — the admin HTTP endpoint (a small HTTP/1.1 server on libevent
 * bufferevents, on the gateway's own event base: same thread as the loop,
 * never blocks it).
 *
 * Routes: GET /metrics (Prometheus text), /healthz, /readyz, /policy, /lanes
 * (JSON), POST /reload, and the owner's controls (POST, eg_admin_ops.control). The server knows HTTP, routing and authentication
 * only; what it serves comes from the owner through eg_admin_ops, called on
 * the loop thread between two events. Mutating endpoints (POST /reload) need
 * "Authorization: Bearer <token>", the token being read once at start from
 * admin.token_file and compared in constant time: a missing or wrong token
 * answers 401; with no token file configured they answer 403 (disabled).
 * Nothing here ever serves a payload or the librdkafka configuration. */
#ifndef EG_ADMIN_H
#define EG_ADMIN_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stddef.h>

#include "json.h" /* eg_json_str, for what the ops append */

/* Ends a POST /reload: rc 0 (reloaded) or -1 with the reason in err. */
typedef void (*eg_admin_reload_done)(void *req, int rc, const char *err);

typedef struct eg_admin_ops {
    /* Appends the Prometheus exposition to out. */
    void (*metrics)(void *arg, struct evbuffer *out);
    /* Returns 1 when ready; otherwise 0 and a short reason in why. */
    int (*ready)(void *arg, char *why, size_t whylen);
    /* Appends a JSON object describing the policy / the lanes. */
    void (*policy)(void *arg, struct evbuffer *out);
    void (*lanes)(void *arg, struct evbuffer *out);
    /* Starts reloading the policy ("admin" trigger) and returns at once;
     * calls done(req, ...) exactly once, later, on the loop thread, when the
     * reload ended (the old policy stays on failure) — and always before the
     * server is freed. The reply waits for it; the loop does not. */
    void (*reload)(void *arg, const char *trigger, eg_admin_reload_done done, void *req);
    /* Operator controls (POST and DELETE need the bearer token, like
     * /reload; GET does not): with out NULL returns non-zero when path is
     * one of them (else 0: not a control); with out, serves the request
     * (method an eg_admin_method, body the request's len bytes), appends a
     * JSON object and returns the HTTP status (200, 400 for bad input, 404,
     * 405 for a method the path does not take, 409 when it cannot apply
     * now, 503 when it could not be done), or EG_ADMIN_DEFERRED after
     * eg_admin_defer when the answer comes later. May be NULL. */
    int (*control)(void *arg, int method, const char *path, const char *body, size_t len, struct evbuffer *out);
} eg_admin_ops;

typedef struct eg_admin eg_admin;

/* Starts listening on listen ("host:port"; port 0 picks a free one) and
 * logs an admin_listening line with the actual address. token_file may be
 * NULL (mutating endpoints off); an unreadable or empty token file is an
 * error. At most max_connections are open at once.
 * Returns NULL with a message in err. */
eg_admin *eg_admin_new(struct event_base *base, const char *listen, const char *token_file, int max_connections,
                       const eg_admin_ops *ops, void *arg, char *err, size_t errlen);

/* As eg_admin_new, serving an inherited socket fd (bound, listening or not
 * yet; owned by the server from now on, closed on failure too): the admin
 * of one source's gateway under the supervisor (supervisor.h). */
eg_admin *eg_admin_new_fd(struct event_base *base, int fd, const char *token_file, int max_connections,
                          const eg_admin_ops *ops, void *arg, char *err, size_t errlen);

/* The bearer token a read from admin.token_file (as it compares it) into
 * out, NUL-terminated; its length, or 0 (out "") when there is none or it
 * does not fit. The supervisor passes it on to its sources' admins. */
size_t eg_admin_token(const eg_admin *a, char *out, size_t outlen);

/* Limits: a request (request line, header fields and body) is at most
 * EG_ADMIN_MAX_REQUEST bytes with at most EG_ADMIN_MAX_FIELDS header
 * fields, and must arrive within EG_ADMIN_TIMEOUT_S seconds. */
#define EG_ADMIN_MAX_REQUEST 65536
#define EG_ADMIN_MAX_FIELDS 100
#define EG_ADMIN_TIMEOUT_S 10

typedef enum { EG_ADMIN_GET = 1, EG_ADMIN_HEAD, EG_ADMIN_POST, EG_ADMIN_DELETE, EG_ADMIN_OTHER } eg_admin_method;

/* A parsed request head. authorization points into the parsed buffer. */
typedef struct eg_admin_req {
    eg_admin_method method;
    char target[2048];         /* the request target as sent */
    char path[2048];           /* its path ("/" when empty), not decoded */
    const char *authorization; /* the Authorization value (trimmed), or NULL */
    size_t authorization_len;
    size_t content_length; /* 0 without Content-Length */
    size_t header_len;     /* bytes up to and including the blank line */
} eg_admin_req;

/* Parses the request head at buf (len bytes received so far). Returns 1
 * with *rq filled (the body, content_length bytes, follows header_len),
 * 0 when the head is not complete yet, or minus the HTTP status to answer:
 * -400 malformed, -411 Transfer-Encoding (chunked) sent, -413 body over the
 * limit, -431 head over the limit, -505 not HTTP/1.0 or 1.1. */
int eg_admin_parse(const char *buf, size_t len, eg_admin_req *rq);
/* A control answered later (a write that must be acknowledged first). */
typedef struct pending_reload eg_admin_pending;
#define EG_ADMIN_DEFERRED (-1)
/* Called by eg_admin_ops.control while it serves a request of a: the
 * request's answer will be given by eg_admin_answer (exactly once, also
 * after the server is freed: it is then dropped), and control returns
 * EG_ADMIN_DEFERRED. */
eg_admin_pending *eg_admin_defer(eg_admin *a);
/* Answers a deferred request with status code and the JSON object in body
 * (consumed), and frees p. */
void eg_admin_answer(eg_admin_pending *p, int code, struct evbuffer *body);

/* Stops listening and frees the server (NULL is fine). */
void eg_admin_free(eg_admin *a);

/* Constant-time comparison of a presented token (n bytes) with the expected
 * one: the time depends on the expected token's length only. Returns 1 when
 * equal. */
int eg_token_equal(const char *expected, size_t elen, const char *given, size_t n);

#endif
