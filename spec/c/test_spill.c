/* test_spill.c — the spill journal: frame format, append/scan round trips,
 * rotation, every kind of bad frame (each costs only itself: the scan
 * resynchronises), thousands of seeded damaged segments against an exact
 * oracle, the directory lock, the frame cap, sequence continuity, a failing
 * write, and the drainer against an in-process mock cluster (delivery, a
 * lane that is down, a damaged frame mid-segment, frames Kafka refuses for
 * good: stubs and the .refused side file, a segment whose topic lacks the
 * partition, the libevent attachment that seals the active segment), and a
 * hostile directory: symbolic links planted for LOCK, a segment and a
 * .refused file are refused and their targets stay unchanged, a FIFO or a
 * hard link in their place too, a directory writable by group or others or
 * owned by another user is refused with a clear error. */
#include "kcli.h"
#include "record.h"
#include "spill.h"
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ helpers */

static void tmpdir(char *out, size_t n) {
    eg_strlcpy(out, "/tmp/eg-spill-test.XXXXXX", n);
    if (!mkdtemp(out)) abort();
}

static void rm_rf(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void seg_path(const char *dir, uint64_t seq, char *out, size_t n) {
    snprintf(out, n, "%s/spill-%016llu.eg", dir, (unsigned long long)seq);
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int bytes_eq(const void *a, size_t al, const void *b, size_t bl) {
    if (!a || !b) return !a && !b; /* nil only equals nil */
    return al == bl && (al == 0 || memcmp(a, b, al) == 0);
}

/* Headers of an appended record, flattened: the array, then kheaders. */
static size_t flat_headers(const eg_spill_rec *r, eg_spill_header *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < r->nheaders && n < cap; i++) out[n++] = r->headers[i];
    for (size_t i = 0; r->kheaders && n < cap; i++) {
        const char *name;
        const void *v;
        size_t len;
        if (rd_kafka_header_get_all(r->kheaders, i, &name, &v, &len) != 0) break;
        out[n++] = (eg_spill_header){name, v, len};
    }
    return n;
}

static int rec_eq(const eg_spill_rec *want, const eg_spill_rec *got) {
    eg_spill_header wh[32];
    size_t n = flat_headers(want, wh, 32);
    if (strcmp(want->topic, got->topic) || want->partition != got->partition ||
        (want->timestamp_ms < 0 ? -1 : want->timestamp_ms) != got->timestamp_ms ||
        !bytes_eq(want->key, want->key_len, got->key, got->key_len) ||
        !bytes_eq(want->value, want->value_len, got->value, got->value_len) || n != got->nheaders)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(wh[i].name, got->headers[i].name) ||
            !bytes_eq(wh[i].value, wh[i].value_len, got->headers[i].value, got->headers[i].value_len))
            return 0;
    return 1;
}

/* Appends record i: topic, partition i % 4, timestamp base + i, key and
 * header "n" = "key-i", a value of vlen bytes 'a' + i % 26. */
static int append_one(eg_spill *j, const char *topic, int i, size_t vlen, int64_t base) {
    char *v = eg_xmalloc(vlen + 1);
    char err[256], key[16];
    memset(v, 'a' + i % 26, vlen);
    snprintf(key, sizeof key, "key-%d", i);
    eg_spill_header h[1] = {{"n", key, strlen(key)}};
    eg_spill_rec r = {.topic = topic,
                      .partition = i % 4,
                      .timestamp_ms = base + i,
                      .key = key,
                      .key_len = strlen(key),
                      .value = v,
                      .value_len = vlen,
                      .headers = h,
                      .nheaders = 1};
    int rc = eg_spill_append(j, &r, err, sizeof err);
    if (rc) fprintf(stderr, "# append %d: %s\n", i, err);
    free(v);
    return rc;
}

static int append_n(eg_spill *j, const char *topic, int n, size_t vlen, int64_t base) {
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) rc = append_one(j, topic, i, vlen, base);
    return rc;
}

/* Scans path to its end, past damage: good frames, and -1 when damage was
 * met (the state of the first damage in *st), else 0. */
static int scan_count(const char *path, uint64_t *frames, eg_spill_scan_state *st) {
    char err[256];
    eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
    if (!s) return -2;
    eg_spill_rec r;
    int rc, bad = 0;
    while ((rc = eg_spill_scan_next(s, &r)) != 0 && !eg_spill_scan_state_get(s)->ioerr)
        if (rc < 0 && !bad++ && st) *st = *eg_spill_scan_state_get(s);
    *frames = eg_spill_scan_state_get(s)->frames;
    if (st && !bad) *st = *eg_spill_scan_state_get(s);
    eg_spill_scan_close(s);
    return bad ? -1 : 0;
}

static void flip_byte(const char *path, long off) {
    int fd = open(path, O_RDWR);
    unsigned char c;
    if (fd < 0 || pread(fd, &c, 1, off) != 1) abort();
    c ^= 0x5a;
    if (pwrite(fd, &c, 1, off) != 1) abort();
    close(fd);
}

/* ------------------------------------------------------------------- format */

