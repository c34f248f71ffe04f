/* slow_pipe.c — an LD_PRELOAD shim for spec/e2e/test_lane_early_report.sh:
 * pipe2 sleeps 500 ms before it makes the pipe. The gateway makes the pipe
 * of its lane producer's queue right after rd_kafka_new, so a report that
 * librdkafka's threads queue in the meantime (a broker refusing the
 * connection) is surely queued before the pipe is wired to the queue. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

int pipe2(int fds[2], int flags) {
    static int (*real)(int[2], int);
    if (!real) real = (int (*)(int[2], int))dlsym(RTLD_NEXT, "pipe2");
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return real(fds, flags);
}
