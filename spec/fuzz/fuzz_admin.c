/* fuzz_admin.c — the admin endpoint (admin.c): its request parser
 * (eg_admin_parse) called directly on the input and on a few of its
 * prefixes (as bytes arrive), then the whole server: request line, headers,
 * body, routing and the bearer-token check. One server on
 * 127.0.0.1 (a free port) with a token file and stub operations lives for
 * the process; each input is written as it is to a fresh TCP connection,
 * the write side is shut, and the loop runs until the server has closed the
 * connection (at most 5 s: a connection the server keeps is a finding).
 * Contract checked: POST /reload runs only when the request carried the
 * token, and whatever comes back is an HTTP response. /overrides bodies
 * reach the override form parser (override.c). */
#include "admin.h"
#include "fuzz.h"
#include "log.h"
#include "override.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TOKEN "fz-Token-7f3a9c"

static struct event_base *g_base;
static eg_admin *g_admin;
static struct sockaddr_in g_addr;
static int g_reloads;

static void op_metrics(void *arg, struct evbuffer *out) { evbuffer_add_printf(out, "errgate_up 1\n"); }
static int op_ready(void *arg, char *why, size_t whylen) {
    snprintf(why, whylen, "lane \"x\"\n failing");
    return g_reloads & 1;
}
static void op_json(void *arg, struct evbuffer *out) { evbuffer_add_printf(out, "{}"); }
/* A reload in flight: its answer comes on the next loop pass, as the
 * gateway's does after its build (admin.h: done is called later, never
 * from inside reload). */
typedef struct {
    eg_admin_reload_done done;
    void *req;
    int rc;
} fake_reload;

static void reload_finish(evutil_socket_t fd, short what, void *arg) {
    fake_reload *fr = arg;
    fr->done(fr->req, fr->rc, fr->rc ? "bad \"policy\"\x01" : "");
    free(fr);
}

static void op_reload(void *arg, const char *trigger, eg_admin_reload_done done, void *req) {
    fake_reload *fr = malloc(sizeof *fr);
    FZ_CHECK(fr != NULL, "out of memory");
    *fr = (fake_reload){done, req, ++g_reloads & 1 ? 0 : -1};
    struct timeval now = {0, 0};
    FZ_CHECK(event_base_once(g_base, -1, EV_TIMEOUT, reload_finish, fr, &now) == 0, "event_base_once");
}

/* The listening IPv4 socket among the process's fds, other than those in
 * before[0..nbefore). */
static int listening_port(const int *before, int nbefore) {
    for (int fd = 3; fd < 1024; fd++) {
        int on = 0, known = 0;
        socklen_t l = sizeof on;
        for (int i = 0; i < nbefore; i++) known |= before[i] == fd;
        struct sockaddr_in sin;
        socklen_t sl = sizeof sin;
        if (!known && getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &l) == 0 && on &&
            getsockname(fd, (struct sockaddr *)&sin, &sl) == 0 && sin.sin_family == AF_INET)
            return ntohs(sin.sin_port);
    }
    return -1;
}