static void test_crc(void) {
    CHECK(eg_crc32(0, "123456789", 9) == 0xCBF43926u, "CRC-32 check value of \"123456789\" is cbf43926");
    CHECK(eg_crc32(eg_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u, "CRC-32 continues across calls");
    CHECK(eg_crc32(0, "", 0) == 0, "CRC-32 of nothing is 0");
}

static void test_round_trip(void) {
    char dir[64], path[4096], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(j != NULL, "open a fresh journal (%s)", j ? "ok" : err);
    if (!j) return;

    static const char k0[] = {'a', 0, 'b', 0};
    static const unsigned char v0[] = {0, 1, 2, 0xff, 0, 0x80};
    eg_spill_header h0[] = {{"bin", "\0\0", 2}, {"nil", NULL, 0}, {"empty", "", 0}, {"dup", "1", 1}, {"dup", "2", 1}};
    char *big = eg_xmalloc(100000);
    for (int i = 0; i < 100000; i++) big[i] = (char)(i * 7);
    rd_kafka_headers_t *kh = rd_kafka_headers_new(4);
    rd_kafka_header_add(kh, "k-bin", -1, "\0x\0", 3);
    rd_kafka_header_add(kh, "k-nil", -1, NULL, 0);
    eg_spill_header h3[] = {{"first", "f", 1}};
    eg_spill_rec recs[] = {
        {.topic = "payments.dlq",
         .partition = 3,
         .timestamp_ms = 1700000000123LL,
         .key = k0,
         .key_len = sizeof k0,
         .value = v0,
         .value_len = sizeof v0,
         .headers = h0,
         .nheaders = 5},
        {.topic = "t", .partition = -1, .timestamp_ms = -1},                       /* nil key and value */
        {.topic = "t", .partition = 0, .timestamp_ms = 0, .key = "", .value = ""}, /* empty, not nil */
        {.topic = "t",
         .partition = 2147483647,
         .timestamp_ms = 5,
         .key = "k",
         .key_len = 1,
         .value = big,
         .value_len = 100000,
         .headers = h3,
         .nheaders = 1,
         .kheaders = kh},
    };
    int n = (int)(sizeof recs / sizeof recs[0]), ok = 1;
    for (int i = 0; i < n; i++) ok &= eg_spill_append(j, &recs[i], err, sizeof err) == 0;
    CHECK(ok, "append records with binary keys, values and headers (NULs, nil, empty, kheaders)");
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(st.frames_appended == 4 && st.segments == 1 && st.bytes_pending == st.bytes_appended,
          "counters: 4 frames, 1 segment, pending bytes = appended bytes");
    CHECK(eg_spill_active_seq(j) == 1 && eg_spill_active_frames(j) == 4, "active segment 1 holds 4 frames");
    seg_path(dir, 1, path, sizeof path);
    CHECK(file_size(path) == (long)st.bytes_appended, "the segment file holds exactly the appended bytes");

    /* the first frame, byte by byte, as spill.h documents it */
    unsigned char hdr[16];
    int fd = open(path, O_RDONLY);
    ssize_t got = fd >= 0 ? pread(fd, hdr, sizeof hdr, 0) : -1;
    uint32_t len = (uint32_t)hdr[4] << 24 | (uint32_t)hdr[5] << 16 | (uint32_t)hdr[6] << 8 | hdr[7];
    uint32_t crc = (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 | (uint32_t)hdr[10] << 8 | hdr[11];
    unsigned char *payload = eg_xmalloc(len ? len : 1);
    int pay_ok = fd >= 0 && pread(fd, payload, len, 12) == (ssize_t)len;
    if (fd >= 0) close(fd);
    CHECK(got == 16 && memcmp(hdr, "EGS1", 4) == 0, "frame starts with the magic EGS1");
    CHECK(pay_ok && eg_crc32(0, payload, len) == crc, "big-endian length and CRC-32 of the payload");
    CHECK(pay_ok && payload[0] == 0x86 && payload[1] == 0xa5 && memcmp(payload + 2, "topic", 5) == 0,
          "payload is a 6-entry map whose first key is \"topic\"");
    free(payload);

    eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
    int same = s != NULL;
    for (int i = 0; s && i < n; i++) {
        eg_spill_rec r;
        int rc = eg_spill_scan_next(s, &r);
        if (rc != 1 || !rec_eq(&recs[i], &r)) {
            same = 0;
            fprintf(stderr, "# record %d differs (rc %d)\n", i, rc);
        }
    }
    eg_spill_rec r;
    CHECK(same, "scan returns the 4 records unchanged, nil and empty kept apart");
    CHECK(s && eg_spill_scan_next(s, &r) == 0 && !eg_spill_scan_state_get(s)->bad, "then a clean end");
    /* the file grows: a scanner at its end sees the new frame */
    eg_spill_rec more = {.topic = "t", .partition = 1, .timestamp_ms = 9, .value = "later", .value_len = 5};
    CHECK(eg_spill_append(j, &more, err, sizeof err) == 0 && s && eg_spill_scan_next(s, &r) == 1 && rec_eq(&more, &r),
          "a scan at the end picks up a frame appended since");
    uint64_t off1 = 0;
    if (s) {
        eg_spill_scan_close(s);
        s = eg_spill_scan_open(path, err, sizeof err);
        eg_spill_scan_next(s, &r);
        eg_spill_scan_next(s, &r);
        off1 = eg_spill_scan_state_get(s)->offset;
        eg_spill_scan_next(s, &r);
        CHECK(eg_spill_scan_at(s, off1, &r) == 1 && rec_eq(&recs[1], &r), "scan_at re-reads a frame by offset");
        CHECK(eg_spill_scan_next(s, &r) == 1 && rec_eq(&recs[3], &r), "scan_at does not move the scan");
        CHECK(eg_spill_scan_at(s, off1 + 1, &r) == -1 && strstr(eg_spill_scan_state_get(s)->reason, "magic"),
              "scan_at at a wrong offset is refused (%s)", eg_spill_scan_state_get(s)->reason);
        eg_spill_scan_close(s);
    }
    eg_spill_close(j);
    rd_kafka_headers_destroy(kh);
    free(big);
    rm_rf(dir);
}

static void test_rotation(void) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.segment_bytes = 1000}, err, sizeof err);
    if (!j) return;
    int ok = append_n(j, "rot", 20, 150, 1000) == 0;
    eg_spill_seg *v;
    size_t n = 0;
    eg_spill_list(dir, &v, &n, err, sizeof err);
    int small = 1;
    for (size_t i = 0; i < n; i++) small &= v[i].bytes <= 1000 && !v[i].corrupt && v[i].seq == i + 1;
    CHECK(ok && n >= 4 && small, "segments rotate before passing 1000 bytes (%zu segments)", n);
    /* every record, in order, across the segments */
    int64_t want = 1000;
    int inorder = 1;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
        eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
        eg_spill_rec r;
        while (s && eg_spill_scan_next(s, &r) == 1) inorder &= r.timestamp_ms == want++;
        eg_spill_scan_close(s);
    }
    CHECK(inorder && want == 1020, "the 20 records scan back in order across segments");
    uint64_t before = eg_spill_active_seq(j);
    CHECK(eg_spill_seal(j, err, sizeof err) == 0 && eg_spill_active_seq(j) == 0, "seal closes the active segment");
    append_n(j, "rot", 1, 10, 5000);
    CHECK(eg_spill_active_seq(j) == before + 1, "the next append starts a new segment");
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(st.segments == n + 1 && st.segments_sealed == n, "counters: %llu segments, %llu sealed",
          (unsigned long long)st.segments, (unsigned long long)st.segments_sealed);
    free(v);
    eg_spill_close(j);
    rm_rf(dir);
}

/* A segment of 5 frames; returns the offset of the last one. */
static long five_frames(const char *dir, char *path, size_t pathlen) {
    char err[256];
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    append_n(j, "bad", 4, 40, 0);
    seg_path(dir, eg_spill_active_seq(j), path, pathlen);
    long last = file_size(path);
    append_n(j, "bad", 1, 40, 4);
    eg_spill_close(j);
    return last;
}

