/* dlq_guard.h — the dead-letter flood guard's arithmetic: per source topic,
 * the rate of dead-letter decisions (DLQ and quarantine) over a sliding
 * window, tripping above a limit and re-arming after a cooldown.
 *
 * Pure logic: no Kafka, no loop, no clock of its own (every call is given
 * now_ms), so it is unit-tested alone (spec/c/test_dlq_guard.c). The gateway
 * (gw_incident.c) asks it about every dead-letter decision and acts on the
 * verdict.
 *
 * Semantics. Every dead-letter decision the policy takes is counted in its
 * topic's window, whether it passes or is held (a held record decided again
 * is demand again: a storm that goes on keeps the guard tripped). A decision
 * that brings the window's count above max_per_second × window_s trips the
 * guard and is itself refused; while tripped, every one is refused. The
 * guard re-arms at the first look (a decision, a readiness or metrics read)
 * after cooldown_s in the tripped state when the window's count is back at
 * or under the limit; eg_dlq_guard_reset re-arms every topic at once and
 * empties the windows. Windows are one-second buckets.
 *
 * Ownership: the guard owns its topic entries and their names. Not thread
 * safe: one owner thread. */
#ifndef EG_DLQ_GUARD_H
#define EG_DLQ_GUARD_H

#include <stddef.h>
#include <stdint.h>

typedef struct eg_dlq_guard_cfg {
    double max_per_second; /* > 0 */
    int window_s;          /* 1..3600 */
    int cooldown_s;        /* >= 0 */
} eg_dlq_guard_cfg;

/* A change of a topic's state: tripped (1) or re-armed (0); reset says
 * whether an operator's reset re-armed it. count is the window's count. */
typedef void (*eg_dlq_guard_event)(void *arg, const char *topic, int tripped, int reset, uint64_t count);

typedef struct eg_guard_topic eg_guard_topic;

typedef struct eg_dlq_guard {
    eg_dlq_guard_cfg cfg;
    double limit; /* max_per_second × window_s: the count the window may hold */
    eg_guard_topic *topics;
    int ntopics;
    eg_dlq_guard_event on_event; /* may be NULL */
    void *arg;
} eg_dlq_guard;

typedef enum {
    EG_GUARD_PASS = 0, /* dead-letter it */
    EG_GUARD_TRIP,     /* refused, and this decision tripped the guard */
    EG_GUARD_REFUSED   /* refused: the guard was already tripped */
} eg_guard_verdict;

/* Sets the guard up with cfg (copied); on_event (may be NULL) is told of
 * every trip and re-arm. Returns 0, or -1 with err for a cfg out of range. */
int eg_dlq_guard_init(eg_dlq_guard *g, const eg_dlq_guard_cfg *cfg, eg_dlq_guard_event on_event, void *arg, char *err,
                      size_t errlen);
void eg_dlq_guard_free(eg_dlq_guard *g);

/* Makes sure topic has an entry (its metric series exists from the start). */
void eg_dlq_guard_watch(eg_dlq_guard *g, const char *topic);

/* Counts one dead-letter decision of topic at now_ms and says whether it
 * may be carried out. */
eg_guard_verdict eg_dlq_guard_admit(eg_dlq_guard *g, const char *topic, int64_t now_ms);

/* Re-arms the topics whose cooldown passed with their rate back under the
 * limit (each told to on_event), then returns how many are tripped. */
int eg_dlq_guard_poll(eg_dlq_guard *g, int64_t now_ms);

/* Re-arms every tripped topic and empties every window (an operator's
 * reset). Returns how many were tripped. */
int eg_dlq_guard_reset(eg_dlq_guard *g);

/* The i-th topic (0-based, in the order first seen): 0 with its name, state
 * and window count at now_ms, or -1 past the last. */
int eg_dlq_guard_topic(const eg_dlq_guard *g, int i, int64_t now_ms, const char **topic, int *tripped, uint64_t *count);

#endif
