/* test_config_doc.c — the README's and the man page's key references are
 * the renderings of the config's key table (eg_config_write_reference,
 * eg_config_write_man): the text between the "config-keys" markers of
 * README.md and man/errgate.1 must equal them, so a key added, removed or
 * changed in src/lib/config.c without `make config-doc` fails here.
 * With --print (--print-man), prints a rendering instead (make config-doc
 * uses them). */
#include "config.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN_MARK "<!-- config-keys: begin"
#define END_MARK "<!-- config-keys: end -->"
#define MAN_BEGIN ".\\\" config-keys: begin"
#define MAN_END ".\\\" config-keys: end"

/* The whole of file path in a fresh string, or NULL. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int ch;
    while ((ch = fgetc(f)) != EOF) fputc(ch, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* Checks that the text between begin and end in file path (from the line
 * after begin's) is want (wlen bytes), naming the first line that differs. */
static void check_rendering(const char *path, const char *begin, const char *end, const char *want, size_t wlen) {
    char *doc = slurp(path);
    CHECK(doc != NULL, "%s is readable (the tests run from the repository's root)", path);
    char *b = doc ? strstr(doc, begin) : NULL;
    char *e = b ? strstr(b, end) : NULL;
    CHECK(b && e, "%s has the config-keys markers", path);
    if (b && e) {
        b = strchr(b, '\n') + 1;
        size_t glen = (size_t)(e - b);
        int same = glen == wlen && memcmp(b, want, wlen) == 0;
        if (!same) {
            /* the first line that differs */
            size_t i = 0, line = 1;
            while (i < glen && i < wlen && b[i] == want[i]) line += b[i++] == '\n';
            printf("# %s's key reference differs from src/lib/config.c's table at its line %zu; "
                   "run `make config-doc`\n",
                   path, line);
        }
        CHECK(same, "%s's key reference is the rendering of the config key table (%zu keys)", path, eg_config_nkeys);
    }
    free(doc);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print") == 0) {
        eg_config_write_reference(stdout);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--print-man") == 0) {
        eg_config_write_man(stdout);
        return 0;
    }
    /* each rendering, its markers and the form every key takes in it */
    static const struct {
        const char *path, *begin, *end, *tag, *what;
        void (*render)(FILE *);
    } docs[] = {
        {"README.md", BEGIN_MARK, END_MARK, "| `%s` |", "row", eg_config_write_reference},
        {"man/errgate.1", MAN_BEGIN, MAN_END, ".TP\n.B %s\n", "man paragraph", eg_config_write_man},
    };
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        char *want = NULL;
        size_t wlen = 0;
        FILE *m = open_memstream(&want, &wlen);
        docs[d].render(m);
        fclose(m);
        check_rendering(docs[d].path, docs[d].begin, docs[d].end, want, wlen);
        int listed = 1;
        for (size_t i = 0; i < eg_config_nkeys; i++) {
            char tag[200];
            snprintf(tag, sizeof tag, docs[d].tag, eg_config_keys[i].key);
            if (!strstr(want, tag))
                listed = 0, printf("# %s is not in %s's rendering\n", eg_config_keys[i].key, docs[d].path);
        }
        CHECK(listed, "every key of the table has its %s in %s", docs[d].what, docs[d].path);
        free(want);
    }
    return TAP_DONE();
}
