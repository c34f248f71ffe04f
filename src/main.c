/* main.c — errgate's command dispatcher, `--version` and `help`.
 *
 * `errgate COMMAND ARGS...` runs one command (cli.h); `errgate help COMMAND
 * [SUBCOMMAND]` is `errgate COMMAND [SUBCOMMAND] --help`; `errgate --help`
 * lists the commands on stdout; `errgate --version` prints errgate's version
 * and those of the libraries it runs on, one per line, the allocator last.
 * Usage errors are one line on stderr and exit EG_EXIT_USAGE, as in every
 * command. */
#include "cli.h"
#include "kconf.h"

#include <event2/event.h>
#include <gnu/libc-version.h>
#include <librdkafka/rdkafka.h>
#include <luajit.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

/* libcurl's version, when libcurl is linked in: a weak reference resolves to
 * NULL in a binary that does not link it, so --version reports what this
 * binary really uses without main.c depending on the build's flags. */
extern char *curl_version(void) __attribute__((weak));

/* jemalloc's control call, when the build links jemalloc (Makefile, MALLOC):
 * the same weak reference, so --version names the allocator in use. */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", eg_cmd_run, "run -c CONFIG            run the gateway"},
    {"broker", eg_cmd_broker, "broker [--brokers N] [--topic NAME:PARTITIONS]...  embedded Kafka-protocol broker"},
    {"offsets", eg_cmd_offsets, "offsets -b BOOTSTRAP -g GROUP TOPIC...  committed vs end offsets"},
    {"policy", eg_cmd_policy,
     "policy check FILE [--ordering O] | policy test FILE (CASES.jsonl | --from-topic LANE)  check or replay a policy"},
    {"replay", eg_cmd_replay,
     "replay --from LANE --to TOPIC (-b BOOTSTRAP | -c CONFIG) [filters] [--dry-run]  lane records back to a topic"},
    {"dlq", eg_cmd_dlq, "dlq stats|tail|resolve|approve|annotate|watch LANE (-b|-c) ...  a lane and its items"},
    {"spill", eg_cmd_spill,
     "spill ls DIR | spill drain DIR (-b BOOTSTRAP | -c CONFIG) [--timeout-ms N]  the spill journal"},
    {"ctl", eg_cmd_ctl,
     "ctl [--admin URL] [--token-file F] [--json] resume | dlq-guard reset | override set|list|clear  "
     "incident controls of a running gateway"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(void) {
    printf("usage: errgate COMMAND [ARGS]\n"
           "       errgate help COMMAND [SUBCOMMAND]\n"
           "       errgate --version\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) printf("  %s\n", commands[i].help);
    printf("\nEvery command takes -h/--help. Exit status: %d ok, %d failure, %d usage or config error,\n"
           "%d the gateway stopped on a `stop` decision. See man errgate.\n",
           EG_EXIT_OK, EG_EXIT_FAIL, EG_EXIT_USAGE, EG_EXIT_STOP);
}

static int version(void) {
    printf("errgate %s\n", EG_VERSION);
    printf("librdkafka %s\n", rd_kafka_version_str());
    printf("%s\n", LUAJIT_VERSION);
    printf("libevent %s\n", event_get_version());
    printf("msgpack-c %s\n", msgpack_version());
    if (curl_version) printf("%s\n", curl_version());
#ifdef __SANITIZE_ADDRESS__
    printf("malloc asan\n"); /* the sanitizer build: ASan's allocator serves every call */
#else
    const char *jemalloc = NULL;
    size_t len = sizeof jemalloc;
    if (mallctl && mallctl("version", &jemalloc, &len, NULL, 0) == 0 && jemalloc)
        printf("malloc jemalloc %s\n", jemalloc);
    else printf("malloc glibc %s\n", gnu_get_libc_version());
#endif
    return EG_EXIT_OK;
}

/* Index of the command called name, or -1. */
static int find(const char *name) {
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return (int)i;
    return -1;
}

/* `errgate help [COMMAND [SUBCOMMAND]]`: argv[0] is "help". */
static int help(int argc, char **argv) {
    if (argc < 2 || eg_is_help(argv[1])) {
        usage();
        return EG_EXIT_OK;
    }
    if (argc > 3) return eg_usage_error("help", "too many arguments: give COMMAND [SUBCOMMAND]");
    int c = find(argv[1]);
    if (c < 0) return eg_usage_error("help", "unknown command '%s'", argv[1]);
    char opt[] = "--help";
    char *args[] = {argv[1], argc == 3 ? argv[2] : opt, opt, NULL};
    return commands[c].fn(argc == 3 ? 3 : 2, args);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "errgate: missing command (see errgate --help)\n");
        return EG_EXIT_USAGE;
    }
    if (eg_is_help(argv[1])) {
        usage();
        return EG_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) return version();
    if (!strcmp(argv[1], "help")) return help(argc - 1, argv + 1);
    int c = find(argv[1]);
    if (c >= 0) {
        int rc = commands[c].fn(argc - 1, argv + 1);
        char why[300];
        if (rc != EG_EXIT_OK && eg_kafka_auth_failure(why, sizeof why))
            fprintf(stderr,
                    "errgate %s: the cluster refused the credentials (%s): check sasl.mechanism, sasl.username and "
                    "sasl.password (--kafka-config, or the config's kafka table)\n",
                    argv[1], why);
        return rc;
    }
    fprintf(stderr, "errgate: unknown %s '%s'%s (see errgate --help)\n", argv[1][0] == '-' ? "option" : "command",
            argv[1], eg_dash_hint(argv[1]));
    return EG_EXIT_USAGE;
}
