/* test_policy_swap.c — a policy's id names the file it loaded even while
 * the file is replaced during the load (make chaos rewrites the policy file
 * as version 1 or 2 while gateways start and reload; lane records carried
 * errgate.policy "chaos@1+<hash of version 2>", an id of no policy). The id
 * is name@version+hash: the hash was taken of the file before the runtime
 * read it again to load it. Each load here starts on one version while a
 * thread replaces the file with the other (rename(2), as a deploy does)
 * after 0 to 3 ms; every id must be one of the two real ones. */
#include "policy.h"
#include "tap.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/errgate-policy-swap.XXXXXX";
static char path[256], v1[256], v2[256];

/* Replaces path with a copy of from (by rename, as a deploy does). */
static void put(const char *from) {
    char tmp[300], buf[1024];
    snprintf(tmp, sizeof tmp, "%s/next.lua", dir);
    FILE *in = fopen(from, "r"), *out = fopen(tmp, "w");
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, k, out);
    fclose(in);
    fclose(out);
    rename(tmp, path);
}

static void write_policy(const char *file, const char *version) {
    FILE *f = fopen(file, "w");
    fprintf(f,
            "local policy = require \"errgate.policy\"\n"
            "return policy.define {\n"
            "  name = \"swap\", version = \"%s\",\n"
            "  classify = { { class = \"unknown\" } },\n"
            "  route = { default = \"dlq\" },\n"
            "}\n",
            version);
    fclose(f);
}

/* After arg microseconds, the other version replaces the file once. */
static const char *next_version;
static void *replace_later(void *arg) {
    usleep((useconds_t)(uintptr_t)arg);
    put(next_version);
    return NULL;
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/policy.lua", dir);
    snprintf(v1, sizeof v1, "%s/v1.lua", dir);
    snprintf(v2, sizeof v2, "%s/v2.lua", dir);
    write_policy(v1, "1");
    write_policy(v2, "2");
    char err[512], id1[128] = "", id2[128] = "";
    eg_policy *p = eg_policy_load(v1, EG_DEF_POLICY_TIMEOUT_MS, err, sizeof err);
    if (p) snprintf(id1, sizeof id1, "%s", eg_policy_id(p));
    eg_policy_free(p);
    p = eg_policy_load(v2, EG_DEF_POLICY_TIMEOUT_MS, err, sizeof err);
    if (p) snprintf(id2, sizeof id2, "%s", eg_policy_id(p));
    eg_policy_free(p);
    CHECK(*id1 && *id2 && strcmp(id1, id2) != 0, "two versions, two ids (%s, %s)", id1, id2);
    write_policy(path, "1");

    int loads = 0, mixed = 0, failed = 0;
    char bad[128] = "";
    srand(7);
    for (int i = 0; i < 200; i++) {
        put(i % 2 ? v2 : v1);
        next_version = i % 2 ? v1 : v2;
        pthread_t t;
        pthread_create(&t, NULL, replace_later, (void *)(uintptr_t)(rand() % 3000));
        p = eg_policy_load(path, EG_DEF_POLICY_TIMEOUT_MS, err, sizeof err);
        pthread_join(t, NULL);
        if (!p) {
            failed++;
            continue;
        }
        loads++;
        if (strcmp(eg_policy_id(p), id1) != 0 && strcmp(eg_policy_id(p), id2) != 0) {
            mixed++;
            snprintf(bad, sizeof bad, "%s", eg_policy_id(p));
        }
        eg_policy_free(p);
    }
    CHECK(mixed == 0, "%d loads while the file was replaced: every id is a real one (%d mixed%s%s)", loads, mixed,
          *bad ? ", e.g. " : "", bad);
    CHECK(failed == 0, "every load succeeds (%d failed: %s)", failed, failed ? err : "");
    unlink(path);
    unlink(v1);
    unlink(v2);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s/next.lua", dir);
    unlink(tmp);
    rmdir(dir);
    return TAP_DONE();
}
