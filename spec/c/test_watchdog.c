/* test_watchdog.c — the teardown's time limit: an armed watchdog that is
 * not disarmed ends the process with the chosen status and a
 * teardown_stuck line; a disarmed one never fires; a second arm is refused
 * while one is armed. Each case runs in a child process (the watchdog ends
 * its process), whose stderr the parent reads. */
#include "watchdog.h"
#include "tap.h"

#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs body in a child with stderr into a pipe; returns the wait status,
 * the child's stderr in out, and the wall time it took in *ms. */
static int run_child(void (*body)(void), char *out, size_t outlen, long *ms) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        body();
        _exit(0);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < outlen && (r = read(fd[0], out + n, outlen - 1 - n)) > 0) n += (size_t)r;
    out[n] = '\0';
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    return st;
}

/* A teardown stuck for 10 s under a 200 ms watchdog. */
static void stuck(void) {
    if (eg_watchdog_arm(200, 7, "the test teardown") != 0) _exit(90);
    sleep(10);
    _exit(91);
}

/* A teardown that finishes: disarmed at once, then past the deadline. */
static void finishes(void) {
    if (eg_watchdog_arm(200, 7, "the test teardown") != 0) _exit(90);
    eg_watchdog_disarm();
    usleep(600 * 1000);
    _exit(0);
}

/* Arming twice: the second is refused, the first still fires. */
static void twice(void) {
    eg_watchdog_disarm(); /* nothing armed: a no-op */
    if (eg_watchdog_arm(200, 5, "first") != 0) _exit(90);
    if (eg_watchdog_arm(200, 6, "second") != -1) _exit(92);
    sleep(10);
    _exit(91);
}

int main(void) {
    char out[4096];
    long ms = 0;
    int st = run_child(stuck, out, sizeof out, &ms);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "a stuck teardown ends with the chosen status (%d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(ms < 5000, "it ends near the limit, not when the stuck call returns (%ld ms)", ms);
    CHECK(strstr(out, "\"event\":\"teardown_stuck\"") && strstr(out, "the test teardown did not finish within 200 ms"),
          "it logs teardown_stuck naming what was stuck: %s", out);
    st = run_child(finishes, out, sizeof out, &ms);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a disarmed watchdog never fires (status %d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(!strstr(out, "teardown_stuck"), "and logs nothing: %s", out);
    st = run_child(twice, out, sizeof out, &ms);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 5, "a second arm is refused and the first one fires (status %d)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return TAP_DONE();
}
