/* gw_reload.c — the one policy reload path of `errgate run`, shared by
 * SIGHUP, a change of the policy file and POST /reload.
 *
 * A reload compiles a policy file and runs its examples: hostile or just
 * slow code, up to the load budget per call. So it never runs on the loop:
 * a request starts a build of a fresh policy (its own Lua state, same file,
 * same budget and memory cap) on a worker thread, and the loop goes on
 * consuming, deciding and answering the admin endpoint with the policy it
 * has. When the build ends, the worker writes one byte to a pipe; the
 * loop's event joins the thread and, on success, swaps the new policy in —
 * between two events, hence between two decisions — else keeps the old one
 * and records why. One build runs at a time: requests arriving meanwhile are
 * coalesced into one more build after it (the file may have changed after
 * the running build read it), and POST /reload requests wait for the build
 * that serves them without holding the loop (their reply is sent when it
 * ends).
 *
 * Ownership: the loop owns the reloader, the builds and their waiters; a
 * worker touches only its build's inputs (copied at request time) and
 * result, and the pipe's write end, all of which outlive it: the loop reads
 * the result only after pthread_join, and eg_gw_reload_stop joins a running
 * build (bounded by the policy's load budget) before freeing anything. */
#include "gw.h"
#include "log.h"
#include "luavm.h"
#include "redact.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Someone waiting for a build's outcome (a POST /reload). */
typedef struct waiter {
    eg_admin_reload_done done;
    void *req;
} waiter;

/* One build of the policy file. The worker reads path, timeout_ms and
 * mem_limit and writes fresh and err; the loop touches nothing else of it
 * while the worker runs. */
typedef struct build {
    char *path;
    int timeout_ms;
    size_t mem_limit;
    eg_policy *fresh; /* the new policy, NULL when refused */
    char err[1024];
    eg_shadow_cfg shadow; /* the shadow candidate, built after it (path NULL: none) */
    eg_policy *sh_fresh;  /* the new candidate, NULL when refused */
    char sh_err[1024];
    char trigger[16]; /* of the first request it serves */
    int64_t t0_ms;
    waiter *w;
    int nw, capw;
} build;

struct eg_gw_reloader {
    int pipe[2]; /* the worker's "done" byte */
    struct event *ev;
    pthread_t thread;
    build *cur;  /* the build running (a worker exists), else NULL */
    build *next; /* requests that came meanwhile, else NULL */
};

static void build_free(build *b) {
    if (!b) return;
    eg_policy_free(b->fresh);
    eg_policy_free(b->sh_fresh);
    free((char *)b->shadow.path);
    free(b->path);
    free(b->w);
    free(b);
}

/* Tells every waiter of b the outcome (rc 0 or -1 with err). */
static void build_notify(build *b, int rc, const char *err) {
    for (int i = 0; i < b->nw; i++) b->w[i].done(b->w[i].req, rc, err);
    b->nw = 0;
}

static void build_add_waiter(build *b, eg_admin_reload_done done, void *req) {
    if (!done) return;
    if (b->nw == b->capw) {
        b->capw = b->capw ? b->capw * 2 : 4;
        b->w = eg_xrealloc(b->w, (size_t)b->capw * sizeof *b->w);
    }
    b->w[b->nw++] = (waiter){done, req};
}

typedef struct worker_arg {
    build *b;
    int fd;
} worker_arg;

/* The worker: loads the policy file into a fresh state, then writes the
 * byte that wakes the loop. */
static void *worker_main(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    build *b = wa.b;
    b->fresh = eg_policy_load_capped(b->path, b->timeout_ms, b->mem_limit, b->err, sizeof b->err);
    if (b->shadow.path)
        b->sh_fresh = eg_policy_load_capped(b->shadow.path, b->shadow.timeout_ms, b->shadow.mem_limit, b->sh_err,
                                            sizeof b->sh_err);
    char c = 1;
    while (write(wa.fd, &c, 1) < 0 && errno == EINTR) {}
    return NULL;
}

/* Stats the policy file into *mtime_ns and *size; -1 when it cannot. */
static int policy_stat(const eg_gw *gw, int64_t *mtime_ns, int64_t *size) {
    struct stat st;
    if (stat(eg_policy_path(gw->policy), &st) != 0) return -1;
    *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    *size = (int64_t)st.st_size;
    return 0;
}

