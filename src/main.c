/* main.c — errgate's command dispatcher. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", eg_cmd_run, "run -c CONFIG            run the gateway"},
    {"broker", eg_cmd_broker, "broker [--brokers N] [--topic NAME:PARTITIONS]...  embedded Kafka-protocol broker"},
    {"offsets", eg_cmd_offsets, "offsets -b BOOTSTRAP -g GROUP TOPIC...  committed vs end offsets"},
    {"policy", eg_cmd_policy, "policy check FILE [--ordering O] | policy test FILE (CASES.jsonl | --from-topic LANE)  check or replay a policy"},
    {"replay", eg_cmd_replay, "replay --from LANE --to TOPIC (-b BOOTSTRAP | -c CONFIG) [filters] [--dry-run]  lane records back to a topic"},
    {"dlq", eg_cmd_dlq, "dlq stats|tail|resolve LANE (-b BOOTSTRAP | -c CONFIG) ...  inspect a lane, record what became of its items"},
    {"spill", eg_cmd_spill, "spill ls DIR | spill drain DIR (-b BOOTSTRAP | -c CONFIG) [--timeout-ms N]  the spill journal"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: errgate COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %s\n", commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "errgate: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
