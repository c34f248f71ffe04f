/* replay_filter.c — whether `errgate replay`'s C filters select one lane
 * record (see dlq.h; the headers it sends back: replay_headers.c). Pure:
 * no Kafka client, no state; unit-tested in spec/c/test_dlq.c. */
#include "dlq.h"

#include <string.h>

int eg_replay_filter_match(const eg_replay_filter *f, const eg_lane_view *v) {
    if (f->since_ms > 0 && v->ts < f->since_ms) return 0;
    if (f->until_ms > 0 && v->ts > f->until_ms) return 0;
    if (f->klass && (!v->klass || strcmp(f->klass, v->klass) != 0)) return 0;
    if (f->code && (!v->code || strcmp(f->code, v->code) != 0)) return 0;
    if (f->key && (!v->key || v->keylen != strlen(f->key) || memcmp(v->key, f->key, v->keylen) != 0)) return 0;
    return 1;
}
