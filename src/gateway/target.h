/* target.h — what processes a record: the target interface.
 *
 * A target borrows a record for one attempt and reports back exactly once
 * through the done callback: f == NULL on success, a failure otherwise
 * (the callee fills *f; the gateway takes its strings), or cancelled = 1
 * when the target was shut down before the attempt finished. The callback
 * always runs from the event loop (or from flush), never from inside submit,
 * so the gateway never re-enters itself. */
#ifndef EG_TARGET_H
#define EG_TARGET_H

#include <event2/event.h>
#include <stddef.h>

#include "config.h"
#include "record.h"

typedef void (*eg_target_done_fn)(eg_record *rec, eg_failure *f, int cancelled, void *arg);

typedef struct eg_target eg_target;
typedef struct eg_target_ops {
    /* Starts an attempt. Returns 0, or -1 when the target has no capacity. */
    int (*submit)(eg_target *t, eg_record *rec);
    /* How many more attempts can start now. */
    int (*available)(const eg_target *t);
    /* Ends every attempt in flight with cancelled = 1 (callbacks run inline). */
    void (*cancel_all)(eg_target *t);
    /* Optional (NULL for asynchronous targets): delivers the results of
     * attempts that already finished, now. The gateway calls it outside any
     * submit, so done callbacks still never run inside submit. */
    void (*flush)(eg_target *t);
    /* Optional: re-reads what the target takes from files (the HTTP target's
     * file-sourced headers) on a reload. Returns 0, or -1 with a message in
     * err (the target keeps what it had). */
    int (*reload)(eg_target *t, char *err, size_t errlen);
    void (*destroy)(eg_target *t);
} eg_target_ops;

struct eg_target {
    const eg_target_ops *ops;
    struct event_base *base;
    eg_target_done_fn done;
    void *done_arg;
    int inflight;
};

/* Builds the configured target. Returns NULL with a message in err. */
eg_target *eg_target_new(const eg_config *cfg, struct event_base *base, eg_target_done_fn done, void *arg, char *err,
                         size_t errlen);

eg_target *eg_target_http_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen);
eg_target *eg_target_lua_new(const eg_config *cfg, struct event_base *base, char *err, size_t errlen);

#endif