/* A build's outcome on the loop: swap on success (new rung topics are
 * subscribed to, delays rechecked), else keep the old policy and the error
 * for /policy; log, count, and answer its waiters. */
static void finish(eg_gw *gw, build *b) {
    char before[256];
    if (gw->shadow && b->shadow.path) eg_shadow_swap(gw->shadow, &b->sh_fresh, b->sh_err, b->trigger);
    eg_strlcpy(before, eg_policy_id(gw->policy), sizeof before);
    if (!b->fresh) {
        char clean[sizeof gw->last_reload_error];
        eg_redact(b->err, strlen(b->err), clean, sizeof clean);
        eg_strlcpy(gw->last_reload_error, clean, sizeof gw->last_reload_error);
        const char *v[1] = {"failure"};
        (*eg_counter(gw->m.reloads, v))++;
        eg_logline l;
        if (eg_log_begin(&l, EG_WARN, "reload")) {
            eg_log_str(&l, "result", "failed");
            eg_log_str(&l, "trigger", b->trigger);
            eg_log_str(&l, "policy", before);
            eg_log_str(&l, "error", clean);
            eg_log_int(&l, "took_ms", eg_now_ms() - b->t0_ms);
            eg_log_end(&l);
        }
        build_notify(b, -1, clean);
        return;
    }
    eg_policy_free(gw->policy);
    gw->policy = b->fresh;
    b->fresh = NULL;
    gw->last_reload_error[0] = '\0';
    char err[512];
    if (eg_gw_rungs_sync(gw) && eg_gw_subscribe(gw, err, sizeof err) != 0)
        eg_log_msg(EG_ERROR, "subscribe_failed", "new rung topics: %s", err);
    eg_gw_rungs_recheck(gw); /* delays may have changed */
    const char *v[1] = {"success"};
    (*eg_counter(gw->m.reloads, v))++;
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "reload")) {
        eg_log_str(&l, "result", "ok");
        eg_log_str(&l, "trigger", b->trigger);
        eg_log_str(&l, "policy", eg_policy_id(gw->policy));
        eg_log_str(&l, "previous", before);
        eg_log_int(&l, "took_ms", eg_now_ms() - b->t0_ms);
        eg_log_end(&l);
    }
    build_notify(b, 0, NULL);
}

static void start(eg_gw *gw, build *b);

/* The worker's byte: join it, apply its outcome, start a coalesced build. */
static void on_built(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    eg_gw_reloader *rl = gw->reloader;
    char buf[16];
    while (read(fd, buf, sizeof buf) > 0) {}
    if (!rl->cur) return;
    pthread_join(rl->thread, NULL);
    build *b = rl->cur;
    rl->cur = NULL;
    finish(gw, b);
    build_free(b);
    if (rl->next) {
        build *n = rl->next;
        rl->next = NULL;
        start(gw, n);
    }
}

/* Starts b on a worker (the reloader is idle). Signals stay with the loop
 * thread, except the VM watchdog's, which must reach the build. A worker that cannot start is a failed reload. */
static void start(eg_gw *gw, build *b) {
    eg_gw_reloader *rl = gw->reloader;
    b->path = eg_xstrdup(eg_policy_path(gw->policy));
    b->timeout_ms = eg_policy_timeout_ms(gw->policy);
    b->mem_limit = eg_policy_mem_limit(gw->policy);
    if (gw->shadow) {
        b->shadow = *eg_shadow_config(gw->shadow);
        b->shadow.path = eg_xstrdup(b->shadow.path);
    }
    b->t0_ms = eg_now_ms();
    gw->last_reload_ms = eg_wall_ms();
    worker_arg *wa = eg_xcalloc(1, sizeof *wa);
    wa->b = b;
    wa->fd = rl->pipe[1];
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, EG_VM_WATCH_SIGNAL); /* the VM's watchdog must reach the build */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&rl->thread, NULL, worker_main, wa);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        free(wa);
        snprintf(b->err, sizeof b->err, "policy %s: cannot start a build thread: %s", b->path, strerror(rc));
        finish(gw, b);
        build_free(b);
        return;
    }
    rl->cur = b;
}

/* Creates the reloader unless it exists (at the start, or at a reload if
 * that failed). Returns 0 or -1 with err. */