/* The controls: /overrides bodies go through the override form parser. */
static int op_control(void *arg, int method, const char *path, const char *body, size_t len, struct evbuffer *out) {
    if (strncmp(path, "/overrides", 10) != 0) return 0;
    if (!out) return 1;
    eg_override o;
    char err[320];
    if (eg_override_parse(body, len, 0, EG_OVERRIDE_DEFAULT_MAX_TTL_MS, &o, err, sizeof err) != 0) {
        evbuffer_add_printf(out, "{}");
        return 400;
    }
    eg_override_json(&o, out);
    return 200;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    signal(SIGPIPE, SIG_IGN);
    eg_log_setup(EG_ERROR, 1);
    char tok[400];
    snprintf(tok, sizeof tok, "%s/token", fz_tmpdir());
    FILE *f = fopen(tok, "w");
    FZ_CHECK(f != NULL, "cannot write %s", tok);
    fputs(TOKEN "\n", f);
    fclose(f);
    int before[1024], nbefore = 0;
    for (int fd = 3; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1) before[nbefore++] = fd;
    g_base = event_base_new();
    static const eg_admin_ops ops = {op_metrics, op_ready, op_json, op_json, op_reload, op_control};
    char err[512];
    g_admin = eg_admin_new(g_base, "127.0.0.1:0", tok, 64, &ops, NULL, err, sizeof err);
    FZ_CHECK(g_admin != NULL, "%s", err);
    int port = listening_port(before, nbefore);
    FZ_CHECK(port > 0, "the admin's listening socket was not found");
    g_addr.sin_family = AF_INET;
    g_addr.sin_port = htons((uint16_t)port);
    g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* eg_admin_parse's contract on data[0..n). */
static void check_parse(const uint8_t *data, size_t n) {
    eg_admin_req rq;
    memset(&rq, 'X', sizeof rq);
    int rc = eg_admin_parse((const char *)data, n, &rq);
    FZ_CHECK(rc == 1 || rc == 0 || rc == -400 || rc == -411 || rc == -413 || rc == -431 || rc == -505,
             "eg_admin_parse returned %d", rc);
    if (rc != 1) return;
    FZ_CHECK(rq.header_len <= n && rq.header_len <= EG_ADMIN_MAX_REQUEST, "header_len %zu of %zu", rq.header_len, n);
    FZ_CHECK(rq.content_length <= EG_ADMIN_MAX_REQUEST, "content_length %zu", rq.content_length);
    FZ_CHECK(memchr(rq.target, 0, sizeof rq.target) && memchr(rq.path, 0, sizeof rq.path), "target/path unterminated");
    FZ_CHECK(rq.path[0] != '\0', "empty path"); /* a relative target ("x/y") keeps its form: it routes to 404 */
    FZ_CHECK(rq.method >= EG_ADMIN_GET && rq.method <= EG_ADMIN_OTHER, "method %d", (int)rq.method);
    if (rq.authorization)
        FZ_CHECK((const uint8_t *)rq.authorization >= data &&
                     (const uint8_t *)rq.authorization + rq.authorization_len <= data + rq.header_len,
                 "authorization outside the head");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_admin) LLVMFuzzerInitialize(NULL, NULL);
    /* exact-size copies, so that a read past the end is caught */
    for (size_t n = size; n > 0; n = n > 16 ? n / 2 : 0) {
        uint8_t *cp = malloc(n);
        memcpy(cp, data, n);
        check_parse(cp, n);
        free(cp);
    }
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FZ_CHECK(c >= 0, "socket: %s", strerror(errno));
    fcntl(c, F_SETFL, O_NONBLOCK); /* libFuzzer's timer signal must not interrupt a blocking connect */
    if (connect(c, (struct sockaddr *)&g_addr, sizeof g_addr) != 0) {
        FZ_CHECK(errno == EINPROGRESS || errno == EINTR, "connect: %s", strerror(errno));
        struct pollfd pfd = {.fd = c, .events = POLLOUT};
        int k;
        while ((k = poll(&pfd, 1, 5000)) < 0 && errno == EINTR) {}
        int so = 0;
        socklen_t sl = sizeof so;
        FZ_CHECK(k == 1 && getsockopt(c, SOL_SOCKET, SO_ERROR, &so, &sl) == 0 && so == 0, "connect: %s", strerror(so));
    }
    int reloads = g_reloads;
    size_t sent = 0, got = 0;
    char head[16] = "";
    int shut = 0, closed = 0;
    double deadline = now_s() + 5;
    while (!closed) {
        FZ_CHECK(now_s() < deadline, "the server kept the connection 5 s after the request ended (%zu bytes)", size);
        if (sent < size) {
            ssize_t k = send(c, data + sent, size - sent, MSG_NOSIGNAL);
            if (k > 0) sent += (size_t)k;
            else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) sent = size; /* reset: the server gave up */
        } else if (!shut) {
            shutdown(c, SHUT_WR);
            shut = 1;
        }
        event_base_loop(g_base, EVLOOP_NONBLOCK);
        char buf[4096];
        ssize_t k = recv(c, buf, sizeof buf, 0);
        if (k > 0) {
            if (got < sizeof head - 1) {
                size_t take = (size_t)k < sizeof head - 1 - got ? (size_t)k : sizeof head - 1 - got;
                memcpy(head + got, buf, take);
            }
            got += (size_t)k;
        } else if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            closed = 1;
        }
    }
    close(c);
    event_base_loop(g_base, EVLOOP_NONBLOCK);
    /* evhttp answers in the request's version ("GET / HTTP/0.1" gets HTTP/0.1) */
    if (got) FZ_CHECK(!strncmp(head, "HTTP/", got < 5 ? got : 5), "response starts '%.15s'", head);
    if (g_reloads != reloads) FZ_CHECK(memmem(data, size, TOKEN, strlen(TOKEN)) != NULL, "a reload without the token");
    return 0;
}
