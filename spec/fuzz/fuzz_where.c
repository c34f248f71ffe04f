/* fuzz_where.c — `errgate replay --where` expressions (where.c over
 * lua/errgate/where.lua): each input is compiled as an expression and, when
 * it compiles, run against one fixed lane record (a real consumed message:
 * topic orders, partition 0, key k1, headers x-tenant and error.code). Both
 * steps run in the bounded policy VM (50 ms per evaluation, the policy
 * memory cap); any outcome but a crash or a hang is fine: 1, 0, or -1 with
 * a one-line message. */
#include "dlq.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fz_message();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const rd_kafka_message_t *m = fz_message();
    char *expr = malloc(size + 1);
    memcpy(expr, data, size);
    expr[size] = '\0';
    char err[512];
    memset(err, 'X', sizeof err);
    eg_where *w = eg_where_new(expr, 50, err, sizeof err);
    if (!w) {
        FZ_CHECK(memchr(err, 0, sizeof err) != NULL, "compile error not terminated");
    } else {
        for (int i = 0; i < 2; i++) { /* twice: the first call must not break the second */
            memset(err, 'X', sizeof err);
            int v = eg_where_eval(w, m, err, sizeof err);
            FZ_CHECK(v == 0 || v == 1 || (v == -1 && memchr(err, 0, sizeof err)), "eval returned %d", v);
        }
        eg_where_free(w);
    }
    free(expr);
    return 0;
}