static void test_bad_frames(void) {
    char dir[64], path[4096];
    uint64_t frames;
    eg_spill_scan_state st;

    tmpdir(dir, sizeof dir);
    long last = five_frames(dir, path, sizeof path);
    long size = file_size(path);
    flip_byte(path, size - 3);
    int rc = scan_count(path, &frames, &st);
    CHECK(rc == -1 && frames == 4 && st.bad && !st.torn && (long)st.offset == last &&
              (long)(st.offset + st.bad_len) == size && strstr(st.reason, "CRC"),
          "a flipped byte in the last frame: 4 good frames, bytes %ld..%ld lost (%s)", last, size, st.reason);
    eg_spill_scan *s = eg_spill_scan_open(path, st.reason, sizeof st.reason);
    eg_spill_rec r;
    while (eg_spill_scan_next(s, &r) != 0) {}
    CHECK(eg_spill_scan_next(s, &r) == 0 && eg_spill_scan_state_get(s)->frames == 4 &&
              eg_spill_scan_state_get(s)->damaged == 1,
          "after the damage the scan ends cleanly");
    eg_spill_scan_close(s);
    rm_rf(dir);

    /* a flipped byte in the second frame: the three after it are read */
    tmpdir(dir, sizeof dir);
    five_frames(dir, path, sizeof path);
    long fb = file_size(path) / 5; /* the five frames have the same size */
    flip_byte(path, fb + 20);
    s = eg_spill_scan_open(path, st.reason, sizeof st.reason);
    int seen[5] = {0}, damage = 0, order_ok = 1;
    int64_t prev_ts = -1;
    while ((rc = eg_spill_scan_next(s, &r)) != 0) {
        const eg_spill_scan_state *ss = eg_spill_scan_state_get(s);
        if (rc < 0) {
            damage += (long)ss->offset == fb && (long)ss->bad_len == fb ? 1 : 100;
            continue;
        }
        if (r.timestamp_ms >= 0 && r.timestamp_ms < 5) seen[r.timestamp_ms]++;
        order_ok &= r.timestamp_ms > prev_ts;
        prev_ts = r.timestamp_ms;
    }
    CHECK(damage == 1 && seen[0] == 1 && seen[1] == 0 && seen[2] == 1 && seen[3] == 1 && seen[4] == 1 && order_ok,
          "a flipped byte in frame 2 of 5: exactly bytes %ld..%ld lost, frames 1, 3, 4, 5 read in order", fb, 2 * fb);
    eg_spill_scan_close(s);
    rm_rf(dir);

    tmpdir(dir, sizeof dir);
    last = five_frames(dir, path, sizeof path);
    if (truncate(path, file_size(path) - 7) != 0) abort();
    rc = scan_count(path, &frames, &st);
    CHECK(rc == -1 && frames == 4 && st.torn && (long)st.offset == last && strstr(st.reason, "torn"),
          "a payload cut short (torn write) is reported as torn after 4 frames (%s)", st.reason);
    if (truncate(path, last + 5) != 0) abort();
    rc = scan_count(path, &frames, &st);
    CHECK(rc == -1 && frames == 4 && st.torn && st.bad_len == 5 && strstr(st.reason, "header"),
          "a header cut short is reported as torn, 5 bytes lost (%s)", st.reason);
    if (truncate(path, last) != 0) abort();
    rc = scan_count(path, &frames, &st);
    CHECK(rc == 0 && frames == 4 && !st.bad, "cut at a frame boundary: a clean end after 4 frames");
    rm_rf(dir);

    tmpdir(dir, sizeof dir);
    last = five_frames(dir, path, sizeof path);
    flip_byte(path, 0);
    rc = scan_count(path, &frames, &st);
    CHECK(rc == -1 && frames == 4 && st.offset == 0 && (long)st.bad_len == file_size(path) / 5 &&
              strstr(st.reason, "magic"),
          "a bad magic in the first frame: it alone is lost, the 4 after it are read (%s)", st.reason);
    rm_rf(dir);

    /* frames with a valid CRC but a bad length or payload */
    struct {
        const char *what, *payload, *expect;
        size_t len;
        uint32_t declared;
    } cases[] = {
        {"not MessagePack", "\xc1\xc1\xc1", "not MessagePack", 3, 0},
        {"a map without partition", "\x81\xa5topic\xa1x", "no \"partition\"", 9, 0},
        {"a string, not a map",
         "\xa3"
         "abc",
         "not a map", 4, 0},
        {"trailing bytes after the map", "\x80\x00", "after the map", 2, 0},
        {"a length over the cap", "x", "length", 1, 0x7fffffffu},
        {"a zero length", "", "length", 0, 0},
        /* containers whose declared counts would make msgpack-c allocate GiBs */
        {"an array declaring 2^32-1 elements", "\xdd\xff\xff\xff\xff", "count larger than the payload", 5, 0},
        {"a header array declaring 2^28 entries", "\x81\xa7headers\xdd\x10\x00\x00\x00",
         "count larger than the payload", 14, 0},
        {"a map declaring 65535 entries", "\xde\xff\xff\xa1k\xc0", "count larger than the payload", 6, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmpdir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/spill-0000000000000001.eg", dir);
        unsigned char h[12] = {'E', 'G', 'S', '1'};
        uint32_t len = cases[i].declared ? cases[i].declared : (uint32_t)cases[i].len;
        uint32_t crc = eg_crc32(0, cases[i].payload, cases[i].len);
        for (int b = 0; b < 4; b++) {
            h[4 + b] = (unsigned char)(len >> (24 - 8 * b));
            h[8 + b] = (unsigned char)(crc >> (24 - 8 * b));
        }
        FILE *f = fopen(path, "wb");
        fwrite(h, 1, sizeof h, f);
        fwrite(cases[i].payload, 1, cases[i].len, f);
        fclose(f);
        rc = scan_count(path, &frames, &st);
        CHECK(rc == -1 && frames == 0 && !st.torn && strstr(st.reason, cases[i].expect), "%s is a bad frame (%s)",
              cases[i].what, st.reason);
        rm_rf(dir);
    }
}

/* ---------------------------------------------------- damaged journals */

/* A small deterministic PRNG (xorshift64*), so a failing seed can be re-run. */
static uint64_t rnd_state;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state >> 12;
    rnd_state ^= rnd_state << 25;
    rnd_state ^= rnd_state >> 27;
    return rnd_state * 0x2545F4914F6CDD1DULL;
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

#define DMG_FRAMES 160

typedef struct dmg_frame {
    uint64_t off, len;
} dmg_frame;

typedef struct dmg_seen {
    uint64_t foff[DMG_FRAMES + 8], flen[DMG_FRAMES + 8];
    int64_t fts[DMG_FRAMES + 8];
    size_t nf;
    uint64_t doff[DMG_FRAMES + 8], dlen[DMG_FRAMES + 8];
    size_t nd;
} dmg_seen;

static int dmg_cb(void *arg, const eg_spill_rec *rec, uint64_t off, uint64_t len, const char *reason) {
    dmg_seen *d = arg;
    if (rec && d->nf < DMG_FRAMES + 8) {
        d->foff[d->nf] = off;
        d->flen[d->nf] = len;
        d->fts[d->nf++] = rec->timestamp_ms;
    } else if (!rec && d->nd < DMG_FRAMES + 8) {
        d->doff[d->nd] = off;
        d->dlen[d->nd++] = len;
    }
    return 0;
}

/* The same through a file scanner. */
static int dmg_scan_file(const char *path, dmg_seen *d) {
    char err[256];
    eg_spill_scan *s = eg_spill_scan_open(path, err, sizeof err);
    if (!s) return -1;
    eg_spill_rec r;
    int rc;
    const eg_spill_scan_state *st = eg_spill_scan_state_get(s);
    while ((rc = eg_spill_scan_next(s, &r)) != 0 && !st->ioerr)
        dmg_cb(d, rc == 1 ? &r : NULL, st->offset, rc == 1 ? eg_spill_scan_frame_bytes(s) : st->bad_len, NULL);
    rc = st->ioerr ? -1 : 0;
    eg_spill_scan_close(s);
    return rc;
}

/* Real segment bytes (written by eg_spill_append: DMG_FRAMES frames of
 * varied sizes, timestamps 0..), damaged at random per seed: a few bytes
 * flipped at random positions, sometimes a cut, sometimes garbage appended
 * (some of it shaped like frame headers). The oracle: a frame is intact when
 * none of its bytes changed and it lies before the cut; the scan must read
 * exactly the intact frames, and report as lost exactly the bytes from each
 * run of damaged frames (plus the garbage) to the next intact frame. */
static void test_damaged_journal(void) {
    char dir[64], path[4096], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    dmg_frame fr[DMG_FRAMES];
    seg_path(dir, 1, path, sizeof path);
    rnd_state = 42;
    for (int i = 0; i < DMG_FRAMES; i++) {
        fr[i].off = (uint64_t)(i ? fr[i - 1].off + fr[i - 1].len : 0);
        size_t vlen = rnd_below(400);
        unsigned char v[400], key[12];
        for (size_t b = 0; b < vlen; b++) v[b] = (unsigned char)rnd();
        for (size_t b = 0; b < sizeof key; b++) key[b] = (unsigned char)rnd();
        eg_spill_header h[2] = {{"h", key, 4}, {"n", NULL, 0}};
        eg_spill_rec r = {.topic = "dmg",
                          .partition = i % 3,
                          .timestamp_ms = i,
                          .key = i % 4 ? key : NULL,
                          .key_len = sizeof key,
                          .value = vlen ? v : NULL,
                          .value_len = vlen,
                          .headers = h,
                          .nheaders = (size_t)(i % 3)};
        if (eg_spill_append(j, &r, err, sizeof err) != 0) abort();
        fr[i].len = (uint64_t)file_size(path) - fr[i].off;
    }
    eg_spill_close(j);
    long clean_len = file_size(path);
    unsigned char *clean = eg_xmalloc((size_t)clean_len), *buf = eg_xmalloc((size_t)clean_len + 600);
    FILE *f = fopen(path, "rb");
    if (!f || fread(clean, 1, (size_t)clean_len, f) != (size_t)clean_len) abort();
    fclose(f);

    dmg_seen *got = eg_xcalloc(1, sizeof *got), *gotf = eg_xcalloc(1, sizeof *gotf);
    int seeds = 3000, failures = 0, file_runs = 0, flips_total = 0, lost_frames = 0;
    for (int seed = 1; seed <= seeds; seed++) {
        rnd_state = 0x9E3779B97F4A7C15ULL * (uint64_t)seed;
        memcpy(buf, clean, (size_t)clean_len);
        size_t len = (size_t)clean_len;
        int damaged[DMG_FRAMES] = {0};
        int nflip = 1 + (int)rnd_below(6);
        flips_total += nflip;
        for (int k = 0; k < nflip; k++) {
            size_t pos = rnd_below(len);
            buf[pos] ^= (unsigned char)(1 + rnd_below(255));
            for (int i = 0; i < DMG_FRAMES; i++)
                if (pos >= fr[i].off && pos < fr[i].off + fr[i].len) damaged[i] = 1;
        }
        size_t cut = len;
        if (rnd_below(3) == 0) {
            cut = rnd_below(len);
            len = cut;
            for (int i = 0; i < DMG_FRAMES; i++)
                if (fr[i].off + fr[i].len > cut) damaged[i] = 1;
        }
        size_t garbage = 0;
        if (rnd_below(3) == 0) {
            garbage = 1 + rnd_below(500);
            for (size_t b = 0; b < garbage; b++) buf[len + b] = (unsigned char)rnd();
            if (garbage >= 12 && rnd_below(2)) memcpy(buf + len + rnd_below(garbage - 11), "EGS1\0\0\0\x10", 8);
            len += garbage;
        }
        /* the oracle: intact frames, and damaged runs up to the next intact frame */
        dmg_seen want = {0};
        uint64_t run_start = UINT64_MAX;
        for (int i = 0; i < DMG_FRAMES; i++) {
            if (fr[i].off >= cut) break;
            if (damaged[i]) {
                lost_frames++;
                if (run_start == UINT64_MAX) run_start = fr[i].off;
                continue;
            }
            if (run_start != UINT64_MAX) {
                want.doff[want.nd] = run_start;
                want.dlen[want.nd++] = fr[i].off - run_start;
                run_start = UINT64_MAX;
            }
            want.foff[want.nf] = fr[i].off;
            want.flen[want.nf] = fr[i].len;
            want.fts[want.nf++] = i;
        }
        if (run_start == UINT64_MAX && garbage) run_start = cut;
        if (run_start != UINT64_MAX) {
            want.doff[want.nd] = run_start;
            want.dlen[want.nd++] = len - run_start;
        }
        memset(got, 0, sizeof *got);
        eg_spill_scan_buf(buf, len, dmg_cb, got);
        int same = got->nf == want.nf && got->nd == want.nd;
        for (size_t i = 0; same && i < want.nf; i++)
            same = got->foff[i] == want.foff[i] && got->flen[i] == want.flen[i] && got->fts[i] == want.fts[i];
        for (size_t i = 0; same && i < want.nd; i++)
            same = got->doff[i] == want.doff[i] && got->dlen[i] == want.dlen[i];
        if (same && seed % 50 == 0) { /* the file scanner reads the same */
            char dpath[4200];
            snprintf(dpath, sizeof dpath, "%s/damaged.eg", dir);
            FILE *o = fopen(dpath, "wb");
            if (!o || fwrite(buf, 1, len, o) != len) abort();
            fclose(o);
            memset(gotf, 0, sizeof *gotf);
            same = dmg_scan_file(dpath, gotf) == 0 && memcmp(gotf, got, sizeof *got) == 0;
            file_runs++;
            unlink(dpath);
        }
        if (!same && failures++ < 3) {
            fprintf(stderr, "# seed %d: %d flips, cut %zu, garbage %zu: want %zu frames %zu regions, got %zu %zu\n",
                    seed, nflip, cut, garbage, want.nf, want.nd, got->nf, got->nd);
            for (size_t i = 0; i < want.nd; i++)
                fprintf(stderr, "#   want lost %llu..%llu\n", (unsigned long long)want.doff[i],
                        (unsigned long long)(want.doff[i] + want.dlen[i]));
            for (size_t i = 0; i < got->nd; i++)
                fprintf(stderr, "#   got  lost %llu..%llu\n", (unsigned long long)got->doff[i],
                        (unsigned long long)(got->doff[i] + got->dlen[i]));
        }
    }
    CHECK(failures == 0,
          "%d seeds of damage (%d flipped bytes, cuts, garbage) over %d real frames: every intact frame read, "
          "exactly the damaged ones lost (%d in all) with exact byte ranges; %d seeds also through the file "
          "scanner (%d mismatches)",
          seeds, flips_total, DMG_FRAMES, lost_frames, file_runs, failures);
    free(got);
    free(gotf);
    free(clean);
    free(buf);
    rm_rf(dir);
}

static int count_cb(void *arg, const eg_spill_rec *rec, uint64_t off, uint64_t len, const char *reason) {
    int *n = arg;
    n[rec ? 0 : 1]++;
    return 0;
}

/* A crafted segment: one good frame, then a frame header with a long declared
 * length (and a wrong CRC) every 16 bytes. Each resync candidate would be
 * CRC-checked over megabytes: without a bound on that work the scan runs
 * for hours on the event loop; with it, the scan ends quickly, the good
 * frame is read and the rest is one damaged region. */
static void test_resync_bound(void) {
    char dir[64], path[4096], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    eg_spill_rec r = {.topic = "t", .partition = 1, .timestamp_ms = 1, .value = "v", .value_len = 1};
    if (!j || eg_spill_append(j, &r, err, sizeof err) != 0) abort();
    eg_spill_close(j);
    seg_path(dir, 1, path, sizeof path);
    size_t n = (size_t)24 << 20, first = (size_t)file_size(path);
    unsigned char *buf = eg_xcalloc(1, n);
    FILE *f = fopen(path, "rb");
    if (!f || fread(buf, 1, first, f) != first) abort();
    fclose(f);
    for (size_t off = first; off + 16 <= n; off += 16) {
        memcpy(buf + off, EG_SPILL_MAGIC, 4);
        uint32_t len = (uint32_t)(n - off - 12 < EG_SPILL_FRAME_MAX ? n - off - 12 : EG_SPILL_FRAME_MAX);
        for (int b = 0; b < 4; b++) buf[off + 4 + b] = (unsigned char)(len >> (24 - 8 * b));
    }
    int counts[2] = {0, 0};
    int64_t t0 = eg_now_ms();
    eg_spill_scan_buf(buf, n, count_cb, counts);
    int64_t ms = eg_now_ms() - t0;
    CHECK(counts[0] == 1 && counts[1] == 1, "crafted segment: the good frame and one damaged region (%d, %d)",
          counts[0], counts[1]);
    CHECK(ms < 5000, "crafted segment: the resync's work is bounded (%lld ms)", (long long)ms);
    free(buf);
    rm_rf(dir);
}

static void test_lock(void) {
    char dir[64], sub[128], err[256], err2[256], owner[128], active[64];
    tmpdir(dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s/journal", dir);
    eg_spill *a = eg_spill_open(sub, &(eg_spill_opts){.role = "gateway"}, err, sizeof err);
    struct stat st;
    CHECK(a && stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
          "open creates a missing directory with mode 0700");
    eg_spill *b = eg_spill_open(sub, NULL, err2, sizeof err2);
    char pid[32];
    snprintf(pid, sizeof pid, "pid=%d", (int)getpid());
    CHECK(!b && strstr(err2, "locked") && strstr(err2, pid) && strstr(err2, "role=gateway"),
          "a second opener is refused, naming the owner (%s)", err2);
    eg_spill_close(b);
    append_n(a, "t", 1, 1, 0);
    CHECK(eg_spill_lock_owner(sub, owner, sizeof owner, active, sizeof active) == 1 && strstr(owner, "role=gateway") &&
              strcmp(active, "spill-0000000000000001.eg") == 0,
          "the lock probe names the owner and its active segment (%s, %s)", owner, active);
    eg_spill_close(a);
    CHECK(eg_spill_lock_owner(sub, owner, sizeof owner, active, sizeof active) == 0, "closed: nobody holds the lock");
    b = eg_spill_open(sub, NULL, err2, sizeof err2);
    CHECK(b != NULL, "after close the journal opens again");
    eg_spill_close(b);
    char file[160];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    b = eg_spill_open(file, NULL, err2, sizeof err2);
    CHECK(!b && strstr(err2, "not a directory"), "a path that is a file is refused (%s)", err2);
    unlink(file);
    rm_rf(sub);
    rm_rf(dir);
}

/* 1 when path holds exactly text. */
static int file_is(const char *path, const char *text) {
    char buf[256];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

/* Everything errgate opens in a journal directory is opened without
 * following links and checked to be a regular file; the directory must be
 * the running user's own and writable by nobody else (issue 28, item 4). */
static void test_hostile_dir(void) {
    char outside[64], dir[64], victim[128], p[256], err[512], owner[128], active[64];
    tmpdir(outside, sizeof outside);
    tmpdir(dir, sizeof dir);
    snprintf(victim, sizeof victim, "%s/victim", outside);
    const char *precious = "precious bytes\n";
    write_text(victim, precious);

    snprintf(p, sizeof p, "%s/LOCK", dir);
    if (symlink(victim, p) != 0) abort();
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "LOCK: is a symbolic link") && file_is(victim, precious),
          "a symbolic link planted as LOCK is refused, its target unchanged (%s)", err);
    CHECK(eg_spill_lock_owner(dir, owner, sizeof owner, active, sizeof active) == -1,
          "the lock probe does not follow it either");
    eg_spill_close(j);
    unlink(p);
    if (link(victim, p) != 0) abort();
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "LOCK: has more than one link") && file_is(victim, precious),
          "a hard link planted as LOCK is refused, its target unchanged (%s)", err);
    eg_spill_close(j);
    unlink(p);
    if (mkfifo(p, 0600) != 0) abort();
    CHECK(eg_spill_lock_owner(dir, owner, sizeof owner, active, sizeof active) == -1,
          "a FIFO as LOCK: the lock probe neither hangs nor reads it");
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "LOCK: not a regular file"), "a FIFO as LOCK is refused (%s)", err);
    eg_spill_close(j);
    unlink(p);

    /* a segment name and a .refused name taken by links to the victim */
    char seg1[160], refused1[192];
    seg_path(dir, 1, seg1, sizeof seg1);
    snprintf(refused1, sizeof refused1, "%s.refused", seg1);
    if (symlink(victim, seg1) != 0 || symlink(victim, refused1) != 0) abort();
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(j != NULL, "the journal opens beside planted segment links (%s)", j ? "ok" : err);
    if (j) {
        CHECK(append_one(j, "t", 1, 10, 0) == 0 && eg_spill_active_seq(j) == 2 && file_is(victim, precious),
              "an append skips the segment name a link holds and writes segment 2; the target is unchanged");
        eg_spill_rec r = {.topic = "t", .partition = 0, .timestamp_ms = 1, .value = "v", .value_len = 1};
        CHECK(eg_spill_set_aside(j, 1, &r, err, sizeof err) != 0 && strstr(err, "is a symbolic link") &&
                  file_is(victim, precious),
              "a frame set aside for segment 1 is not written through its .refused link (%s)", err);
        eg_spill_stats st;
        eg_spill_stats_get(j, &st);
        CHECK(st.segments == 1, "the links are not counted as segments (%llu)", (unsigned long long)st.segments);
        eg_spill_close(j);
    }
    eg_spill_scan *sc = eg_spill_scan_open(seg1, err, sizeof err);
    CHECK(!sc && strstr(err, "is a symbolic link"), "the scanner refuses a segment that is a link (%s)", err);
    eg_spill_scan_close(sc);
    unlink(seg1);
    unlink(refused1);
    if (mkfifo(seg1, 0600) != 0) abort();
    sc = eg_spill_scan_open(seg1, err, sizeof err);
    CHECK(!sc && strstr(err, "not a regular file"), "the scanner refuses a FIFO without hanging (%s)", err);
    eg_spill_scan_close(sc);
    unlink(seg1);

    /* the directory itself */
    chmod(dir, 0777);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "writable by everyone (mode 0777)") && strstr(err, "chmod go-w"),
          "a world-writable journal directory is refused with a clear error (%s)", err);
    eg_spill_close(j);
    chmod(dir, 0770);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "writable by its group"), "a group-writable one too (%s)", err);
    eg_spill_close(j);
    chmod(dir, 0755);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(j != NULL, "0755, the owner's: it opens (%s)", j ? "ok" : err);
    eg_spill_close(j);
    if (geteuid() == 0) {
        if (chown(dir, 65534, 65534) != 0) abort();
        j = eg_spill_open(dir, NULL, err, sizeof err);
        CHECK(!j && strstr(err, "owned by uid 65534, not by this user"),
              "a directory owned by another user is refused (%s)", err);
        eg_spill_close(j);
    }
    CHECK(file_is(victim, precious), "the victim file was never changed");
    rm_rf(dir);
    rm_rf(outside);
}

