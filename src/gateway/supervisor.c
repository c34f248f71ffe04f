/* supervisor.c — several sources in one gateway: a process per source.
 *
 * A config with `sources` (config_sources.c) runs as one supervisor and, per
 * source, one child process `errgate run -c CONFIG --source NAME`: a whole
 * gateway of its own (policy state reloaded on its own, target, breaker,
 * budgets, limits, lanes, spill journal, fences), all of them members of
 * the config's one consumer group, each subscribed to its own topics and
 * rungs (Kafka's assignors give a topic's partitions to the members that
 * subscribed to it). A process per source rather than a loop shared by
 * several: a source's policy that burns its CPU budget, its target's
 * connection pool, a fatal producer error or a crash stay that source's,
 * and every guarantee the single-source gateway proves holds unchanged.
 *
 * The supervisor:
 *   - starts the children (PR_SET_PDEATHSIG: a killed supervisor takes them
 *     with it; each in a process group of its own, so a terminal's ^C is
 *     not theirs twice) and forwards SIGTERM, SIGINT (the children stop
 *     gracefully; a second one, as for a gateway, stops them at once) and
 *     SIGHUP (each reloads its policy);
 *   - shares their fate: when one ends on its own, the others are stopped
 *     (SIGTERM) and the supervisor exits with the highest exit code among
 *     them (a child ended by a signal counts as EG_EXIT_FAIL), so an
 *     orchestrator restarts the whole gateway, as it does a single-source
 *     one; a stop decision under on_stop = "wait" pauses only its source;
 *   - past shutdown_timeout + 20 s after a stop, kills what is left;
 *   - serves the admin endpoint (admin.listen) of the whole gateway: each
 *     child's admin listens on a socket the supervisor bound on 127.0.0.1
 *     port 0 and handed down (--admin-fd 3); GET /metrics merges the
 *     children's expositions (prom_merge.h) with a `source` label and adds
 *     errgate_source_up; /readyz is ready when every source is; /policy and
 *     /lanes hold each source's answer under its name; POST /reload reloads
 *     every source's policy; GET /sources lists the sources, their
 *     processes and exit codes; /sources/NAME/PATH is PATH of that source's
 *     admin (its controls: overrides, fences, resume, dlq-guard reset; the
 *     supervisor checks the bearer token and passes it on).
 * The admin's calls to the children are blocking (libcurl, bounded:
 * CHILD_SCRAPE_MS per child for views, CHILD_CONTROL_MS for a control):
 * the supervisor has no record path to delay, only child exits and other
 * admin requests, which wait that long at most.
 *
 * Locality: one thread, the loop's; children are reaped on SIGCHLD. */
#include "supervisor.h"
#include "admin.h"
#include "cli.h"
#include "log.h"
#include "metrics.h"
#include "prom_merge.h"
#include "util.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_SCRAPE_MS 3000   /* a child's /metrics, /readyz, /policy, /lanes */
#define CHILD_CONTROL_MS 15000 /* a child's control or reload (its own answers wait for Kafka) */
#define CHILD_BODY_MAX (16 << 20)
#define STOP_GRACE_MS 20000 /* past shutdown_timeout: the children's teardown */
#define CHILD_ADMIN_FD 3

typedef struct child {
    char *name;
    pid_t pid; /* 0 once reaped */
    int port;  /* its admin's port on 127.0.0.1, 0 without admin */
    int code;  /* exit code once ended */
    int ended;
    int sig; /* the signal that ended it, 0 */
} child;

typedef struct sup {
    struct event_base *base;
    struct event *sig_ev[4], *kill_ev;
    child *ch;
    int n, alive;
    int stopping;
    int final;
    const eg_config *shared;
    eg_admin *admin;
    char token[520]; /* the admin token passed on to the children (eg_admin_token), "" none */
} sup;

/* ---- the children ---------------------------------------------------- */

/* A TCP socket bound to 127.0.0.1:0 and listening; its port in *port.
 * Returns the fd, or -1. */
