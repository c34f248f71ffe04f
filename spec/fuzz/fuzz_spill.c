/* fuzz_spill.c — spill segment scans (spill.c): frame headers, lengths,
 * CRCs and the MessagePack payload decoder, through the public scanner
 * (spill.h) over a file in a private temp directory. Input: byte 0 picks
 * the mode, the rest is the segment file. Mode bit 0 set: before writing,
 * every frame header met while walking the bytes (magic, length that fits)
 * gets the right CRC, so the payload decoder sees mutated payloads instead
 * of CRC mismatches. The memory scanner's good frames and damaged regions
 * must tile the input exactly; the file scanner must find the same frames
 * and regions and read each frame again by its offset; every frame must
 * satisfy spill.h's record contract. */
#include "fuzz.h"
#include "spill.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

/* Walks frames in buf, fixing each CRC, until a header does not parse. */
static void fix_crcs(uint8_t *buf, size_t n) {
    size_t off = 0;
    while (n - off >= EG_SPILL_FRAME_HDR && memcmp(buf + off, EG_SPILL_MAGIC, 4) == 0) {
        uint32_t len = be32(buf + off + 4);
        if (len == 0 || len > n - off - EG_SPILL_FRAME_HDR) return;
        uint32_t c = eg_crc32(0, buf + off + EG_SPILL_FRAME_HDR, len);
        uint8_t *p = buf + off + 8;
        p[0] = (uint8_t)(c >> 24), p[1] = (uint8_t)(c >> 16), p[2] = (uint8_t)(c >> 8), p[3] = (uint8_t)c;
        off += EG_SPILL_FRAME_HDR + len;
    }
}

static void check_rec(const eg_spill_rec *r) {
    size_t tl = strlen(r->topic);
    FZ_CHECK(tl >= 1 && tl <= EG_SPILL_TOPIC_MAX, "topic length %zu", tl);
    FZ_CHECK(r->partition >= -1, "partition %d", (int)r->partition);
    FZ_CHECK(r->timestamp_ms >= -1, "timestamp %lld", (long long)r->timestamp_ms);
    FZ_CHECK(r->kheaders == NULL, "a scan sets kheaders to NULL");
    FZ_CHECK(r->key || r->key_len == 0, "null key with a length");
    FZ_CHECK(r->value || r->value_len == 0, "null value with a length");
    FZ_CHECK(r->headers || r->nheaders == 0, "headers NULL with a count");
    size_t sum = 0; /* touch every byte: ASan checks the pointers */
    for (size_t i = 0; i < r->key_len; i++) sum += ((const uint8_t *)r->key)[i];
    for (size_t i = 0; i < r->value_len; i++) sum += ((const uint8_t *)r->value)[i];
    for (size_t i = 0; i < r->nheaders; i++) {
        sum += strlen(r->headers[i].name);
        FZ_CHECK(r->headers[i].value || r->headers[i].value_len == 0, "null header value with a length");
        for (size_t k = 0; k < r->headers[i].value_len; k++) sum += ((const uint8_t *)r->headers[i].value)[k];
    }
    (void)sum;
}

/* What eg_spill_scan_buf reported: good frames and damaged regions must
 * tile the bytes exactly, in order, from 0 to the end. */
typedef struct {
    uint64_t pos, frames, damaged;
    uint64_t offs[64];
} tiling;

static int on_piece(void *arg, const eg_spill_rec *rec, uint64_t off, uint64_t len, const char *reason) {
    tiling *t = arg;
    FZ_CHECK(off == t->pos, "piece at %llu, expected %llu", (unsigned long long)off, (unsigned long long)t->pos);
    FZ_CHECK(len > 0, "an empty piece at %llu", (unsigned long long)off);
    if (rec) {
        FZ_CHECK(reason == NULL, "a frame with a reason");
        FZ_CHECK(len >= EG_SPILL_FRAME_HDR + 1, "a frame of %llu bytes", (unsigned long long)len);
        check_rec(rec);
        if (t->frames < 64) t->offs[t->frames] = off;
        t->frames++;
    } else {
        FZ_CHECK(reason && reason[0], "a damaged region without a reason");
        t->damaged++;
    }
    t->pos = off + len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    static char path[300];
    if (!path[0]) snprintf(path, sizeof path, "%s/spill-0000000000000001.eg", fz_tmpdir());
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    memcpy(buf, data + 1, n);
    if (data[0] & 1) fix_crcs(buf, n);

    /* the memory scanner: pieces tile the input */
    tiling t = {0};
    FZ_CHECK(eg_spill_scan_buf(buf, n, on_piece, &t) == 0, "scan_buf stopped by itself");
    FZ_CHECK(t.pos == n, "pieces end at %llu of %zu", (unsigned long long)t.pos, n);

    /* the file scanner agrees with it, and re-reads every frame it found */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FZ_CHECK(fd >= 0, "cannot create %s", path);
    FZ_CHECK(write(fd, buf, n) == (ssize_t)n, "short write");
    close(fd);
    free(buf);
    char err[256];
    eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
    FZ_CHECK(s != NULL, "scan_open: %s", err);
    eg_spill_rec r;
    uint64_t frames = 0, damaged = 0, steps = 0;
    int rc;
    while ((rc = eg_spill_scan_next(s, &r)) != 0) {
        const eg_spill_scan_state *st = eg_spill_scan_state_get(s);
        FZ_CHECK(!st->ioerr, "an I/O error on a plain file: %s", st->reason);
        if (rc == 1) {
            check_rec(&r);
            frames++;
        } else {
            FZ_CHECK(rc == -1 && st->bad_len > 0 && st->reason[0], "damage without a region or reason");
            damaged++;
        }
        FZ_CHECK(st->next <= n, "next %llu past the file", (unsigned long long)st->next);
        FZ_CHECK(++steps <= n + 1, "the scan does not advance");
    }
    FZ_CHECK(frames == t.frames && damaged == t.damaged, "file scan %llu frames %llu damaged, buffer scan %llu, %llu",
             (unsigned long long)frames, (unsigned long long)damaged, (unsigned long long)t.frames,
             (unsigned long long)t.damaged);
    FZ_CHECK(eg_spill_scan_next(s, &r) == 0, "a finished scan did not stay finished");
    for (uint64_t i = 0; i < t.frames && i < 64; i++) {
        FZ_CHECK(eg_spill_scan_at(s, t.offs[i], &r) == 1, "frame at %llu unreadable on the second read",
                 (unsigned long long)t.offs[i]);
        check_rec(&r);
    }
    (void)eg_spill_scan_at(s, n / 2, &r);
    eg_spill_scan_close(s);
    return 0;
}