/* eg_spill_lock_owner seen from another process (flock is per open file,
 * so this process's own lock cannot be probed from here: fork). */
static void test_lock_other_process(void) {
    char dir[64], err[256], owner[128], active[64];
    tmpdir(dir, sizeof dir);
    int fds[2];
    if (pipe(fds) != 0) abort();
    pid_t pid = fork();
    if (pid == 0) {
        eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.role = "child"}, err, sizeof err);
        append_n(j, "t", 1, 1, 0);
        if (write(fds[1], "x", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c;
    if (read(fds[0], &c, 1) != 1) abort();
    int r = eg_spill_lock_owner(dir, owner, sizeof owner, active, sizeof active);
    CHECK(r == 1 && strstr(owner, "role=child") && strcmp(active, "spill-0000000000000001.eg") == 0,
          "ls's probe sees another process's lock and active segment (%s, %s)", owner, active);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(!j && strstr(err, "locked"), "and this process cannot open it (%s)", err);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    CHECK(j != NULL, "after the owner is killed (kill -9) the lock is free");
    eg_spill_close(j);
    close(fds[0]);
    close(fds[1]);
    rm_rf(dir);
}

static void test_cap(void) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.max_frame_bytes = 1024}, err, sizeof err);
    char v[2000];
    memset(v, 'x', sizeof v);
    eg_spill_rec r = {.topic = "cap", .partition = 0, .value = v, .value_len = 2000};
    int rc = eg_spill_append(j, &r, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "cap"), "a 2000-byte value over a 1024-byte cap is refused (%s)", err);
    r.value_len = 1000; /* fits the pre-check, not the encoded size */
    rc = eg_spill_append(j, &r, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "cap"), "the encoded size counts too (%s)", err);
    r.value_len = 900;
    CHECK(eg_spill_append(j, &r, err, sizeof err) == 0, "a 900-byte value fits");
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(st.frames_appended == 1 && st.append_errors == 2 && st.segments == 1, "refused records left no trace");
    r.topic = "";
    CHECK(eg_spill_append(j, &r, err, sizeof err) == -1 && strstr(err, "topic"), "an empty topic is refused");
    r.topic = "t";
    r.partition = -2;
    CHECK(eg_spill_append(j, &r, err, sizeof err) == -1 && strstr(err, "partition"), "partition -2 is refused");
    eg_spill_close(j);
    rm_rf(dir);

    /* the hard cap (64 MiB) without writing 64 MiB: the pre-check refuses */
    tmpdir(dir, sizeof dir);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    char *huge = calloc(EG_SPILL_FRAME_MAX + 1, 1);
    eg_spill_rec hr = {.topic = "cap", .partition = 0, .value = huge, .value_len = EG_SPILL_FRAME_MAX + 1};
    CHECK(huge && eg_spill_append(j, &hr, err, sizeof err) == -1 && strstr(err, "cap"),
          "a 64 MiB + 1 value is refused under the default cap");
    eg_spill_stats_get(j, &st);
    CHECK(st.segments == 0, "and no segment was created");
    free(huge);
    eg_spill_close(j);
    rm_rf(dir);
}

