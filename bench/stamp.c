/* stamp.c — timestamps a stream of records flowing through a pipe.
 *
 * The kcat peers print one line per record; `stamp N` sits in their pipe and
 * notes, in CLOCK_REALTIME nanoseconds (comparable with `date +%s%N` and the
 * Python peer), when the first byte arrived and when the N-th newline did.
 * That is the peers' "first record to last record" window, which excludes the
 * consumer-group join as errgate's summary does. With -p it also passes the
 * bytes through to stdout and closes stdout right after the N-th line, so a
 * downstream `kcat -P` sees end-of-input and flushes; without -p the bytes
 * are dropped. It exits after the N-th line (or at end of input) and prints
 *   stamp lines=L first_ns=T0 nth_ns=T1
 * on stderr. Reads in 64 KiB blocks: the cost per record is a memchr. kcat's
 * own stdout buffering means the first stamp can be late by up to one buffer
 * (a few thousand short lines), which is noted in bench/README.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int write_all(const char *p, size_t n) {
    while (n) {
        ssize_t w = write(1, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv) {
    int pass = 0, ai = 1;
    if (ai < argc && strcmp(argv[ai], "-p") == 0) {
        pass = 1;
        ai++;
    }
    if (ai >= argc) {
        fprintf(stderr, "usage: stamp [-p] N\n");
        return 2;
    }
    long long want = atoll(argv[ai]), lines = 0, first = 0, nth = 0;
    static char buf[65536];
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (!first) first = now_ns();
        size_t upto = (size_t)n;
        for (char *p = buf, *end = buf + n; p < end; p++) {
            p = memchr(p, '\n', (size_t)(end - p));
            if (!p) break;
            if (++lines == want) {
                nth = now_ns();
                upto = (size_t)(p + 1 - buf);
                break;
            }
        }
        if (pass && write_all(buf, upto) != 0) break;
        if (nth) break;
    }
    if (pass) close(1);
    fprintf(stderr, "stamp lines=%lld first_ns=%lld nth_ns=%lld\n", lines, first, nth);
    return nth ? 0 : 1;
}
