/* policy_cmd.c — `errgate policy check FILE` and `errgate policy test FILE
 * CASES.jsonl`: the tools a domain team and its CI run before a policy ships.
 *
 * Both load the policy exactly as the gateway does (sandbox, examples, lint,
 * name@version+sha), so "check passes" means "the gateway will load it".
 * check prints the id, the examples count and the lint findings; test
 * replays recorded cases (see lua/errgate/cli.lua for the format) and prints
 * an aligned table of expected versus decided. Exit codes: 0 all good, 1 the
 * policy does not load, lint errors, or a case mismatched, 2 usage. */
#include "cli.h"
#include "log.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: errgate policy check FILE\n"
                    "       errgate policy test FILE CASES.jsonl\n");
    return 2;
}

int eg_cmd_policy(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *sub = argv[1], *file = argv[2];
    int is_check = strcmp(sub, "check") == 0, is_test = strcmp(sub, "test") == 0;
    if (!(is_check && argc == 3) && !(is_test && argc == 4)) return usage();
    char err[1024];
    eg_policy *p = eg_policy_load(file, 50, err, sizeof err);
    if (!p) {
        printf("FAIL %s\n", err);
        return 1;
    }
    char *text = NULL;
    int code = 1;
    if (eg_policy_call(p, is_check ? "cli_check" : "cli_test", is_test ? argv[3] : NULL, &text, &code,
                       err, sizeof err) != 0) {
        printf("FAIL %s\n", err);
        eg_policy_free(p);
        return 1;
    }
    printf("%s\n", text);
    free(text);
    eg_policy_free(p);
    return code;
}
