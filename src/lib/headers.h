/* headers.h — the names of the headers errgate writes on lane records
 * (DESIGN §4, native profile). One list, shared by the writer (lanes.c) and
 * every reader (replay, dlq, policy test --from-topic), so a rename cannot
 * drift between them.
 *
 * Error headers are replaced at each stage; original.* and errgate.id are
 * written once, when a record first leaves its source topic. Values are
 * UTF-8 text except errgate.history (msgpack, see lanes.h). */
#ifndef EG_HEADERS_H
#define EG_HEADERS_H

#define EG_H_CLASS "error.class"
#define EG_H_CODE "error.code"
#define EG_H_MESSAGE "error.message"
#define EG_H_TIMESTAMP "error.timestamp"        /* RFC 3339, UTC */
#define EG_H_KIND "error.kind"                  /* http|timeout|connect|lua|circuit_open; fenced (source.fence) */
#define EG_H_STATUS "error.status"              /* HTTP status, only when there was one */
#define EG_H_CLASS_HINT "error.class-hint"      /* the service's own Error-Class, when it sent one */
#define EG_H_RETRY_AFTER "error.retry-after-ms" /* only when the target sent one */
#define EG_H_RETRY_COUNT "retry.count"          /* rungs climbed */
#define EG_H_ATTEMPTS "errgate.attempts"        /* target attempts in all: in place, on every rung */
#define EG_H_PREVIOUS "previous.topic"
#define EG_H_ORIG_TOPIC "original.topic"
#define EG_H_ORIG_PARTITION "original.partition"
#define EG_H_ORIG_OFFSET "original.offset"
#define EG_H_ORIG_TIMESTAMP "original.timestamp"
#define EG_H_ORIG_GROUP "original.consumer.group"
#define EG_H_ID "errgate.id"         /* topic/partition/offset of the original */
#define EG_H_POLICY "errgate.policy" /* name@version+sha8 that decided */
#define EG_H_ACTION "errgate.action" /* dlq|quarantine|ladder */
#define EG_H_REASON "errgate.reason"
#define EG_H_HISTORY "errgate.history"       /* msgpack array of attempts */
#define EG_H_NOT_BEFORE "errgate.not-before" /* rung records: earliest due time, ms since the epoch */
#define EG_H_REPLAY_FROM "replay.from-dlq"   /* lane/partition/offset */
#define EG_H_REPLAY_TS "replay.timestamp"
#define EG_H_REPLAYS "errgate.replays"     /* how many times replayed */
#define EG_H_REPLAY_TO "errgate.replay-to" /* replay-rung records: "original" or the topic to republish to */
#define EG_H_OVERRIDE "errgate.override"   /* the operator override that changed the decision, when one did */
#define EG_H_FENCED_BY "errgate.fenced-by" /* a record that followed a parked one of its key: that one's errgate.id */

/* The envelope (envelope.h, lane_envelope.c): what a person triaging a
 * dead letter needs besides the error. All are replaced at each stage;
 * errgate.first-failure carries its first value on. Times are decimal ms
 * since the epoch. */
#define EG_H_APP "errgate.app"                     /* app.name (else metrics.pipeline, else the group) */
#define EG_H_APP_VERSION "errgate.app-version"     /* app.version, when set */
#define EG_H_STAGE "errgate.stage"                 /* the step that failed: metrics.stage, else the target kind */
#define EG_H_SCHEMA "errgate.schema"               /* source.schema, when set */
#define EG_H_SCHEMA_ID "errgate.schema-id"         /* a Confluent wire-format payload's schema id */
#define EG_H_FINGERPRINT "errgate.fingerprint"     /* 16 hex digits: code + normalised message */
#define EG_H_RETRYABLE "errgate.retryable"         /* "true" or "false" */
#define EG_H_HINT "errgate.hint"                   /* the class's remediation hint in the policy */
#define EG_H_FIRST_FAILURE "errgate.first-failure" /* the record's first failure, written once */
#define EG_H_LAST_FAILURE "errgate.last-failure"   /* this stage's last failure */
#define EG_H_MAX_ATTEMPTS "errgate.max-attempts"   /* rung records: the ladder's steps */
#define EG_H_DUE "errgate.due"                     /* rung records: when the next attempt is due */

/* "required" on a DLQ or quarantine record whose item starts
 * pending-approval (lanes.*_approval, route { dlq = true, approval = true }) */
#define EG_H_APPROVAL "errgate.approval"
#define EG_APPROVAL_REQUIRED "required"

#endif