static int admin_socket(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Starts c's process. Returns 0, or -1 (logged). */
static int spawn(sup *s, child *c, const char *self, const char *cfgpath) {
    int lfd = -1;
    if (s->shared->admin_enabled && (lfd = admin_socket(&c->port)) < 0) {
        eg_log_msg(EG_ERROR, "source_start_failed", "source %s: no admin socket: %s", c->name, strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        eg_log_msg(EG_ERROR, "source_start_failed", "source %s: fork: %s", c->name, strerror(errno));
        if (lfd >= 0) close(lfd);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(EG_EXIT_FAIL); /* the supervisor is already gone */
        /* a group of its own: a terminal's ^C reaches the supervisor alone,
         * which passes it on once (a second SIGINT would stop a source at once) */
        setpgid(0, 0);
        const char *argv[10] = {self, "run", "-c", cfgpath, "--source", c->name, NULL};
        if (lfd >= 0) {
            if (dup2(lfd, CHILD_ADMIN_FD) < 0) _exit(EG_EXIT_FAIL);
            fcntl(CHILD_ADMIN_FD, F_SETFD, 0); /* dup2's copy has no FD_CLOEXEC; say so anyway */
            argv[6] = "--admin-fd";
            argv[7] = "3";
        }
        /* SIGTERM, SIGINT and SIGHUP stay blocked through exec: the child's
         * `run` takes them once its loop is armed, as a gateway does */
        execv(self, (char *const *)argv);
        _exit(127);
    }
    if (lfd >= 0) close(lfd);
    c->pid = pid;
    c->ended = 0;
    s->alive++;
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "source_started")) {
        eg_log_str(&l, "source", c->name);
        eg_log_int(&l, "pid", pid);
        if (c->port) eg_log_int(&l, "admin_port", c->port);
        eg_log_end(&l);
    }
    return 0;
}

/* Sends sig to every live child. */
static void signal_all(sup *s, int sig) {
    for (int i = 0; i < s->n; i++)
        if (!s->ch[i].ended && s->ch[i].pid > 0) kill(s->ch[i].pid, sig);
}

/* Stops the children (SIGTERM) and arms the deadline past which they are
 * killed. */
static void begin_stop(sup *s, int sig, const char *why) {
    if (!s->stopping) {
        s->stopping = 1;
        eg_log_msg(EG_INFO, "stop", "stopping every source: %s", why);
        struct timeval tv = {(s->shared->shutdown_timeout_ms + STOP_GRACE_MS) / 1000, 0};
        evtimer_add(s->kill_ev, &tv);
    }
    signal_all(s, sig);
}

static void on_kill_deadline(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    sup *s = arg;
    eg_log_msg(EG_ERROR, "stop", "sources still running past the stop's deadline: killed");
    signal_all(s, SIGKILL);
}

/* SIGCHLD: reaps what ended; one ending on its own stops the others. */
static void reap(sup *s) {
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < s->n; i++) {
            child *c = &s->ch[i];
            if (c->pid != pid || c->ended) continue;
            c->ended = 1;
            c->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            c->code = WIFEXITED(st) ? WEXITSTATUS(st) : EG_EXIT_FAIL;
            if (c->code == 127) c->code = EG_EXIT_FAIL; /* exec failed */
            if (c->code > s->final) s->final = c->code;
            s->alive--;
            eg_logline l;
            if (eg_log_begin(&l, s->stopping && !c->sig && c->code == 0 ? EG_INFO : EG_ERROR, "source_exited")) {
                eg_log_str(&l, "source", c->name);
                eg_log_int(&l, "pid", pid);
                eg_log_int(&l, "exit_code", c->code);
                if (c->sig) eg_log_int(&l, "signal", c->sig);
                eg_log_end(&l);
            }
            if (!s->stopping) {
                char why[160];
                snprintf(why, sizeof why, "source %s ended (exit %d%s)", c->name, c->code,
                         c->sig ? ", killed by a signal" : "");
                begin_stop(s, SIGTERM, why);
            }
        }
    }
    if (s->alive <= 0) event_base_loopbreak(s->base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
    (void)what;
    sup *s = arg;
    if (sig == SIGCHLD) reap(s);
    else if (sig == SIGHUP) {
        eg_log_msg(EG_INFO, "reload", "SIGHUP: every source reloads its policy");
        signal_all(s, SIGHUP);
    } else begin_stop(s, (int)sig, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

/* ---- the admin ------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
    struct evbuffer *b = arg;
    size_t len = size * n;
    if (evbuffer_get_length(b) + len > CHILD_BODY_MAX) return 0;
    evbuffer_add(b, p, len);
    return len;
}

/* Asks c's admin: method ("GET", "POST", "DELETE"), path (starting with
 * '/'), body (len bytes, for POST). The answer's body into out. Returns
 * the HTTP status, or -1 (unreachable, timed out, too large). */
static long ask(const sup *s, const child *c, const char *method, const char *path, const char *body, size_t len,
                long timeout_ms, struct evbuffer *out) {
    if (c->ended || !c->port) return -1;
    CURL *h = curl_easy_init();
    if (!h) return -1;
    char url[2300];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", c->port, path);
    struct curl_slist *hd = NULL;
    char auth[600];
    if (s->token[0] && strcmp(method, "GET") != 0) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->token);
        hd = curl_slist_append(hd, auth);
    }
    hd = curl_slist_append(hd, "Content-Type: application/x-www-form-urlencoded");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)len);
    }
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return code;
}

