/* fuzz_history.c — the errgate.history header (history.c): the previous
 * header's bytes are decoded with msgpack-c and re-packed with two new
 * attempts. Input: the previous header's value. The result must be one
 * msgpack array of at most EG_HISTORY_MAX entries and EG_HISTORY_MAX_BYTES
 * bytes whose last entry is the newest attempt; an unreadable previous
 * header must be reported, never copied. eg_mp_plausible (mpcheck.h), which
 * guards the decoding, must accept whatever msgpack-c writes: the result,
 * the input re-packed when it decodes, and an object of every msgpack form
 * built from the input bytes (gen). */
#include "fuzz.h"
#include "history.h"
#include "mpcheck.h"

#include <msgpack.h>
#include <string.h>

/* Packs one object chosen by the input bytes at *i (every msgpack-c form:
 * scalars of each width, str/bin/ext of 8/16/32-bit lengths, nested
 * arrays and maps). */
static void gen(msgpack_packer *pk, const uint8_t *d, size_t n, size_t *i, int depth) {
    static const char zeros[70000];
    uint8_t b = *i < n ? d[(*i)++] : 0;
    uint64_t x = 0;
    for (int k = 0; k < 8 && *i < n; k++) x = x << 8 | d[(*i)++];
    size_t len = b & 0x80 ? (size_t)(x % 70000) : (size_t)(x & 0x3f);
    switch (depth > 6 ? b % 8 : b % 11) {
    case 0: msgpack_pack_nil(pk); break;
    case 1:
        if (b & 0x10) msgpack_pack_true(pk);
        else msgpack_pack_false(pk);
        break;
    case 2: msgpack_pack_int64(pk, (int64_t)x >> (b & 0x3f)); break;
    case 3: msgpack_pack_uint64(pk, x >> (b & 0x3f)); break;
    case 4:
        if (b & 0x10) msgpack_pack_float(pk, (float)x);
        else msgpack_pack_double(pk, (double)x);
        break;
    case 5:
        msgpack_pack_str(pk, len);
        msgpack_pack_str_body(pk, zeros, len);
        break;
    case 6:
        msgpack_pack_bin(pk, len);
        msgpack_pack_bin_body(pk, zeros, len);
        break;
    case 7:
        msgpack_pack_ext(pk, len, (int8_t)x);
        msgpack_pack_ext_body(pk, zeros, len);
        break;
    case 8:
    case 9: {
        size_t m = b & 0x40 ? (size_t)(x % 300) : (size_t)(x & 0xf);
        if (b % 11 == 8) msgpack_pack_array(pk, m);
        else msgpack_pack_map(pk, m);
        for (size_t k = 0; k < (b % 11 == 8 ? m : 2 * m); k++) gen(pk, d, n, i, depth + 1);
        break;
    }
    default: msgpack_pack_int32(pk, (int32_t)x); break;
    }
}

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
    FZ_CHECK(eg_mp_plausible(out, len), "eg_mp_plausible refuses the encoder's output");
    msgpack_unpacked_destroy(&up);

    off = 0;
    msgpack_unpacked_init(&up);
    if (size && eg_mp_plausible(data, size) &&
        msgpack_unpack_next(&up, (const char *)data, size, &off) == MSGPACK_UNPACK_SUCCESS) {
        msgpack_sbuffer rb;
        msgpack_sbuffer_init(&rb);
        msgpack_packer rp;
        msgpack_packer_init(&rp, &rb, msgpack_sbuffer_write);
        msgpack_pack_object(&rp, up.data);
        FZ_CHECK(eg_mp_plausible(rb.data, rb.size), "eg_mp_plausible refuses msgpack-c's own packing");
        msgpack_sbuffer_destroy(&rb);
    }
    msgpack_unpacked_destroy(&up);

    msgpack_sbuffer sb; /* any object msgpack-c packs passes */
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    size_t i = 0;
    gen(&pk, data, size, &i, 0);
    FZ_CHECK(eg_mp_plausible(sb.data, sb.size), "eg_mp_plausible refuses a packed object of %zu bytes", sb.size);
    msgpack_sbuffer_destroy(&sb);
    return 0;
}