static void test_reopen(void) {
    char dir[64], err[256], p1[4096], p2[4096];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    append_n(j, "re", 3, 20, 0);
    eg_spill_close(j);
    seg_path(dir, 1, p1, sizeof p1);
    long size1 = file_size(p1);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(st.segments == 1 && st.bytes_pending == (uint64_t)size1, "reopen counts the existing segment");
    append_n(j, "re", 1, 20, 3);
    CHECK(eg_spill_active_seq(j) == 2, "reopening continues the sequence (segment 2)");
    eg_spill_close(j);
    seg_path(dir, 2, p2, sizeof p2);
    uint64_t f1, f2;
    CHECK(file_size(p1) == size1 && scan_count(p1, &f1, NULL) == 0 && f1 == 3 && scan_count(p2, &f2, NULL) == 0 &&
              f2 == 1,
          "segment 1 untouched (3 frames), segment 2 holds the new frame");
    /* a torn tail left by a crash in segment 2 is never appended after */
    if (truncate(p2, file_size(p2) - 2) != 0) abort();
    char c3[4096];
    snprintf(c3, sizeof c3, "%s/spill-0000000000000007.eg.corrupt", dir);
    FILE *f = fopen(c3, "w");
    fclose(f);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    append_n(j, "re", 1, 20, 4);
    CHECK(eg_spill_active_seq(j) == 8, "the sequence also passes corrupt segments (now 8)");
    eg_spill_stats_get(j, &st);
    CHECK(st.segments_corrupt == 1 && st.segments == 3, "counters: 3 segments, 1 corrupt");
    eg_spill_close(j);
    eg_spill_scan_state ss;
    CHECK(scan_count(p2, &f2, &ss) == -1 && ss.torn && f2 == 0, "the torn segment stays as it was");
    rm_rf(dir);
}

