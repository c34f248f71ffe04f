/* history.c — encode errgate.history (see history.h) with msgpack-c.
 *
 * The previous header's entries are kept as msgpack objects (re-packed
 * untouched, so fields a newer errgate adds survive an older one); new
 * entries are appended; while the result is over either cap the oldest
 * entry is dropped and the array packed again, straight into the caller's
 * buffer (no allocation). */
#include "history.h"
#include "mpcheck.h"
#include "util.h"

#include <msgpack.h>
#include <string.h>

/* A msgpack writer into a fixed buffer: no allocation; `over` when full. */
typedef struct fixbuf {
    char *p;
    size_t len, cap;
    int over;
} fixbuf;

static int fix_write(void *data, const char *buf, size_t len) {
    fixbuf *f = data;
    if (f->over || len > f->cap - f->len) {
        f->over = 1;
        return -1;
    }
    if (len) memcpy(f->p + f->len, buf, len); /* an empty str of the old header may come with buf NULL */
    f->len += len;
    return 0;
}

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

size_t eg_history_encode(const void *prev, size_t prevlen, const eg_attempt *att, int n, const char *lane, char *out,
                         size_t outcap, int *prev_bad) {
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    const msgpack_object *old = NULL;
    int nold = 0;
    *prev_bad = 0;
    if (prev && prevlen) {
        size_t off = 0;
        if (eg_mp_plausible(prev, prevlen) && msgpack_unpack_next(&up, prev, prevlen, &off) == MSGPACK_UNPACK_SUCCESS &&
            off == prevlen && up.data.type == MSGPACK_OBJECT_ARRAY) {
            old = up.data.via.array.ptr;
            nold = (int)up.data.via.array.size;
        } else {
            *prev_bad = 1;
        }
    }
    size_t len = 0;
    int total = nold + n;
    size_t cap = outcap < EG_HISTORY_MAX_BYTES ? outcap : EG_HISTORY_MAX_BYTES;
    for (int skip = total > EG_HISTORY_MAX ? total - EG_HISTORY_MAX : 0; skip < total; skip++) {
        fixbuf fb = {out, 0, cap, 0};
        msgpack_packer pk;
        msgpack_packer_init(&pk, &fb, fix_write);
        msgpack_pack_array(&pk, (size_t)(total - skip));
        for (int i = skip; i < total && !fb.over; i++) {
            if (i < nold) msgpack_pack_object(&pk, old[i]);
            else pack_attempt(&pk, &att[i - nold], i == total - 1 ? lane : NULL);
        }
        if (!fb.over) {
            len = fb.len;
            break;
        }
    }
    msgpack_unpacked_destroy(&up);
    return len;
}