static int reloader_get(eg_gw *gw, char *err, size_t errlen) {
    if (gw->reloader) return 0;
    eg_gw_reloader *rl = eg_xcalloc(1, sizeof *rl);
    if (pipe2(rl->pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "reload: pipe: %s", strerror(errno));
        free(rl);
        return -1;
    }
    rl->ev = event_new(gw->base, rl->pipe[0], EV_READ | EV_PERSIST, on_built, gw);
    event_add(rl->ev, NULL);
    gw->reloader = rl;
    return 0;
}

void eg_gw_reload_request(void *arg, const char *trigger, eg_admin_reload_done done, void *req) {
    eg_gw *gw = arg;
    char err[256];
    /* the target's file-sourced settings (HTTP header values: small files,
     * read here on the loop) are re-read too */
    if (gw->target->ops->reload && gw->target->ops->reload(gw->target, err, sizeof err) != 0)
        eg_log_msg(EG_WARN, "target_reload_failed", "%s (the previous values stay)", err);
    /* whatever the trigger, the file watch has now seen this version */
    policy_stat(gw, &gw->policy_mtime_ns, &gw->policy_size);
    if (reloader_get(gw, err, sizeof err) != 0) {
        eg_log_msg(EG_ERROR, "reload", "%s", err);
        if (done) done(req, -1, err);
        return;
    }
    eg_gw_reloader *rl = gw->reloader;
    if (rl->cur) { /* coalesced into the build after the running one */
        if (!rl->next) {
            rl->next = eg_xcalloc(1, sizeof *rl->next);
            eg_strlcpy(rl->next->trigger, trigger, sizeof rl->next->trigger);
        }
        build_add_waiter(rl->next, done, req);
        return;
    }
    build *b = eg_xcalloc(1, sizeof *b);
    eg_strlcpy(b->trigger, trigger, sizeof b->trigger);
    build_add_waiter(b, done, req);
    start(gw, b);
}

void eg_gw_reload_stop(eg_gw *gw) {
    eg_gw_reloader *rl = gw->reloader;
    if (!rl) return;
    const char *why = "the gateway is stopping; the policy was not reloaded";
    if (rl->cur) {
        eg_log_msg(EG_INFO, "reload", "waiting for the policy build in progress (at most its load budget)");
        pthread_join(rl->thread, NULL);
        build_notify(rl->cur, -1, why);
        build_free(rl->cur);
    }
    if (rl->next) {
        build_notify(rl->next, -1, why);
        build_free(rl->next);
    }
    event_free(rl->ev);
    close(rl->pipe[0]);
    close(rl->pipe[1]);
    free(rl);
    gw->reloader = NULL;
}

/* Once a second: a policy file whose modification time or size changed,
 * and whose content differs from the policy deciding now, is reloaded (once
 * per change: a broken edit is not retried until the file changes again). */
static void on_watch(evutil_socket_t fd, short what, void *arg) {
    eg_gw *gw = arg;
    int64_t mt, sz;
    char sha[65];
    if (gw->stopping) return;
    if (gw->shadow && eg_shadow_changed(gw->shadow)) { /* the candidate is rebuilt with the policy */
        eg_gw_reload_request(gw, "file", NULL, NULL);
        return;
    }
    if (policy_stat(gw, &mt, &sz) != 0) return;
    if (mt == gw->policy_mtime_ns && sz == gw->policy_size) return;
    gw->policy_mtime_ns = mt;
    gw->policy_size = sz;
    if (eg_sha256_file_hex(eg_policy_path(gw->policy), sha) == 0 && strcmp(sha, eg_policy_sha256(gw->policy)) == 0)
        return; /* touched, not changed */
    eg_gw_reload_request(gw, "file", NULL, NULL);
}

void eg_gw_watch_start(eg_gw *gw) {
    /* the reloader (its pipe) exists from the start, so the process's open
     * descriptors do not step up at the first reload (make soak watches
     * them for growth); reloader_get tries again at a reload if this fails */
    char err[256];
    if (reloader_get(gw, err, sizeof err) != 0) eg_log_msg(EG_WARN, "reload", "%s (tried again at a reload)", err);
    if (policy_stat(gw, &gw->policy_mtime_ns, &gw->policy_size) != 0) return;
    gw->watch_ev = event_new(gw->base, -1, EV_PERSIST, on_watch, gw);
    struct timeval tv = eg_gw_tv(POLICY_WATCH_MS);
    event_add(gw->watch_ev, &tv);
}

void eg_gw_on_sighup(evutil_socket_t sig, short what, void *arg) { eg_gw_reload_request(arg, "sighup", NULL, NULL); }
