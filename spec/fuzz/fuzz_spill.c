/* fuzz_spill.c — spill segment scans (spill.c): frame headers, lengths,
 * CRCs and the MessagePack payload decoder, through the public scanner
 * (spill.h) over a file in a private temp directory. Input: byte 0 picks
 * the mode, the rest is the segment file. Mode bit 0 set: before writing,
 * every frame header met while walking the bytes (magic, length that fits)
 * gets the right CRC, so the payload decoder sees mutated payloads instead
 * of CRC mismatches. Every returned frame must satisfy spill.h's record
 * contract; a scan must end (at most one frame per 13 bytes) and repeat its
 * answer once it stopped. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    static char path[300];
    if (!path[0]) snprintf(path, sizeof path, "%s/spill-0000000000000001.eg", fz_tmpdir());
    uint8_t *buf = malloc(size);
    memcpy(buf, data + 1, size - 1);
    if (data[0] & 1) fix_crcs(buf, size - 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FZ_CHECK(fd >= 0, "cannot create %s", path);
    FZ_CHECK(write(fd, buf, size - 1) == (ssize_t)(size - 1), "short write");
    close(fd);
    free(buf);

    char err[256];
    eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
    FZ_CHECK(s != NULL, "scan_open: %s", err);
    eg_spill_rec r;
    uint64_t offs[64];
    size_t nframes = 0, steps = 0;
    int rc;
    while ((rc = eg_spill_scan_next(s, &r)) == 1) {
        check_rec(&r);
        const eg_spill_scan_state *st = eg_spill_scan_state_get(s);
        FZ_CHECK(st->next <= size - 1, "next %llu past the file", (unsigned long long)st->next);
        if (nframes < 64) offs[nframes] = st->offset;
        nframes++;
        FZ_CHECK(++steps <= size / 13 + 1, "more frames than the bytes can hold");
    }
    const eg_spill_scan_state *st = eg_spill_scan_state_get(s);
    FZ_CHECK(st->frames == nframes, "frames %llu, returned %zu", (unsigned long long)st->frames, nframes);
    FZ_CHECK(rc == 0 ? !st->bad : st->bad, "rc %d with bad %d", rc, st->bad);
    if (rc < 0) FZ_CHECK(st->reason[0] != '\0', "a bad frame without a reason");
    FZ_CHECK(eg_spill_scan_next(s, &r) == rc, "the scan did not repeat its answer");
    for (size_t i = 0; i < nframes && i < 64; i++) {
        FZ_CHECK(eg_spill_scan_at(s, offs[i], &r) == 1, "frame at %llu unreadable on the second read",
                 (unsigned long long)offs[i]);
        check_rec(&r);
    }
    (void)eg_spill_scan_at(s, size / 2, &r);
    eg_spill_scan_close(s);
    return 0;
}
