/* gw_fetch_wakeup.c — librdkafka's fetcher looks at a drained prefetch queue
 * within source.fetch_wakeup_ms, not within a second.
 *
 * librdkafka 2.0.2 stops fetching a partition whose queue holds
 * queued.min.messages (or queued.max.messages.kbytes). Its broker thread
 * then sleeps until a socket, an operation or its one-second tick wakes it
 * (rdkafka_broker.c: rd_kafka_broker_consumer_serve, rd_kafka_max_block_ms),
 * and only then looks at its partitions' queues again. While a fetch is
 * outstanding its answer is the wake-up; once every partition of a broker is
 * full, none is, and a queue the gateway drains meanwhile waits up to a
 * second. So the prefetch had to hold a second of consumption: at the happy
 * path's rate, the whole backlog of a benchmark (librdkafka 2.2.0 added
 * fetch.queue.backoff.ms for this; 2.0.2 has no setting, and no public call
 * that wakes a broker thread alone).
 *
 * Any request to a broker wakes its thread. So while the gateway takes
 * records, a thread of this file asks every source.fetch_wakeup_ms for the
 * end offsets of the assignment (rd_kafka_offsets_for_times with
 * OFFSET_END: one small ListOffsets to each leader; the answers are not
 * used), and each broker thread that sends one also decides its partitions'
 * fetches. When no record was taken since the last ask (idle, paused, at
 * the in-flight caps, or only consumer errors arriving) it asks nothing. An
 * ask that fails waits a second before the next: a refusal (the broker
 * answered, so it woke) or a timeout, which also comes of an ask queued
 * behind a long-polling fetch (a broker answers a connection's requests in
 * order), where the fetch in flight is the wake-up already. Measured (bench/dlq_cost.sh, 200,000
 * records over 16 partitions, medians of 3): the happy path 606k -> 820k
 * records/s with the default prefetch, 192k -> 300k with queued.min.messages
 * 3,000 and max.partition.fetch.bytes 128 KiB; the dead-letter path with
 * that bounded prefetch 85k -> 118k records/s and 79 -> 66 MiB peak RSS; CPU
 * per record unchanged (bench/README.md, fourth round).
 *
 * Locality: eg_gw_fetchwake_new, _taken, _sync and _free run on the loop
 * thread; the asking thread touches only this file's struct (its counters
 * are atomics, its stop flag is under its mutex) and the consumer handle,
 * whose calls are thread-safe. _free joins the thread: the consumer must
 * outlive it, and it must be called before the consumer is closed. */
#include "gw.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#define FETCHWAKE_TIMEOUT_MS 250  /* one ask waits at most this long for its answers */
#define FETCHWAKE_BACKOFF_MS 1000 /* after a failed ask */

struct eg_gw_fetchwake {
    rd_kafka_t *rk; /* borrowed: the consumer */
    int interval_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;                 /* under mu */
    _Atomic uint64_t taken;   /* records taken by the loop, ever */
    _Atomic uint64_t wakeups; /* asks made */
    uint64_t *counter;        /* errgate_fetch_wakeups_total (loop thread) */
};

/* Waits ms or until stopped. Returns 1 when stopped. */
static int wait_tick(eg_gw_fetchwake *w, int ms) {
    struct timespec until = eg_mono_deadline(ms);
    pthread_mutex_lock(&w->mu);
    while (!w->stop && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT) {}
    int stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* The asking thread: every tick with records taken since the last one,
 * one ListOffsets to each leader of the assignment. An ask that fails (a
 * leader down or unknown: its request waits in librdkafka until
 * socket.timeout.ms, an unknown leader costs a metadata request) waits
 * FETCHWAKE_BACKOFF_MS before the next, so a broker outage queues about one
 * request a second, not fifty. */
static void *fetchwake_main(void *arg) {
    eg_gw_fetchwake *w = arg;
    uint64_t seen = 0;
    int wait_ms = w->interval_ms;
    while (!wait_tick(w, wait_ms)) {
        wait_ms = w->interval_ms;
        uint64_t taken = atomic_load_explicit(&w->taken, memory_order_relaxed);
        if (taken == seen) continue;
        seen = taken;
        rd_kafka_topic_partition_list_t *parts = NULL;
        if (rd_kafka_assignment(w->rk, &parts) != RD_KAFKA_RESP_ERR_NO_ERROR || !parts) continue;
        if (parts->cnt > 0) {
            for (int i = 0; i < parts->cnt; i++) parts->elems[i].offset = RD_KAFKA_OFFSET_END;
            /* the ask is the point, not its answers */
            if (rd_kafka_offsets_for_times(w->rk, parts, FETCHWAKE_TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR)
                wait_ms = FETCHWAKE_BACKOFF_MS;
            atomic_fetch_add_explicit(&w->wakeups, 1, memory_order_relaxed);
        }
        rd_kafka_topic_partition_list_destroy(parts);
    }
    return NULL;
}

eg_gw_fetchwake *eg_gw_fetchwake_new(rd_kafka_t *rk, int interval_ms, uint64_t *counter) {
    if (interval_ms <= 0) return NULL;
    eg_gw_fetchwake *w = eg_xcalloc(1, sizeof *w);
    w->rk = rk;
    w->interval_ms = interval_ms;
    w->counter = counter;
    eg_cond_init_monotonic(&w->cv);
    pthread_mutex_init(&w->mu, NULL);
    if (pthread_create(&w->thread, NULL, fetchwake_main, w) != 0) {
        eg_log_msg(EG_WARN, "fetch_wakeup_off", "cannot start its thread: prefetch queues refill within 1 s");
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return NULL;
    }
    return w;
}

void eg_gw_fetchwake_taken(eg_gw_fetchwake *w, int n) {
    if (w && n > 0) atomic_fetch_add_explicit(&w->taken, (uint64_t)n, memory_order_relaxed);
}

void eg_gw_fetchwake_sync(eg_gw_fetchwake *w) {
    if (w && w->counter) *w->counter = atomic_load_explicit(&w->wakeups, memory_order_relaxed);
}

void eg_gw_fetchwake_free(eg_gw_fetchwake *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    eg_gw_fetchwake_sync(w);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
