/* test_history.c — errgate.history encoding: entries in order with their
 * fields, the previous header's entries kept (even fields errgate does not
 * write), the entry and byte caps drop the oldest first, and an unreadable
 * previous header is dropped and reported. */
#include "history.h"
#include "tap.h"

#include <msgpack.h>
#include <string.h>

static eg_attempt att(int64_t t, eg_action a, const char *klass, const char *code) {
    eg_attempt x = {.t_ms = t, .action = a};
    strcpy(x.klass, klass);
    strcpy(x.code, code);
    return x;
}

/* The string field `key` of map m, into out ("" when absent). */
static void field(const msgpack_object *m, const char *key, char *out, size_t n) {
    out[0] = '\0';
    for (uint32_t i = 0; m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size; i++) {
        const msgpack_object_kv *kv = &m->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == strlen(key) &&
            memcmp(kv->key.via.str.ptr, key, strlen(key)) == 0 && kv->val.type == MSGPACK_OBJECT_STR &&
            kv->val.via.str.size < n) {
            memcpy(out, kv->val.via.str.ptr, kv->val.via.str.size);
            out[kv->val.via.str.size] = '\0';
        }
    }
}

static int64_t field_int(const msgpack_object *m, const char *key) {
    for (uint32_t i = 0; m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size; i++) {
        const msgpack_object_kv *kv = &m->via.map.ptr[i];
        if (kv->key.via.str.size == strlen(key) && memcmp(kv->key.via.str.ptr, key, strlen(key)) == 0)
            return kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t)kv->val.via.u64 : -1;
    }
    return -1;
}

int main(void) {
    char buf[EG_HISTORY_MAX_BYTES], s[64];
    int bad = 0;
    msgpack_unpacked up;

    eg_attempt a[3] = {att(1000, EG_ACT_RETRY, "transient", "http_503"),
                       att(2000, EG_ACT_RETRY, "transient", "http_503"),
                       att(3000, EG_ACT_LADDER, "transient", "http_503")};
    size_t n = eg_history_encode(NULL, 0, a, 3, "pay.retry.30s", buf, sizeof buf, &bad);
    CHECK(n > 0 && !bad, "encodes three attempts (%zu bytes)", n);
    msgpack_unpacked_init(&up);
    size_t off = 0;
    int ok = msgpack_unpack_next(&up, buf, n, &off) == MSGPACK_UNPACK_SUCCESS && off == n;
    CHECK(ok && up.data.type == MSGPACK_OBJECT_ARRAY && up.data.via.array.size == 3, "an array of 3 entries");
    const msgpack_object *e = up.data.via.array.ptr;
    CHECK(field_int(&e[0], "t") == 1000 && field_int(&e[2], "t") == 3000, "oldest first, with times");
    field(&e[2], "action", s, sizeof s);
    CHECK(strcmp(s, "ladder") == 0, "action of the last entry (%s)", s);
    field(&e[2], "lane", s, sizeof s);
    CHECK(strcmp(s, "pay.retry.30s") == 0, "the last entry names its lane (%s)", s);
    field(&e[0], "lane", s, sizeof s);
    CHECK(s[0] == '\0', "earlier in-place attempts have no lane");
    field(&e[1], "code", s, sizeof s);
    CHECK(strcmp(s, "http_503") == 0, "code kept (%s)", s);

    /* a second stage appends to the first's header */
    char buf2[EG_HISTORY_MAX_BYTES];
    eg_attempt b = att(4000, EG_ACT_DLQ, "permanent", "http_400");
    size_t n2 = eg_history_encode(buf, n, &b, 1, "pay.dlq", buf2, sizeof buf2, &bad);
    msgpack_unpacked_destroy(&up);
    msgpack_unpacked_init(&up);
    off = 0;
    ok = n2 > 0 && msgpack_unpack_next(&up, buf2, n2, &off) == MSGPACK_UNPACK_SUCCESS;
    CHECK(ok && up.data.via.array.size == 4 && !bad, "previous entries kept, new one appended");
    field(&up.data.via.array.ptr[3], "class", s, sizeof s);
    CHECK(strcmp(s, "permanent") == 0, "the appended entry is last (%s)", s);
    field(&up.data.via.array.ptr[2], "lane", s, sizeof s);
    CHECK(strcmp(s, "pay.retry.30s") == 0, "an old entry is re-packed untouched");

    /* entry cap: 12 attempts keep the newest EG_HISTORY_MAX */
    eg_attempt many[12];
    for (int i = 0; i < 12; i++) many[i] = att(100 + i, EG_ACT_RETRY, "transient", "timeout");
    n = eg_history_encode(NULL, 0, many, 12, NULL, buf, sizeof buf, &bad);
    msgpack_unpacked_destroy(&up);
    msgpack_unpacked_init(&up);
    off = 0;
    ok = msgpack_unpack_next(&up, buf, n, &off) == MSGPACK_UNPACK_SUCCESS;
    CHECK(ok && up.data.via.array.size == EG_HISTORY_MAX, "capped at %d entries", EG_HISTORY_MAX);
    CHECK(ok && field_int(&up.data.via.array.ptr[0], "t") == 102, "the oldest ones dropped first");

    /* byte cap: long codes force fewer entries */
    eg_attempt big[EG_HISTORY_MAX];
    for (int i = 0; i < EG_HISTORY_MAX; i++) {
        big[i] = att(i, EG_ACT_RETRY, "k", "");
        memset(big[i].code, 'x', sizeof big[i].code - 1);
        big[i].code[sizeof big[i].code - 1] = '\0';
        memset(big[i].klass, 'y', sizeof big[i].klass - 1);
        big[i].klass[sizeof big[i].klass - 1] = '\0';
    }
    /* a previous header with large entries too */
    n = eg_history_encode(NULL, 0, big, EG_HISTORY_MAX, NULL, buf, sizeof buf, &bad);
    n2 = eg_history_encode(buf, n, big, EG_HISTORY_MAX, "lane", buf2, sizeof buf2, &bad);
    CHECK(n2 > 0 && n2 <= EG_HISTORY_MAX_BYTES, "stays under %d bytes (%zu)", EG_HISTORY_MAX_BYTES, n2);

    /* garbage previous header */
    n = eg_history_encode("\xc1garbage", 8, a, 1, NULL, buf, sizeof buf, &bad);
    CHECK(n > 0 && bad == 1, "an unreadable previous header is dropped and reported");
    n = eg_history_encode("\x93\x01", 2, a, 1, NULL, buf, sizeof buf, &bad);
    CHECK(n > 0 && bad == 1, "a truncated previous header is dropped and reported");
    msgpack_unpacked_destroy(&up);
    return TAP_DONE();
}