static void test_write_error(void) {
    char dir[64], err[256], path[4096];
    tmpdir(dir, sizeof dir);
    signal(SIGXFSZ, SIG_IGN);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    append_n(j, "w", 1, 50, 0);
    seg_path(dir, 1, path, sizeof path);
    long size = file_size(path);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)size + 40; /* the next frame gets 40 bytes in, then EFBIG */
    setrlimit(RLIMIT_FSIZE, &lim);
    char v[500] = {0};
    eg_spill_rec r = {.topic = "w", .partition = 0, .value = v, .value_len = sizeof v};
    int rc = eg_spill_append(j, &r, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(rc == -1 && strstr(err, "spill-0000000000000001.eg") && strstr(err, "too large"),
          "a write that fails half-way returns -1 naming the segment and the cause (%s)", err);
    CHECK(file_size(path) == size, "the partial frame was truncated away (%ld bytes, was %ld)", file_size(path), size);
    CHECK(eg_spill_active_seq(j) == 0, "and the segment was sealed");
    CHECK(append_n(j, "w", 1, 50, 2) == 0 && eg_spill_active_seq(j) == 2, "the next append goes to a new segment");
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(st.append_errors == 1 && st.frames_appended == 2, "counters: 2 appended, 1 error");
    eg_spill_close(j);
    uint64_t f1, f2;
    char p2[4096];
    seg_path(dir, 2, p2, sizeof p2);
    CHECK(scan_count(path, &f1, NULL) == 0 && f1 == 1 && scan_count(p2, &f2, NULL) == 0 && f2 == 1,
          "both segments scan clean");
    rm_rf(dir);
}

static void test_retire(void) {
    char dir[64], err[256], path[4096];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.segment_bytes = 100}, err, sizeof err);
    append_n(j, "r", 3, 60, 0); /* one frame per segment */
    CHECK(eg_spill_retire(j, 3, 0, err, sizeof err) == -1 && strstr(err, "active"),
          "the active segment is not retired");
    CHECK(eg_spill_retire(j, 1, 0, err, sizeof err) == 0, "retire deletes segment 1");
    seg_path(dir, 1, path, sizeof path);
    CHECK(file_size(path) == -1, "segment 1 is gone");
    CHECK(eg_spill_retire(j, 2, 1, err, sizeof err) == 0, "retire as corrupt renames segment 2");
    snprintf(path, sizeof path, "%s/spill-0000000000000002.eg.corrupt", dir);
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    CHECK(file_size(path) > 0 && st.segments == 1 && st.segments_corrupt == 1,
          "kept as .corrupt; counters: 1 segment, 1 corrupt");
    CHECK(eg_spill_retire(j, 9, 0, err, sizeof err) == -1, "retiring a missing segment fails");
    eg_spill_close(j);
    rm_rf(dir);
}

/* ------------------------------------------------------------------ drainer */

typedef struct seen {
    int count[400];
    int bad; /* records that differ from what was appended */
    int wrong_part;
} seen;

static void on_msg(const rd_kafka_message_t *m, void *arg) {
    seen *s = arg;
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    int i = (int)(ts - 1000);
    if (i < 0 || i >= 400) {
        s->bad++;
        return;
    }
    s->count[i]++;
    char key[16];
    snprintf(key, sizeof key, "key-%d", i);
    size_t hl = 0;
    const void *h = eg_header(m, "n", &hl);
    if (!bytes_eq(m->key, m->key_len, key, strlen(key)) || !h || !bytes_eq(h, hl, key, strlen(key)) || m->len != 30 ||
        ((const char *)m->payload)[0] != 'a' + i % 26)
        s->bad++;
    int want = strcmp(rd_kafka_topic_name(m->rkt), "small") == 0 ? (i % 4) % 2 : i % 4;
    if (m->partition != want) s->wrong_part++;
}

static int read_back_with(const char *bootstrap, const char *topic, void (*fn)(const rd_kafka_message_t *, void *),
                          void *s) {
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err);
    eg_lread r;
    int rc =
        eg_lread_open(&r, c, NULL, topic, err, sizeof err) == 0 && eg_lread_start(&r, 0, err, sizeof err) == 0 ? 0 : -1;
    for (int k = 0; rc == 0 && k != 2;) {
        rd_kafka_message_t *m = NULL;
        if ((k = eg_lread_next(&r, 200, &m, err, sizeof err)) < 0) rc = -1;
        if (k == 1) {
            fn(m, s);
            rd_kafka_message_destroy(m);
        }
    }
    eg_lread_close(&r);
    if (rc) fprintf(stderr, "# read %s: %s\n", topic, err);
    return rc;
}

static int read_back(const char *bootstrap, const char *topic, seen *s) {
    return read_back_with(bootstrap, topic, on_msg, s);
}

static rd_kafka_conf_t *client_conf(const char *bootstrap, const char *timeout_ms) {
    char err[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof err);
    rd_kafka_conf_set(c, "message.timeout.ms", timeout_ms, err, sizeof err);
    rd_kafka_conf_set(c, "linger.ms", "5", err, sizeof err);
    return c;
}

/* Steps d until done or ms pass. Returns 1 when done. */
static int drain_until_done(eg_spill_drain *d, int ms) {
    int64_t until = eg_now_ms() + ms;
    while (eg_now_ms() < until) {
        if (eg_spill_drain_step(d, 500) < 0) return 0;
        if (eg_spill_drain_done(d)) return 1;
        eg_spill_drain_poll(d, 20);
    }
    return 0;
}

static size_t count_files(const char *dir, const char *suffix) {
    eg_spill_seg *v;
    size_t n, k = 0;
    char err[256];
    if (eg_spill_list(dir, &v, &n, err, sizeof err) != 0) return 999;
    for (size_t i = 0; i < n; i++) k += strcmp(suffix, ".corrupt") == 0 ? v[i].corrupt : !v[i].corrupt;
    free(v);
    return k;
}

static void test_drain(const char *bootstrap, rd_kafka_mock_cluster_t *mc) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.segment_bytes = 2000}, err, sizeof err);
    append_n(j, "lane", 200, 30, 1000);
    eg_spill_close(j);
    size_t nseg = count_files(dir, ".eg");
    j = eg_spill_open(dir, NULL, err, sizeof err);

    /* the lane is down: every delivery fails, nothing is deleted */
    rd_kafka_mock_broker_set_down(mc, 1);
    eg_spill_drain *d =
        eg_spill_drain_new(j, client_conf(bootstrap, "1000"),
                           &(eg_spill_drain_opts){.backoff_min_ms = 100, .backoff_max_ms = 400}, err, sizeof err);
    CHECK(d != NULL, "create a drainer (%s)", d ? "ok" : err);
    if (!d) return;
    drain_until_done(d, 2500);
    eg_spill_drain_stats ds;
    eg_spill_drain_stats_get(d, &ds);
    CHECK(ds.frames_failed > 0 && ds.frames_drained == 0 && count_files(dir, ".eg") == nseg,
          "lane down: %llu failed deliveries, every segment kept (%zu)", (unsigned long long)ds.frames_failed, nseg);
    CHECK(strstr(eg_spill_drain_error(d), "lane") != NULL, "the last error names the topic (%s)",
          eg_spill_drain_error(d));
    rd_kafka_mock_broker_set_up(mc, 1);
    int done = drain_until_done(d, 20000);
    eg_spill_drain_stats_get(d, &ds);
    CHECK(done && ds.frames_drained >= 200 && ds.segments_drained == nseg && ds.inflight == 0,
          "lane back: retried and drained (%llu frames, %llu segments)", (unsigned long long)ds.frames_drained,
          (unsigned long long)ds.segments_drained);
    CHECK(count_files(dir, ".eg") == 0, "and every segment is deleted");
    eg_spill_stats js;
    eg_spill_stats_get(j, &js);
    CHECK(js.segments == 0 && js.bytes_pending == 0, "journal counters: nothing pending");
    eg_spill_drain_free(d, 1000);
    seen *s = eg_xcalloc(1, sizeof *s);
    read_back(bootstrap, "lane", s);
    int missing = 0;
    for (int i = 0; i < 200; i++) missing += s->count[i] == 0;
    CHECK(missing == 0 && s->bad == 0 && s->wrong_part == 0,
          "every record arrived with key, value, header and partition intact (%d missing, %d bad, %d misplaced)",
          missing, s->bad, s->wrong_part);
    free(s);

    /* a corrupt tail: the good frames drain, the segment is kept as .corrupt,
     * the frame after the bad one is never applied */
    eg_spill_close(j);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    append_n(j, "tail", 5, 30, 1000);
    char path[4096];
    seg_path(dir, eg_spill_active_seq(j), path, sizeof path);
    eg_spill_close(j);
    long size = file_size(path);
    flip_byte(path, size - (size / 5) - 3); /* inside the 4th frame */
    j = eg_spill_open(dir, NULL, err, sizeof err);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "5000"), NULL, err, sizeof err);
    done = drain_until_done(d, 10000);
    eg_spill_drain_stats_get(d, &ds);
    CHECK(done && ds.frames_drained == 4 && ds.corrupt_frames == 1 && ds.segments_corrupt == 1 &&
              ds.damaged_bytes == (uint64_t)size / 5,
          "a damaged 4th frame of 5: the 4 intact frames drained, 1 damaged region of %ld bytes reported", size / 5);
    char kept[4200];
    snprintf(kept, sizeof kept, "%s.corrupt", path);
    CHECK(file_size(path) == -1 && file_size(kept) == size, "the segment is renamed .corrupt, bytes untouched");
    eg_spill_drain_free(d, 1000);
    s = eg_xcalloc(1, sizeof *s);
    read_back(bootstrap, "tail", s);
    CHECK(s->count[0] == 1 && s->count[1] == 1 && s->count[2] == 1 && s->count[3] == 0 && s->count[4] == 1,
          "records 0-2 and 4 (after the damage) delivered; 3 (damaged) not");
    free(s);
    unlink(kept);

    /* a topic with fewer partitions: partition p goes to p % 2 */
    rd_kafka_mock_topic_create(mc, "small", 2, 1);
    append_n(j, "small", 8, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "5000"), NULL, err, sizeof err);
    done = drain_until_done(d, 10000);
    eg_spill_drain_free(d, 1000);
    s = eg_xcalloc(1, sizeof *s);
    read_back(bootstrap, "small", s);
    int all = 1;
    for (int i = 0; i < 8; i++) all &= s->count[i] == 1;
    CHECK(done && all && s->wrong_part == 0 && s->bad == 0,
          "a topic lacking partitions 2-3: delivered to partition %% 2 (%d misplaced)", s->wrong_part);
    free(s);
    eg_spill_close(j);
    rm_rf(dir);
}

