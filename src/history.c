/* history.c — encode errgate.history (see history.h) with msgpack-c.
 *
 * The previous header's entries are kept as msgpack objects (re-packed
 * untouched, so fields a newer errgate adds survive an older one); new
 * entries are appended; while the result is over either cap the oldest
 * entry is dropped and the array packed again. */
#include "history.h"
#include "util.h"

#include <msgpack.h>
#include <string.h>

static void pack_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pack_attempt(msgpack_packer *pk, const eg_attempt *a, const char *lane) {
    msgpack_pack_map(pk, lane ? 5 : 4);
    pack_str(pk, "t");
    msgpack_pack_int64(pk, a->t_ms);
    pack_str(pk, "class");
    pack_str(pk, a->klass);
    pack_str(pk, "code");
    pack_str(pk, a->code);
    pack_str(pk, "action");
    pack_str(pk, eg_action_name(a->action));
    if (lane) {
        pack_str(pk, "lane");
        pack_str(pk, lane);
    }
}

size_t eg_history_encode(const void *prev, size_t prevlen, const eg_attempt *att, int n, const char *lane,
                         char *out, size_t outcap, int *prev_bad) {
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    const msgpack_object *old = NULL;
    int nold = 0;
    *prev_bad = 0;
    if (prev && prevlen) {
        size_t off = 0;
        if (msgpack_unpack_next(&up, prev, prevlen, &off) == MSGPACK_UNPACK_SUCCESS && off == prevlen &&
            up.data.type == MSGPACK_OBJECT_ARRAY) {
            old = up.data.via.array.ptr;
            nold = (int)up.data.via.array.size;
        } else {
            *prev_bad = 1;
        }
    }
    size_t len = 0;
    int total = nold + n;
    for (int skip = total > EG_HISTORY_MAX ? total - EG_HISTORY_MAX : 0; skip < total; skip++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_array(&pk, (size_t)(total - skip));
        for (int i = skip; i < total; i++) {
            if (i < nold) msgpack_pack_object(&pk, old[i]);
            else pack_attempt(&pk, &att[i - nold], i == total - 1 ? lane : NULL);
        }
        int fits = sb.size <= EG_HISTORY_MAX_BYTES && sb.size <= outcap;
        if (fits) {
            memcpy(out, sb.data, sb.size);
            len = sb.size;
        }
        msgpack_sbuffer_destroy(&sb);
        if (fits) break;
    }
    msgpack_unpacked_destroy(&up);
    return len;
}