static void sup_metrics(void *arg, struct evbuffer *out) {
    sup *s = arg;
    struct evbuffer **got = eg_xcalloc((size_t)s->n, sizeof *got);
    const char **names = eg_xcalloc((size_t)s->n, sizeof *names), **bodies = eg_xcalloc((size_t)s->n, sizeof *bodies);
    size_t *lens = eg_xcalloc((size_t)s->n, sizeof *lens);
    int k = 0;
    static const char *const lbl[] = {"source"};
    eg_metric_header(out, "errgate_source_up",
                     "1 when the source's gateway process runs and answered this scrape, else 0.", "gauge");
    for (int i = 0; i < s->n; i++) {
        got[i] = evbuffer_new();
        int up = ask(s, &s->ch[i], "GET", "/metrics", NULL, 0, CHILD_SCRAPE_MS, got[i]) == 200;
        const char *v[] = {s->ch[i].name};
        eg_metric_sample(out, "errgate_source_up", 1, lbl, v, up);
        if (!up) continue;
        names[k] = s->ch[i].name;
        lens[k] = evbuffer_get_length(got[i]);
        bodies[k] = (const char *)evbuffer_pullup(got[i], -1);
        k++;
    }
    size_t dropped = 0;
    if (eg_prom_merge(names, bodies, lens, k, out, &dropped) != 0)
        eg_log_msg(EG_WARN, "metrics_merge", "the sources' metrics are over the merge's bounds: not all are shown");
    else if (dropped)
        eg_log_msg(EG_WARN, "metrics_merge", "%zu lines of the sources' metrics were not well-formed: dropped",
                   dropped);
    for (int i = 0; i < s->n; i++) evbuffer_free(got[i]);
    free(got);
    free(names);
    free(bodies);
    free(lens);
}

static int sup_ready(void *arg, char *why, size_t whylen) {
    sup *s = arg;
    for (int i = 0; i < s->n; i++) {
        struct evbuffer *b = evbuffer_new();
        long code = ask(s, &s->ch[i], "GET", "/readyz", NULL, 0, CHILD_SCRAPE_MS, b);
        evbuffer_free(b);
        if (code != 200) {
            snprintf(why, whylen, "source %s: %s", s->ch[i].name,
                     s->ch[i].ended ? "its process ended"
                     : code < 0     ? "its admin does not answer"
                                    : "not ready");
            return 0;
        }
    }
    return 1;
}