typedef struct refused_seen {
    int count[8], stub_ok, bad;
} refused_seen;

static void on_refused_msg(const rd_kafka_message_t *m, void *arg) {
    refused_seen *s = arg;
    size_t hl = 0;
    const void *h = eg_header(m, "n", &hl);
    char key[16];
    int i = -1;
    for (int k = 0; k < 8 && i < 0; k++) {
        snprintf(key, sizeof key, "key-%d", k);
        if (m->key && bytes_eq(m->key, m->key_len, key, strlen(key))) i = k;
    }
    if (i < 0) {
        s->bad++;
        return;
    }
    s->count[i]++;
    if (i == 6) return; /* the one refused in its report: either a stub or whole */
    if (i == 2) {       /* the 6000-byte record: a stub without value and source headers */
        const void *vo = eg_header(m, "errgate.value-omitted", &hl);
        const void *ho = eg_header(m, "errgate.headers-omitted", &hl);
        s->stub_ok = m->len == 0 && vo && bytes_eq(vo, 4, "6000", 4) && ho && eg_header(m, "n", &hl) == NULL;
    } else if (!h || m->len != 30) {
        s->bad++;
    }
}

/* Frames Kafka refuses for good never block the frames after them: a frame
 * too large for message.max.bytes goes out as a stub; a frame for a topic
 * whose stub is refused too (its errgate headers alone are too large) is
 * set aside, whole, into spill-N.eg.refused; the good frames before
 * and after them, in the same and in a later segment, are delivered, and
 * both segments are deleted. */
static void test_drain_refused(const char *bootstrap, rd_kafka_mock_cluster_t *mc) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    rd_kafka_mock_topic_create(mc, "big", 4, 1);
    eg_spill *j = eg_spill_open(dir, NULL, err, sizeof err);
    append_one(j, "big", 0, 30, 1000);
    /* frame 1: its errgate headers alone pass message.max.bytes, so its stub
     * is refused too */
    char *big = eg_xmalloc(4000);
    memset(big, 'm', 4000);
    eg_spill_header bh[3] = {{"n", "key-1", 5}, {"error.message", big, 4000}, {"errgate.reason", big, 2000}};
    eg_spill_rec br = {.topic = "big",
                       .partition = 1,
                       .timestamp_ms = 1001,
                       .key = "key-1",
                       .key_len = 5,
                       .value = big,
                       .value_len = 30,
                       .headers = bh,
                       .nheaders = 3};
    CHECK(eg_spill_append(j, &br, err, sizeof err) == 0, "append a frame whose stub is too large too");
    free(big);
    append_one(j, "big", 2, 6000, 1000);
    append_one(j, "big", 3, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    append_one(j, "big", 4, 30, 1000);
    append_one(j, "big", 5, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    rd_kafka_conf_t *c = client_conf(bootstrap, "3000");
    rd_kafka_conf_set(c, "message.max.bytes", "4096", err, sizeof err);
    eg_spill_drain *d = eg_spill_drain_new(j, c, &(eg_spill_drain_opts){.backoff_min_ms = 2000, .backoff_max_ms = 4000},
                                           err, sizeof err);
    int64_t t0 = eg_now_ms();
    int done = drain_until_done(d, 20000);
    int64_t took = eg_now_ms() - t0;
    eg_spill_drain_stats ds;
    eg_spill_drain_stats_get(d, &ds);
    eg_spill_drain_free(d, 1000);
    CHECK(done && ds.frames_stubbed == 1 && ds.frames_set_aside == 1 && ds.frames_drained == 5 &&
              ds.segments_drained == 2 && ds.frames_refused >= 3,
          "refused frames: done in %lld ms, 1 stub, 1 set aside, 5 delivered, 2 segments deleted (%llu refusals)",
          (long long)took, (unsigned long long)ds.frames_refused);
    refused_seen *s = eg_xcalloc(1, sizeof *s);
    read_back_with(bootstrap, "big", on_refused_msg, s);
    CHECK(s->count[0] == 1 && s->count[3] == 1 && s->count[4] == 1 && s->count[5] == 1 && s->bad == 0,
          "the good frames before and after them, in the same and the next segment, were delivered");
    CHECK(s->count[2] == 1 && s->stub_ok,
          "the 6000-byte frame arrived as a stub: no value, errgate.value-omitted=6000, source headers dropped");
    free(s);
    char side[4200];
    snprintf(side, sizeof side, "%s/spill-0000000000000001.eg.refused", dir);
    uint64_t frames = 0;
    eg_spill_scan *sc = eg_spill_scan_open(side, err, sizeof err);
    eg_spill_rec r;
    int denied = 0;
    while (sc && eg_spill_scan_next(sc, &r) == 1)
        denied += r.key_len == 5 && memcmp(r.key, "key-1", 5) == 0 && r.value_len == 30 && r.nheaders == 3;
    if (sc) frames = eg_spill_scan_state_get(sc)->frames;
    eg_spill_scan_close(sc);
    CHECK(frames == 1 && denied == 1, "the frame whose stub was refused is kept, whole, in %s", side + strlen(dir) + 1);
    eg_spill_seg *v;
    size_t n;
    eg_spill_list(dir, &v, &n, err, sizeof err);
    CHECK(n == 1 && v[0].refused && !v[0].corrupt, "the journal lists only the .refused file");
    free(v);
    /* a size refusal in the delivery report (the broker's, not the client's
     * check): the frame goes out as a stub, the next one whole */
    append_one(j, "big", 6, 30, 1000);
    append_one(j, "big", 7, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    rd_kafka_mock_push_request_errors(mc, 0 /* Produce */, 1, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "3000"), &(eg_spill_drain_opts){.max_inflight = 1}, err,
                           sizeof err);
    done = drain_until_done(d, 10000);
    eg_spill_drain_stats_get(d, &ds);
    eg_spill_drain_free(d, 1000);
    CHECK(done && ds.frames_refused == 1 && ds.frames_stubbed == 1 && ds.frames_drained == 2 && ds.backoff_ms == 0,
          "a MSG_SIZE_TOO_LARGE delivery report: the frame went out as a stub, no back-off (%llu refused, %llu "
          "stubs)",
          (unsigned long long)ds.frames_refused, (unsigned long long)ds.frames_stubbed);
    s = eg_xcalloc(1, sizeof *s);
    read_back_with(bootstrap, "big", on_refused_msg, s);
    CHECK(s->count[6] == 1 && s->count[7] == 1, "both arrived once (%d, %d)", s->count[6], s->count[7]);
    free(s);

    /* a reopened journal and drainer leave the side file alone */
    eg_spill_close(j);
    j = eg_spill_open(dir, NULL, err, sizeof err);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "3000"), NULL, err, sizeof err);
    done = drain_until_done(d, 5000);
    eg_spill_drain_stats_get(d, &ds);
    eg_spill_drain_free(d, 1000);
    eg_spill_stats js;
    eg_spill_stats_get(j, &js);
    CHECK(done && ds.frames_produced == 0 && file_size(side) > 0 && js.segments_refused == 1 && js.segments == 0,
          "a new drainer has nothing to do and keeps the .refused file");
    eg_spill_close(j);
    rm_rf(dir);
}

