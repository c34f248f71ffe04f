/* log_sample.h — decision-log sampling under a flood.
 *
 * When every record fails (a downstream outage), one decision line per
 * record is as many log lines per second as records. The sampler keeps the
 * first `per_second` decision lines of each (topic, class, action) key per
 * wall-clock second in full and folds the rest into counts; once that
 * second is over, one `decision_summary` line names, for every key that
 * folded lines, how many were written in full and how many were folded.
 * Metrics are not sampled (they are counted before the log). Full lines
 * plus folded counts add up exactly to the decisions taken.
 *
 * A sampler belongs to one thread (the gateway's loop); it holds no lock.
 * Memory is fixed: at most EG_SAMPLE_KEYS keys per second; decisions of
 * further keys share one overflow key named "*" (topic, class, action). */
#ifndef EG_LOG_SAMPLE_H
#define EG_LOG_SAMPLE_H

#include "log.h"

#include <stdint.h>

#define EG_SAMPLE_KEYS 128  /* distinct keys tracked per second */
#define EG_SAMPLE_TOPIC 250 /* bytes of a topic name kept (Kafka's limit is 249) */
#define EG_SAMPLE_CLASS 64  /* bytes of a class name kept (the decision's own limit) */
#define EG_SAMPLE_ACTION 16

typedef struct eg_sample_key {
    char topic[EG_SAMPLE_TOPIC];
    char klass[EG_SAMPLE_CLASS];
    char action[EG_SAMPLE_ACTION];
    int64_t logged; /* lines written in full this second */
    int64_t folded; /* lines folded into the summary this second */
    eg_level level; /* the highest level of a folded line */
} eg_sample_key;

typedef struct eg_sampler {
    int per_second; /* 0: every line is written (log.decisions = "all") */
    int64_t sec;    /* the wall-clock second the keys count, or -1 */
    int nkeys;
    eg_sample_key keys[EG_SAMPLE_KEYS + 1]; /* the last one is the overflow key "*" */
} eg_sampler;

/* Sets s up empty with per_second lines kept per key (0: all). */
void eg_sampler_init(eg_sampler *s, int per_second);

/* Whether a decision line of (topic, klass, action) at `level` is to be
 * written in full now (1) or folded (0). now_ms is wall-clock time; a new
 * second first writes the summary of the one before. NULL strings count as
 * "". With per_second 0 it always returns 1 and counts nothing. */
int eg_sampler_admit(eg_sampler *s, const char *topic, const char *klass, const char *action, eg_level level,
                     int64_t now_ms);

/* Writes the pending summary if its second is over at now_ms, or at once
 * when now_ms is negative (at exit). Returns the lines folded that it
 * reported. Called once a second by the loop, and at the stop. */
int64_t eg_sampler_flush(eg_sampler *s, int64_t now_ms);

#endif
