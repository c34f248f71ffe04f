/* replay_main.c — runs every corpus file through one fuzz target without
 * libFuzzer: `fuzz_NAME FILE|DIR...` feeds each file (a directory: each of
 * its files, in name order) to LLVMFuzzerTestOneInput once and prints a TAP
 * line per file. Built with the normal compiler (and under SAN=1 the
 * sanitizers) for `make test`: a crash, a broken contract (FZ_CHECK
 * aborts) or an input still running after 60 s ends the run, and the
 * "running" line above it names the file. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv) { return 0; }

static int g_n;

static void run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("not ok %d - %s: cannot open\n", ++g_n, path);
        return;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t k; (k = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += k;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    /* an exact-size copy, so that a read past the input is caught as it is under libFuzzer */
    uint8_t *data = malloc(n ? n : 1);
    memcpy(data, buf, n);
    free(buf);
    fprintf(stderr, "running %s\n", path);
    alarm(60); /* a hang is a finding too: SIGALRM ends the run */
    LLVMFuzzerTestOneInput(data, n);
    alarm(0);
    free(data);
    printf("ok %d - %s\n", ++g_n, path);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv) {
    const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct dirent **ents;
        int k = scandir(argv[i], &ents, NULL, by_name);
        if (k < 0) {
            run_file(argv[i]);
            continue;
        }
        for (int j = 0; j < k; j++) {
            if (ents[j]->d_name[0] != '.') {
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], ents[j]->d_name);
                run_file(p);
            }
            free(ents[j]);
        }
        free(ents);
    }
    if (g_n == 0) printf("not ok 1 - %s: no corpus file\n", self);
    printf("1..%d\n", g_n ? g_n : 1);
    return 0;
}
