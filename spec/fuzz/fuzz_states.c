/* fuzz_states.c — the reader of LANE.state records (dlq_state.c,
 * eg_dlq_states_apply, eg_dlq_states_annotate), on any bytes: anyone who can produce to a state
 * topic writes them. Input: one state record's value. It is applied after
 * a `replayed` record of the same id and before a lookup, as the DLQ
 * commands read a topic. Contract: no crash or overrun; a status read is
 * one of the six; an older copy's status never becomes approved through an
 * approval that starts after it, a `prior` later than its own record is
 * never taken, and a tombstone after it always reopens the id. */
#include "dlq.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eg_dlq_states s;
    memset(&s, 0, sizeof s);
    const char *replayed = "{\"status\":\"replayed\"}";
    eg_dlq_states_apply(&s, "x", 1, replayed, strlen(replayed), 100);
    eg_dlq_states_apply(&s, "x", 1, data, size, 200);
    for (int64_t ts = 0; ts <= 300; ts += 50) {
        eg_dlq_status st = eg_dlq_states_status(&s, "x", ts, ts & 1);
        FZ_CHECK(st >= EG_DLQ_OPEN && st < EG_DLQ__N, "status %d at %lld", (int)st, (long long)ts);
        FZ_CHECK(!(ts > 200 && eg_dlq_resolved(st)), "a copy newer than every record is resolved (%s at %lld)",
                 eg_dlq_status_name(st), (long long)ts);
    }
    /* the same value alone (as after compaction): nothing it claims as prior
     * may come from after its own record */
    eg_dlq_states c;
    memset(&c, 0, sizeof c);
    eg_dlq_states_apply(&c, "y", 1, data, size, 200);
    eg_dlq_status st = eg_dlq_states_status(&c, "y", 201, 0);
    FZ_CHECK(!eg_dlq_resolved(st), "a value resolved a copy newer than itself (%s)", eg_dlq_status_name(st));
    eg_dlq_states_apply(&s, "x", 1, NULL, 0, 400);
    FZ_CHECK(eg_dlq_states_status(&s, "x", 50, 0) == EG_DLQ_OPEN, "a tombstone did not reopen");
    /* the same bytes as an annotation (dlq annotate's key annotation:ID):
     * kept only as a JSON object without NULs within the cap, and a field
     * read from it is a NUL-terminated string within its buffer; a
     * tombstone removes it */
    eg_dlq_states_annotate(&s, "x", 1, data, size);
    char v[64];
    if (eg_dlq_states_annotation(&s, "x", "owner", v, sizeof v) == 0) {
        FZ_CHECK(memchr(v, 0, sizeof v) != NULL, "owner not terminated");
        FZ_CHECK(size >= 2 && size <= EG_DLQ_ANNOTATION_MAX && !memchr(data, 0, size), "kept a %zu-byte value", size);
    }
    eg_dlq_states_annotate(&s, "x", 1, NULL, 0);
    FZ_CHECK(eg_dlq_states_annotation(&s, "x", "owner", v, sizeof v) == -1, "a tombstone did not remove it");
    eg_dlq_states_free(&s);
    eg_dlq_states_free(&c);
    return 0;
}
