/* test_config_doc.c — the man page's key reference is the rendering of the
 * config's key table (eg_config_write_man): the text between the
 * "config-keys" markers of man/errgate.1 must equal it, so a key added,
 * removed or changed in src/lib/config.c without `make config-doc` fails
 * here. The README carries no key table (it links the man page).
 * With --print-man, prints the rendering instead (make config-doc uses it). */
#include "config.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Whether the man page doc has a section (.SH, in capitals) or subsection
 * (.SS) titled name (len bytes), compared without case. */
static int has_section(const char *doc, const char *name, size_t len) {
    for (const char *l = doc; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, ".SH ", 4) != 0 && strncmp(l, ".SS ", 4) != 0) continue;
        const char *t = l + 4;
        if (*t == '"') t++;
        if (strncasecmp(t, name, len) == 0 && strchr("\"\n", t[len])) return 1;
    }
    return 0;
}

/* Checks that every "see NAME" in a key's meaning names a section or
 * subsection of the man page ("see Configuration, the prefetch": the
 * subsection "The prefetch"), so the reference's pointers lead somewhere. */
static void check_pointers(const char *path) {
    char *doc = slurp(path);
    int n = 0, bad = 0;
    for (size_t i = 0; doc && i < eg_config_nkeys; i++) {
        const char *see = strstr(eg_config_keys[i].help, "see ");
        if (!see) continue;
        see += 4;
        size_t len = strcspn(see, ");");
        const char *comma = NULL;
        for (const char *c = see; c < see + len; c++)
            if (c[0] == ',' && c[1] == ' ') comma = c;
        if (comma) len -= (size_t)(comma + 2 - see), see = comma + 2;
        n++;
        if (!has_section(doc, see, len))
            bad++, printf("# %s: \"see %.*s\" names no section of %s\n", eg_config_keys[i].key, (int)len, see, path);
    }
    CHECK(doc && n > 0 && bad == 0, "every \"see ...\" of the key table (%d) names a section of %s", n, path);
    free(doc);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-man") == 0) {
        eg_config_write_man(stdout);
        return 0;
    }
    const char *path = "man/errgate.1";
    char *want = NULL;
    size_t wlen = 0;
    FILE *m = open_memstream(&want, &wlen);
    eg_config_write_man(m);
    fclose(m);
    check_rendering(path, MAN_BEGIN, MAN_END, want, wlen);
    int listed = 1;
    for (size_t i = 0; i < eg_config_nkeys; i++) {
        char tag[200];
        snprintf(tag, sizeof tag, ".TP\n.B %s\n", eg_config_keys[i].key);
        if (!strstr(want, tag)) listed = 0, printf("# %s is not in %s's rendering\n", eg_config_keys[i].key, path);
    }
    CHECK(listed, "every key of the table has its man paragraph in %s", path);
    free(want);
    check_pointers(path);
    return TAP_DONE();
}