/* {"NAME": <the child's answer to GET path, or null>, ...} */
static void per_source_json(sup *s, const char *path, struct evbuffer *out) {
    evbuffer_add_printf(out, "{\"sources\":{");
    for (int i = 0; i < s->n; i++) {
        struct evbuffer *b = evbuffer_new();
        long code = ask(s, &s->ch[i], "GET", path, NULL, 0, CHILD_SCRAPE_MS, b);
        if (i) evbuffer_add(out, ",", 1);
        eg_json_str(out, s->ch[i].name);
        evbuffer_add(out, ":", 1);
        if (code == 200 && evbuffer_get_length(b)) evbuffer_add_buffer(out, b);
        else evbuffer_add_printf(out, "null");
        evbuffer_free(b);
    }
    evbuffer_add_printf(out, "}}");
}

static void sup_policy(void *arg, struct evbuffer *out) { per_source_json(arg, "/policy", out); }
static void sup_lanes(void *arg, struct evbuffer *out) { per_source_json(arg, "/lanes", out); }

static void sup_reload(void *arg, const char *trigger, eg_admin_reload_done done, void *req) {
    (void)trigger;
    sup *s = arg;
    char err[512] = "";
    for (int i = 0; i < s->n; i++) {
        struct evbuffer *b = evbuffer_new();
        long code = ask(s, &s->ch[i], "POST", "/reload", NULL, 0, CHILD_CONTROL_MS, b);
        if (code != 200 && !err[0]) {
            size_t n = evbuffer_get_length(b);
            snprintf(err, sizeof err, "source %s: %s%.*s", s->ch[i].name, code < 0 ? "its admin does not answer" : "",
                     code < 0 ? 0 : (int)(n > 300 ? 300 : n), (const char *)evbuffer_pullup(b, -1));
        }
        evbuffer_free(b);
    }
    done(req, err[0] ? -1 : 0, err[0] ? err : NULL);
}

/* The child named by the path's segment after /sources/ (its end in *rest). */
static child *child_of(sup *s, const char *p, const char **rest) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    for (int i = 0; i < s->n; i++)
        if (strlen(s->ch[i].name) == n && memcmp(s->ch[i].name, p, n) == 0) {
            *rest = slash ? slash : "/";
            return &s->ch[i];
        }
    return NULL;
}

static int sup_control(void *arg, int method, const char *path, const char *body, size_t len, struct evbuffer *out) {
    sup *s = arg;
    static const char *const own[] = {"/metrics", "/healthz", "/readyz", "/policy", "/lanes", NULL};
    for (int i = 0; own[i]; i++)
        if (strcmp(path, own[i]) == 0) return 0;
    if (!out) return 1;
    if (strcmp(path, "/sources") == 0 || strcmp(path, "/sources/") == 0) {
        if (method != EG_ADMIN_GET && method != EG_ADMIN_HEAD)
            return evbuffer_add_printf(out, "{\"error\":\"use GET\"}"), 405;
        evbuffer_add_printf(out, "{\"sources\":[");
        for (int i = 0; i < s->n; i++) {
            const child *c = &s->ch[i];
            evbuffer_add_printf(out, "%s{\"name\":", i ? "," : "");
            eg_json_str(out, c->name);
            evbuffer_add_printf(out, ",\"pid\":%ld,\"state\":\"%s\"", (long)c->pid, c->ended ? "ended" : "running");
            if (c->ended) evbuffer_add_printf(out, ",\"exit_code\":%d", c->code);
            if (c->port) evbuffer_add_printf(out, ",\"admin\":\"127.0.0.1:%d\"", c->port);
            evbuffer_add(out, "}", 1);
        }
        evbuffer_add_printf(out, "]}");
        return 200;
    }
    const char *rest = NULL;
    child *c = strncmp(path, "/sources/", 9) == 0 ? child_of(s, path + 9, &rest) : NULL;
    if (!c) {
        evbuffer_add_printf(out, "{\"error\":");
        eg_json_str(out, strncmp(path, "/sources/", 9) == 0
                             ? "no such source (GET /sources lists them)"
                             : "this gateway has several sources: ask /sources/NAME/PATH for a source's controls "
                               "(GET /sources lists them)");
        evbuffer_add(out, "}", 1);
        return 404;
    }
    const char *m = method == EG_ADMIN_POST                             ? "POST"
                    : method == EG_ADMIN_DELETE                         ? "DELETE"
                    : method == EG_ADMIN_GET || method == EG_ADMIN_HEAD ? "GET"
                                                                        : NULL;
    if (!m) return evbuffer_add_printf(out, "{\"error\":\"method not supported\"}"), 405;
    struct evbuffer *b = evbuffer_new();
    long code = ask(s, c, m, rest, body, len, CHILD_CONTROL_MS, b);
    if (code < 0) {
        evbuffer_add_printf(out, "{\"error\":");
        eg_json_str(out, c->ended ? "the source's process ended" : "the source's admin does not answer");
        evbuffer_add(out, "}", 1);
        evbuffer_free(b);
        return 503;
    }
    if (evbuffer_get_length(b)) evbuffer_add_buffer(out, b);
    else evbuffer_add_printf(out, "{}");
    evbuffer_free(b);
    return code == 200 || code == 400 || code == 404 || code == 405 || code == 409 || code == 503 ? (int)code : 503;
}

