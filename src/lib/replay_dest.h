/* replay_dest.h — where a replay may write: the one rule of inbox mode's
 * republish (gateway.c) and `errgate replay` (cmd_replay.c).
 *
 * A replay's destination comes from bytes someone else wrote: a foreign
 * DLQ dialect's original topic, errgate's original.topic (which the failed
 * record's own producer may have set: lane writers keep it), a rung
 * record's errgate.replay-to. Nobody who can merely produce to Kafka may
 * steer where errgate writes (issue 28), so two checks stand between those
 * bytes and a produce:
 *   internal  always refused, whatever the allow-list says: Kafka's
 *             internal topics (`__*`), every `*.state` topic (lifecycle
 *             and state topics), every `*.fences` topic (fences), the audit topic (admin.audit_topic), and
 *             with a config the gateway's lanes and rungs
 *             (eg_config_own_lane) and in inbox mode its sources (the
 *             inbox itself);
 *   allowed   the destination matches one of the allow patterns: the
 *             config's source.replay_allow, or when that is absent the
 *             default (eg_replay_allowed).
 * A pattern is a topic name in which `*` stands for any run of characters
 * (possibly none), or a regular expression starting with `^` (POSIX
 * extended, as source.topics). */
#ifndef EG_REPLAY_DEST_H
#define EG_REPLAY_DEST_H

#include "config.h"

#include <stddef.h>

/* 1 when topic matches pattern (see the file comment), else 0. A regex that
 * does not compile matches nothing. */
int eg_topic_match(const char *pattern, const char *topic);

/* 1 when pattern is a valid allow pattern: 1 to EG_TOPIC_NAME_MAX of
 * [A-Za-z0-9._-] and `*`, or a `^` regular expression that compiles. */
int eg_topic_pattern_ok(const char *pattern);

/* 1 (with why, a sentence naming the rule) when topic is an internal or
 * control topic no replay may write to: `__*`, `*.state`, `*.fences`, the audit topic
 * (cfg's admin.audit_topic, or errgate.audit when cfg is NULL), and with a
 * cfg its lanes and rungs and, in inbox mode, its sources. Else 0. */
int eg_replay_internal(const eg_config *cfg, const char *topic, char *why, size_t whylen);

/* 1 when cfg allows a replay to topic: it matches a source.replay_allow
 * pattern; without that key, the default: in inbox mode the topics the
 * literal sources are DLQs of by name (the source without a suffix -dlt,
 * .DLT, .dlt, _dlt, -dlq, .dlq, _dlq, or without what lanes.dlq and
 * lanes.quarantine add around {topic}: payments for payments-dlt), else
 * the sources themselves (a lane's records were born there). 0 for an
 * empty topic. */
int eg_replay_allowed(const eg_config *cfg, const char *topic);

/* The allow-list cfg applies, as text for messages ("source.replay_allow
 * payments*, billing" or "the default: payments"), into out. */
void eg_replay_allow_text(const eg_config *cfg, char *out, size_t outlen);

#endif
