/* fuzz_history.c — the errgate.history header (history.c): the previous
 * header's bytes are decoded with msgpack-c and re-packed with two new
 * attempts. Input: the previous header's value. The result must be one
 * msgpack array of at most EG_HISTORY_MAX entries and EG_HISTORY_MAX_BYTES
 * bytes whose last entry is the newest attempt; an unreadable previous
 * header must be reported, never copied. */
#include "fuzz.h"
#include "history.h"

#include <msgpack.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    eg_attempt att[2] = {{.t_ms = 1700000000000, .action = EG_ACT_RETRY, .klass = "transient", .code = "http_503"},
                         {.t_ms = 1700000001000, .action = EG_ACT_DLQ, .klass = "permanent", .code = "http_400"}};
    char out[EG_HISTORY_MAX_BYTES];
    int bad = -1;
    size_t len = eg_history_encode(size ? data : NULL, size, att, 2, "orders.dlq", out, sizeof out, &bad);
    FZ_CHECK(bad == 0 || bad == 1, "prev_bad = %d", bad);
    FZ_CHECK(size || !bad, "an absent previous header reported bad");
    FZ_CHECK(len > 0, "two attempts always fit in %d bytes", EG_HISTORY_MAX_BYTES);
    FZ_CHECK(len <= sizeof out, "length %zu", len);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    FZ_CHECK(msgpack_unpack_next(&up, out, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len,
             "the result is not one msgpack object");
    const msgpack_object *o = &up.data;
    FZ_CHECK(o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 1 && o->via.array.size <= EG_HISTORY_MAX,
             "not an array of 1..%d entries", EG_HISTORY_MAX);
    const msgpack_object *last = &o->via.array.ptr[o->via.array.size - 1];
    FZ_CHECK(last->type == MSGPACK_OBJECT_MAP && last->via.map.size == 5, "the newest entry is not our map");
    msgpack_unpacked_destroy(&up);
    return 0;
}
