/* watchdog.c — a time limit on the gateway's teardown.
 *
 * When `errgate run` leaves its loop, every offset it will ever commit is
 * committed and every record without a durable outcome is uncommitted, so
 * what remains (destroying the Kafka handles, the target, the spill drainer)
 * can no longer lose anything: a process that dies here re-delivers at most
 * what a kill -9 would. librdkafka's rd_kafka_destroy can nevertheless block
 * for ever: its broker threads wait for references the client keeps to a
 * partition whose topic vanished from metadata (seen with the embedded
 * broker's `topic-fault ... UNKNOWN_TOPIC_OR_PART`). A gateway that does not
 * exit after SIGTERM is worse than one that exits a little early: service
 * managers kill it (with a signal, not its exit status), rolling restarts
 * stall. So the teardown runs under a watchdog: a thread that, unless
 * disarmed within the limit, logs `teardown_stuck` and ends the process with
 * _exit and the exit status the gateway had chosen.
 *
 * Design. One watchdog per process (the teardown happens once), kept in
 * static state guarded by a mutex; the thread waits on a condition variable
 * with a CLOCK_MONOTONIC deadline, so a wall-clock step neither fires nor
 * delays it. _exit skips atexit handlers and stdio flushing on purpose: the
 * thread that is stuck may hold their locks. The log line is written
 * directly (eg_log writes at once on any thread but the loop's). */
#include "watchdog.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t wd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv;
static pthread_t wd_thread;
static int wd_armed;     /* a thread runs (between arm and disarm) */
static int wd_cancelled; /* disarm asked the thread to return */
static int wd_ms, wd_code;
static char wd_what[128];

/* The thread: waits until the deadline or a disarm, whichever comes first. */
static void *watch(void *arg) {
    (void)arg;
    struct timespec until = eg_mono_deadline(wd_ms);
    pthread_mutex_lock(&wd_mu);
    int rc = 0;
    while (!wd_cancelled && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&wd_cv, &wd_mu, &until);
    int fire = !wd_cancelled;
    pthread_mutex_unlock(&wd_mu);
    if (!fire) return NULL;
    eg_log_msg(EG_ERROR, "teardown_stuck", "%s did not finish within %d ms; exiting with status %d", wd_what, wd_ms,
               wd_code);
    _exit(wd_code);
}

int eg_watchdog_arm(int ms, int exit_code, const char *what) {
    pthread_mutex_lock(&wd_mu);
    if (wd_armed) {
        pthread_mutex_unlock(&wd_mu);
        return -1;
    }
    eg_cond_init_monotonic(&wd_cv);
    wd_ms = ms > 0 ? ms : 1;
    wd_code = exit_code;
    wd_cancelled = 0;
    snprintf(wd_what, sizeof wd_what, "%s", what ? what : "teardown");
    int rc = pthread_create(&wd_thread, NULL, watch, NULL);
    if (rc == 0) wd_armed = 1;
    else pthread_cond_destroy(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    return rc == 0 ? 0 : -1;
}

void eg_watchdog_disarm(void) {
    pthread_mutex_lock(&wd_mu);
    if (!wd_armed) {
        pthread_mutex_unlock(&wd_mu);
        return;
    }
    wd_cancelled = 1;
    pthread_cond_signal(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
    pthread_join(wd_thread, NULL);
    pthread_mutex_lock(&wd_mu);
    wd_armed = 0;
    pthread_cond_destroy(&wd_cv);
    pthread_mutex_unlock(&wd_mu);
}
