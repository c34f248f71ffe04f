/* fuzz_keyfiles.c — the two files an operator's tools read secrets from:
 * the control key file (ctlsign.c: eg_ctlsign_load, one key or a key ring
 * "errgate-keyring-v1") and the librdkafka properties file of
 * --kafka-config / $ERRGATE_KAFKA_CONFIG (kcli.c: eg_kcli_props_file).
 * Either may be a file someone else wrote or a deployment tool templated.
 * Input: one mode byte (even: a key file, odd: a properties file), then the
 * file's bytes, written to a private temp file each time (the loaders take a
 * path). Contract checked: a loaded key has a signing key of at least
 * EG_CTLSIGN_KEY_MIN bytes and at most EG_CTLSIGN_ACCEPT_MAX accepted ones,
 * each at least EG_CTLSIGN_KEY_MIN; a refusal says why in one line that
 * never quotes a key; a properties file refused says why in one line that
 * never quotes a value (values are credentials); has_bootstrap is set only
 * when the file names bootstrap.servers or metadata.broker.list. */
#include "ctlsign.h"
#include "fuzz.h"
#include "kcli.h"

#include <string.h>
#include <unistd.h>

static char g_path[64];

static void remove_file(void) { unlink(g_path); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(g_path, sizeof g_path, "/tmp/errgate-fuzz-keyfiles.XXXXXX");
    int fd = mkstemp(g_path);
    if (fd < 0) abort();
    close(fd);
    atexit(remove_file);
    return 0;
}

/* Writes the input to the temp file. */
static void put_file(const uint8_t *p, size_t n) {
    FILE *f = fopen(g_path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

/* 1 when err holds a value of a KEY=VALUE line of the file text (at least 6
 * bytes, trimmed, and not also a part of a key or of the path, which a
 * message may name). */
static int quotes_a_value(const char *text, const char *err) {
    char *copy = strdup(text), *save = NULL;
    int found = 0;
    for (char *line = strtok_r(copy, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t' || *v == '\r') v++;
        size_t n = strlen(v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r')) v[--n] = '\0';
        if (n < 6 || !strstr(err, v) || strstr(g_path, v)) continue;
        /* the same bytes in a key (left of some '='), which the message may name */
        int in_key = 0;
        for (const char *q = strstr(text, v); q && !in_key; q = strstr(q + 1, v)) {
            const char *nl = q, *e;
            while (nl > text && nl[-1] != '\n') nl--;
            e = strchr(nl, '=');
            in_key = e && q + n <= e;
        }
        found = !in_key;
    }
    free(copy);
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int props = data[0] & 1;
    put_file(data + 1, size - 1);
    char err[512] = "";
    if (!props) {
        eg_ctlkey key;
        memset(&key, 0, sizeof key);
        int rc = eg_ctlsign_load(g_path, &key, err, sizeof err);
        if (rc == 0) {
            FZ_CHECK(key.n >= EG_CTLSIGN_KEY_MIN && key.n <= EG_CTLSIGN_KEY_MAX, "signing key of %zu bytes", key.n);
            FZ_CHECK(key.naccept >= 0 && key.naccept <= EG_CTLSIGN_ACCEPT_MAX, "%d accepted keys", key.naccept);
            for (int i = 0; i < key.naccept; i++)
                FZ_CHECK(key.accept[i] >= EG_CTLSIGN_KEY_MIN && key.accept[i] <= EG_CTLSIGN_KEY_MAX,
                         "accepted key %d of %zu bytes", i, key.accept[i]);
        } else {
            FZ_CHECK(rc == -1 && err[0] && !strchr(err, '\n'), "refusal without a one-line reason: %d '%s'", rc, err);
            /* a message names the file and why, never a key's bytes: no line of 24 bytes or more in it */
            char *text = strndup((const char *)data + 1, size - 1), *save = NULL;
            for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
                FZ_CHECK(strlen(l) < 24 || strstr(g_path, l) || !strstr(err, l), "quotes a key line: %s", err);
            free(text);
        }
        return 0;
    }
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    int has_bootstrap = -1;
    int rc = eg_kcli_props_file(conf, g_path, &has_bootstrap, err, sizeof err);
    rd_kafka_conf_destroy(conf);
    FZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    FZ_CHECK(has_bootstrap == 0 || has_bootstrap == 1, "has_bootstrap %d", has_bootstrap);
    char *text = strndup((const char *)data + 1, size - 1);
    if (has_bootstrap)
        FZ_CHECK(strstr(text, "bootstrap.servers") || strstr(text, "metadata.broker.list"),
                 "has_bootstrap without the property named");
    if (rc == -1) {
        FZ_CHECK(err[0] && !strchr(err, '\n'), "refusal without a one-line reason: '%s'", err);
        FZ_CHECK(!quotes_a_value(text, err), "the refusal quotes a value: %s", err);
    }
    free(text);
    return 0;
}