/* ---- running --------------------------------------------------------- */

int eg_supervise(const char *self, const char *cfgpath, const eg_config *shared, char **names, int n) {
    sup s = {.n = n, .shared = shared};
    s.ch = eg_xcalloc((size_t)n, sizeof *s.ch);
    for (int i = 0; i < n; i++) s.ch[i].name = names[i];
    s.base = event_base_new();
    if (!s.base) {
        fprintf(stderr, "errgate: cannot create the event loop\n");
        free(s.ch);
        return EG_EXIT_FAIL;
    }
    int rc = EG_EXIT_FAIL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
    for (int i = 0; i < 4; i++) {
        s.sig_ev[i] = evsignal_new(s.base, sigs[i], on_signal, &s);
        event_add(s.sig_ev[i], NULL);
    }
    s.kill_ev = evtimer_new(s.base, on_kill_deadline, &s);
    if (shared->spill_dir) { /* each source's journal is DIR/NAME: DIR must be there */
        char *dir = eg_xstrdup(shared->spill_dir);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            eg_log_msg(EG_WARN, "spill", "cannot create %s: %s", dir, strerror(errno));
        free(dir);
    }
    if (shared->admin_enabled) {
        static const eg_admin_ops ops = {sup_metrics, sup_ready, sup_policy, sup_lanes, sup_reload, sup_control};
        char err[512];
        s.admin = eg_admin_new(s.base, shared->admin_listen, shared->admin_token_file, shared->admin_max_connections,
                               &ops, &s, err, sizeof err);
        if (!s.admin) {
            fprintf(stderr, "errgate: %s\n", err);
            rc = EG_EXIT_USAGE;
            goto out;
        }
        eg_admin_token(s.admin, s.token, sizeof s.token); /* as the admin read it: the children read the same file */
    }
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "start")) {
        eg_log_str(&l, "group", shared->group);
        eg_log_int(&l, "sources", n);
        eg_log_end(&l);
    }
    /* a stop asked for while the children start waits until they are all
     * there to be told (the signals stay blocked until then) */
    for (int i = 0; i < n; i++)
        if (spawn(&s, &s.ch[i], self, cfgpath) != 0) {
            s.final = EG_EXIT_FAIL;
            begin_stop(&s, SIGTERM, "a source could not start");
            break;
        }
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGHUP);
    pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
    if (s.alive > 0) event_base_dispatch(s.base);
    rc = s.final;
    if (eg_log_begin(&l, rc ? EG_ERROR : EG_INFO, "summary")) {
        eg_log_int(&l, "sources", n);
        eg_log_int(&l, "exit_code", rc);
        eg_log_end(&l);
    }
out:
    signal_all(&s, SIGKILL); /* none is left, unless the loop could not run */
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    eg_admin_free(s.admin);
    for (int i = 0; i < 4; i++)
        if (s.sig_ev[i]) event_free(s.sig_ev[i]);
    if (s.kill_ev) event_free(s.kill_ev);
    event_base_free(s.base);
    curl_global_cleanup();
    explicit_bzero(s.token, sizeof s.token);
    free(s.ch);
    return rc;
}
