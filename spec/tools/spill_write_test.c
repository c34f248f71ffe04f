/* spill_write_test.c — spill-write-test, a tool for the spill journal's
 * tests (built by `make test` as $(BUILD)/spill-write-test; never
 * installed, not part of errgate):
 *
 *   spill-write-test DIR TOPIC N [--segment-bytes B] [--partitions P]
 *                    [--value-bytes V] [--hold-ms MS]
 *
 * appends N deterministic records to the journal in DIR (opened with role
 * "write-test") through spill.c's real append path: binary keys (none and
 * empty ones too), values of V bytes (some absent), headers with binary,
 * null, empty and repeated values, partition i % P. Each record is printed
 * on stdout as a JSON line with its bytes in hex, once its append (and
 * fdatasync) returned 0 — so a printed record is a durable one, even after
 * kill -9; the append latencies go to stderr at the end. With --hold-ms it
 * keeps the journal open (locked, segment active) that long before closing
 * it, as a running gateway would. Exit 0, 1 when an append failed, 2 on
 * bad arguments. */
#include "spill.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* One line naming the problem on stderr; returns 2. */
static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "spill-write-test: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (usage: spill-write-test DIR TOPIC N [--segment-bytes B] [--partitions P] "
                    "[--value-bytes V] [--hold-ms MS])\n");
    return 2;
}

/* Writes p[0..n) as a JSON string of hex digits, or null when p is NULL. */
static void hex(FILE *out, const void *p, size_t n) {
    if (!p) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (size_t i = 0; i < n; i++) fprintf(out, "%02x", ((const unsigned char *)p)[i]);
    fputc('"', out);
}

/* qsort's order of int64 values. */
static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) return usage_error("missing %s", "DIR TOPIC N");
    const char *dir = argv[1], *topic = argv[2];
    long n = atol(argv[3]), parts = 4, vbytes = 100, hold_ms = 0;
    eg_spill_opts so = {.role = "write-test"};
    for (int i = 4; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--segment-bytes")) so.segment_bytes = (size_t)atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--partitions")) parts = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--value-bytes")) vbytes = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--hold-ms")) hold_ms = atol(argv[i + 1]);
        else return usage_error("unknown option '%s'", argv[i]);
    }
    if (n < 0 || parts < 1 || vbytes < 0 || (argc - 4) % 2) return usage_error("%s", "bad arguments");
    char err[512];
    eg_spill *j = eg_spill_open(dir, &so, err, sizeof err);
    if (!j) {
        fprintf(stderr, "spill-write-test: %s\n", err);
        return 1;
    }
    unsigned char *val = eg_xmalloc((size_t)vbytes + 1);
    int64_t *lat = eg_xmalloc((size_t)(n ? n : 1) * sizeof *lat);
    int rc = 0;
    for (long i = 0; i < n; i++) {
        unsigned char key[8] = {
            'k', (unsigned char)(i >> 24), (unsigned char)(i >> 16), (unsigned char)(i >> 8), (unsigned char)i, 0, 0xff,
            '!'};
        for (long b = 0; b < vbytes; b++) val[b] = (unsigned char)((i * 31 + b * 7) & 0xff);
        char idx[24];
        snprintf(idx, sizeof idx, "%ld", i);
        unsigned char bin[4] = {0, 1, 0xfe, (unsigned char)i};
        eg_spill_header h[5] = {{"h-index", idx, strlen(idx)},
                                {"h-bin", bin, sizeof bin},
                                {"h-null", NULL, 0},
                                {"dup", "a", 1},
                                {"dup", "", 0}};
        eg_spill_rec r = {
            .topic = topic,
            .partition = (int32_t)(i % parts),
            .timestamp_ms = 1700000000000LL + i,
            .key = i % 10 == 0   ? NULL
                   : i % 10 == 1 ? ""
                                 : (const void *)key,
            .key_len = i % 10 <= 1 ? 0 : sizeof key,
            .value = i % 7 == 3 ? NULL : val,
            .value_len = i % 7 == 3 ? 0 : (size_t)vbytes,
            .headers = i % 5 == 4 ? NULL : h,
            .nheaders = i % 5 == 4 ? 0 : 5,
        };
        int64_t t = eg_now_ns();
        if (eg_spill_append(j, &r, err, sizeof err) != 0) {
            fprintf(stderr, "spill-write-test: record %ld: %s\n", i, err);
            rc = 1;
            break;
        }
        lat[i] = eg_now_ns() - t;
        printf("{\"topic\":\"%s\",\"partition\":%d,\"timestamp\":%lld,\"key\":", topic, (int)r.partition,
               (long long)r.timestamp_ms);
        hex(stdout, r.key, r.key_len);
        fputs(",\"value\":", stdout);
        hex(stdout, r.value, r.value_len);
        fputs(",\"headers\":[", stdout);
        for (size_t k = 0; k < r.nheaders; k++) {
            printf("%s[\"%s\",", k ? "," : "", h[k].name);
            hex(stdout, h[k].value, h[k].value_len);
            fputc(']', stdout);
        }
        fputs("]}\n", stdout);
        fflush(stdout); /* a printed record is a durable one, even after kill -9 */
    }
    eg_spill_stats st;
    eg_spill_stats_get(j, &st);
    fflush(stdout);
    if (hold_ms > 0) /* keeps the lock and the active segment, as a gateway would */
        nanosleep(&(struct timespec){hold_ms / 1000, (hold_ms % 1000) * 1000000}, NULL);
    eg_spill_close(j);
    if (rc == 0 && n > 0) {
        qsort(lat, (size_t)n, sizeof *lat, cmp_i64);
        fprintf(stderr,
                "appended %llu frames (%llu bytes) in %llu segment%s; append+fdatasync us: p50 %.1f p99 %.1f "
                "max %.1f\n",
                (unsigned long long)st.frames_appended, (unsigned long long)st.bytes_appended,
                (unsigned long long)st.segments, plural(st.segments), lat[n / 2] / 1e3, lat[(n * 99) / 100] / 1e3,
                lat[n - 1] / 1e3);
    }
    free(lat);
    free(val);
    return rc;
}
