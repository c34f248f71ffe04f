/* lane_envelope.h — the envelope headers of a lane record (DESIGN §4):
 * errgate.app, .app-version, .stage, .schema, .schema-id, .fingerprint,
 * .retryable, .hint, .first-failure, .last-failure, and on rung records
 * .max-attempts and .due. Filled from the config (app, schema, stage), the
 * policy (the decision's class envelope: hint, retryable, ladder steps),
 * the failure (its code and message) and the record (its payload, its
 * previous errgate.history and errgate.first-failure). The lane writer
 * (lanes.c) calls it once per lane record, after the error headers. */
#ifndef EG_LANE_ENVELOPE_H
#define EG_LANE_ENVELOPE_H

#include <librdkafka/rdkafka.h>

#include "config.h"
#include "record.h"

/* What the config says, copied at start (the strings borrowed from cfg,
 * which outlives the lane writer). */
typedef struct eg_lane_env {
    const char *app, *app_version, *stage, *schema;
} eg_lane_env;

/* Fills e from cfg: app.name (else metrics.pipeline, else the group),
 * app.version, metrics.stage (else the target kind), source.schema. */
void eg_lane_env_init(eg_lane_env *e, const eg_config *cfg);

/* 1 when header name is an envelope header (a lane write replaces it). */
int eg_lane_env_header(const char *name);

/* Adds the envelope of rec (rec->fail set) to h. src: the record's own
 * headers (may be NULL), read for errgate.first-failure, errgate.protect
 * and a carried errgate.schema-id; prev_hist/prev_len: its previous
 * errgate.history (may be NULL). */
void eg_lane_env_add(const eg_lane_env *e, const eg_record *rec, const rd_kafka_headers_t *src, const void *prev_hist,
                     size_t prev_len, rd_kafka_headers_t *h);

#endif