typedef struct attach_ctx {
    eg_spill_drain *d;
    eg_spill *j;
    struct event_base *base;
    struct event *tick;
    int appended;
} attach_ctx;

/* Appends a few records per tick for a while (as a gateway would), then
 * stops the loop once the drainer is done. */
static void on_tick(evutil_socket_t fd, short what, void *arg) {
    attach_ctx *c = arg;
    if (c->appended < 60) {
        append_one(c->j, "live", c->appended, 30, 1000);
        c->appended++;
    } else if (eg_spill_drain_done(c->d)) {
        event_base_loopbreak(c->base);
    }
}

static void test_attach(const char *bootstrap) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    attach_ctx c = {0};
    c.j = eg_spill_open(dir, NULL, err, sizeof err);
    c.base = event_base_new();
    c.d = eg_spill_drain_new(c.j, client_conf(bootstrap, "5000"), &(eg_spill_drain_opts){.seal_after_ms = 200}, err,
                             sizeof err);
    CHECK(eg_spill_drain_attach(c.d, c.base, 100, err, sizeof err) == 0, "attach the drainer to a libevent loop");
    c.tick = event_new(c.base, -1, EV_PERSIST, on_tick, &c);
    struct timeval tv = {0, 10000}, limit = {20, 0};
    event_add(c.tick, &tv);
    int64_t t0 = eg_now_ms();
    event_base_loopexit(c.base, &limit);
    event_base_dispatch(c.base);
    eg_spill_drain_stats ds;
    eg_spill_drain_stats_get(c.d, &ds);
    eg_spill_stats js;
    eg_spill_stats_get(c.j, &js);
    CHECK(eg_spill_drain_done(c.d) && ds.frames_drained == 60 && js.segments == 0 && js.segments_sealed >= 1,
          "records appended to the active segment are sealed and drained by the loop (%llu drained, %llu seals, "
          "%lld ms)",
          (unsigned long long)ds.frames_drained, (unsigned long long)js.segments_sealed, (long long)(eg_now_ms() - t0));
    event_free(c.tick);
    eg_spill_drain_free(c.d, 1000);
    event_base_free(c.base);
    eg_spill_close(c.j);
    seen *s = eg_xcalloc(1, sizeof *s);
    read_back(bootstrap, "live", s);
    int all = 1;
    for (int i = 0; i < 60; i++) all &= s->count[i] >= 1;
    CHECK(all && s->bad == 0, "all 60 arrived");
    free(s);
    rm_rf(dir);
}

/* A fatal error of the drainer's idempotent producer (the mock answers a
 * Produce with OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka raises as a
 * fatal idempotence error) replaces the producer in place and the frames it
 * had not confirmed go out through the fresh one: every record arrives.
 * Four in a row exceed kconf.h's bound: the drainer stops with an error
 * that says a restart is needed, every undelivered frame stays in the
 * journal, and a new drainer delivers them. */
static int count_missing(const char *bootstrap, const char *topic, int n) {
    seen *s = eg_xcalloc(1, sizeof *s);
    read_back(bootstrap, topic, s);
    int missing = s->bad;
    for (int i = 0; i < n; i++) missing += s->count[i] == 0;
    free(s);
    return missing;
}

static void test_drain_fatal(const char *bootstrap, rd_kafka_mock_cluster_t *mc) {
    char dir[64], err[256];
    tmpdir(dir, sizeof dir);
    rd_kafka_mock_topic_create(mc, "fatal", 4, 1);
    rd_kafka_mock_topic_create(mc, "fatal4", 1, 1); /* one request at a time: each error meets a fresh producer */
    eg_spill *j = eg_spill_open(dir, &(eg_spill_opts){.segment_bytes = 2000}, err, sizeof err);
    append_n(j, "fatal", 40, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    rd_kafka_mock_push_request_errors(mc, 0 /* Produce */, 1, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    eg_spill_drain *d = eg_spill_drain_new(j, client_conf(bootstrap, "5000"), NULL, err, sizeof err);
    int done = drain_until_done(d, 20000);
    eg_spill_drain_stats ds;
    eg_spill_drain_stats_get(d, &ds);
    CHECK(done && ds.producers_replaced == 1, "one fatal error: the producer is replaced and the drain finishes (%s)",
          done ? "done" : eg_spill_drain_error(d));
    eg_spill_drain_free(d, 1000);
    CHECK(count_missing(bootstrap, "fatal", 40) == 0, "every record arrived");

    append_n(j, "fatal4", 40, 30, 1000);
    eg_spill_seal(j, err, sizeof err);
    rd_kafka_mock_push_request_errors(mc, 0 /* Produce */, 4, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
                                      RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "5000"), NULL, err, sizeof err);
    done = drain_until_done(d, 20000);
    eg_spill_drain_stats_get(d, &ds);
    CHECK(!done && ds.producers_replaced == 3 && strstr(eg_spill_drain_error(d), "restart") != NULL,
          "a fourth fatal error stops the drainer after 3 replacements (%llu): %s",
          (unsigned long long)ds.producers_replaced, eg_spill_drain_error(d));
    CHECK(eg_spill_drain_step(d, 10) == -1, "and it stays stopped");
    eg_spill_drain_free(d, 1000);
    CHECK(count_files(dir, ".eg") > 0, "the undelivered frames stay in the journal");
    rd_kafka_mock_clear_request_errors(mc, 0);
    d = eg_spill_drain_new(j, client_conf(bootstrap, "5000"), NULL, err, sizeof err);
    done = drain_until_done(d, 20000);
    eg_spill_drain_free(d, 1000);
    CHECK(done && count_missing(bootstrap, "fatal4", 40) == 0 && count_files(dir, ".eg") == 0,
          "a new drainer delivers every record and retires the journal");
    eg_spill_close(j);
    rm_rf(dir);
}

int main(void) {
    test_crc();
    test_round_trip();
    test_rotation();
    test_bad_frames();
    test_damaged_journal();
    test_resync_bound();
    test_lock();
    test_lock_other_process();
    test_hostile_dir();
    test_cap();
    test_reopen();
    test_write_error();
    test_retire();

    char err[256];
    rd_kafka_conf_t *mconf = rd_kafka_conf_new();
    rd_kafka_conf_set(mconf, "log_level", "0", err, sizeof err);
    rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mconf, err, sizeof err);
    rd_kafka_mock_cluster_t *mc = mrk ? rd_kafka_mock_cluster_new(mrk, 1) : NULL;
    CHECK(mc != NULL, "start a mock cluster");
    if (mc) {
        char *bootstrap = eg_xstrdup(rd_kafka_mock_cluster_bootstraps(mc));
        rd_kafka_mock_topic_create(mc, "lane", 4, 1);
        rd_kafka_mock_topic_create(mc, "tail", 4, 1);
        rd_kafka_mock_topic_create(mc, "live", 4, 1);
        test_drain(bootstrap, mc);
        test_drain_refused(bootstrap, mc);
        test_drain_fatal(bootstrap, mc);
        test_attach(bootstrap);
        free(bootstrap);
        rd_kafka_mock_cluster_destroy(mc);
    }
    if (mrk) rd_kafka_destroy(mrk);
    return TAP_DONE();
}
