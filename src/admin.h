/* admin.h — the admin HTTP endpoint (libevent evhttp on the gateway's own
 * event base: same thread as the loop, never blocks it).
 *
 * Routes: GET /metrics (Prometheus text), /healthz, /readyz, /policy, /lanes
 * (JSON), POST /reload. The server knows HTTP, routing and authentication
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
} eg_admin_ops;

typedef struct eg_admin eg_admin;

/* Starts listening on listen ("host:port"; port 0 picks a free one) and
 * logs an admin_listening line with the actual address. token_file may be
 * NULL (mutating endpoints off); an unreadable or empty token file is an
 * error. Returns NULL with a message in err. */
eg_admin *eg_admin_new(struct event_base *base, const char *listen, const char *token_file,
                       const eg_admin_ops *ops, void *arg, char *err, size_t errlen);
/* Stops listening and frees the server (NULL is fine). */
void eg_admin_free(eg_admin *a);

/* Appends s to out as a JSON string literal (quoted, escaped). */
void eg_json_str(struct evbuffer *out, const char *s);

/* Constant-time comparison of a presented token (n bytes) with the expected
 * one: the time depends on the expected token's length only. Returns 1 when
 * equal. */
int eg_token_equal(const char *expected, size_t elen, const char *given, size_t n);

#endif
