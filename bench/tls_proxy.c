/* tls_proxy.c — the TLS server in front of the handler for the HTTPS rows
 * of bench/run.sh: terminates TLS and pipes the bytes to a plain backend.
 *
 * Usage: tls_proxy CERT KEY BACKEND_PORT. Listens on 127.0.0.1 (a free
 * port, printed as `listening=127.0.0.1:PORT`); every accepted connection
 * gets its own connection to 127.0.0.1:BACKEND_PORT, and bytes flow both
 * ways unchanged (HTTP/1.1 keep-alive passes through). One thread, one
 * libevent loop, OpenSSL through bufferevent_openssl: the same cost for
 * errgate and for wrk, which both go through it. When either side closes or
 * fails, both are freed. Runs until killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>

typedef struct pair {
    struct bufferevent *tls, *plain; /* owned; freed together */
} pair;

static SSL_CTX *ctx;
static struct sockaddr_in backend;

static void pair_free(pair *p) {
    bufferevent_free(p->tls);
    bufferevent_free(p->plain);
    free(p);
}

/* Moves what one side read to the other side. */
static void on_read(struct bufferevent *bev, void *arg) {
    pair *p = arg;
    struct bufferevent *to = bev == p->tls ? p->plain : p->tls;
    bufferevent_write_buffer(to, bufferevent_get_input(bev));
}

static void on_event(struct bufferevent *bev, short what, void *arg) {
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) pair_free(arg);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len, void *arg) {
    struct event_base *base = arg;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL *ssl = SSL_new(ctx);
    pair *p = calloc(1, sizeof *p);
    if (!ssl || !p) {
        if (ssl) SSL_free(ssl);
        free(p);
        evutil_closesocket(fd);
        return;
    }
    p->tls = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    p->plain = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(p->tls, on_read, NULL, on_event, p);
    bufferevent_setcb(p->plain, on_read, NULL, on_event, p);
    if (bufferevent_socket_connect(p->plain, (struct sockaddr *)&backend, sizeof backend) != 0) {
        pair_free(p);
        return;
    }
    bufferevent_enable(p->tls, EV_READ | EV_WRITE);
    bufferevent_enable(p->plain, EV_READ | EV_WRITE);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: tls_proxy CERT KEY BACKEND_PORT\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, argv[1]) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, argv[2], SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    memset(&backend, 0, sizeof backend);
    backend.sin_family = AF_INET;
    backend.sin_port = htons((unsigned short)atoi(argv[3]));
    backend.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct event_base *base = event_base_new();
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct evconnlistener *l = evconnlistener_new_bind(base, on_accept, base, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                                       128, (struct sockaddr *)&sin, sizeof sin);
    if (!l) {
        perror("tls_proxy: listen");
        return 1;
    }
    socklen_t sl = sizeof sin;
    getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&sin, &sl);
    printf("listening=127.0.0.1:%d\n", ntohs(sin.sin_port));
    fflush(stdout);
    event_base_dispatch(base);
    return 0;
}
