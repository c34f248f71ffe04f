/* cmd_policy.c — `errgate policy check FILE` and `errgate policy test FILE
 * CASES.jsonl | --from-topic LANE`: the tools a domain team and its CI run
 * before a policy ships.
 *
 * Both load the policy exactly as the gateway does (sandbox, examples, lint,
 * name@version+sha), so "check passes" means "the gateway will load it".
 * check prints the id, the examples count and the lint findings (with
 * --ordering, the lint also judges the policy under that source ordering).
 * test replays hand-written cases (see lua/errgate/cli.lua for the format)
 * and prints an aligned table of expected versus decided; with --from-topic
 * it reads what a lane topic held when the command started (lane_cases.h),
 * rebuilds each recorded failure from its headers (errgate's own, or any
 * DLQ dialect inbox mode reads: Spring Kafka, Kafka Connect, Kafka Streams,
 * share group, x-dlq-metadata, through the same mapper) and asks the policy what it would decide now,
 * printing decided-then against would-decide-now (lua/errgate/recorded.lua).
 * Exit codes: 0 all good, 1 the policy does not load, lint errors, a case
 * mismatched, a recorded decision changed, or the lane could not be read,
 * 2 usage or connection settings. */
#include "cli.h"
#include "kcli.h"
#include "lane_cases.h"
#include "parse.h"
#include "policy.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records read from a lane when --limit is not given (a CI gate wants a
 * bounded sample; --since picks the recent ones), and the most --limit takes. */
#define DEFAULT_LIMIT 10000
#define MAX_LIMIT 50000
/* Lua memory allowed per byte of lane text, on top of the policy's own cap:
 * the text, each decoded line, the table rows and the report live in the
 * policy's state during the replay. 2 was enough for 43,000 gateway-written
 * records (26 MB of text, 3 s); 6 leaves room for wide own headers. */
#define TEXT_MEM_FACTOR 6
/* Per-decision budget, as the gateway's default. */

static const char SYNOPSIS[] = "usage: errgate policy check FILE [--ordering partition|key|none]\n"
                               "       errgate policy test FILE CASES.jsonl\n"
                               "       errgate policy test FILE --from-topic LANE (-b BOOTSTRAP | -c CONFIG)\n"
                               "                          [--limit N] [--since DURATION]\n"
                               "       errgate policy check|test -c CONFIG [--source NAME] [...]\n";
static const char OPTIONS[] = "\n"
                              "  check         load FILE as the gateway would (sandbox, examples, lint)\n"
                              "  --ordering    lint for a source with this ordering (a ladder under\n"
                              "                `partition` is an error)\n"
                              "  test CASES    replay JSON-lines cases, compare with their `expect`\n"
                              "  --from-topic  replay the failures recorded on a lane topic (errgate,\n"
                              "                Spring Kafka, Kafka Connect, Kafka Streams, share-group\n"
                              "                or x-dlq-metadata DLQ headers) and show\n"
                              "                decided-then against would-decide-now; exit 1 if any changed\n"
                              "  -b, -c        broker address, or a gateway config to take the kafka\n"
                              "                settings from (else $ERRGATE_BOOTSTRAP)\n"
                              "  -c CONFIG in FILE's place: the policy of the config's source (--source\n"
                              "                NAME with several sources); check lints under its ordering\n"
                              "  --limit N     read at most N records (default 10000, at most 50000)\n"
                              "  --since D     only records written in the last D (90s, 15m, 2h, 7d)\n";

typedef struct args {
    int check, test, help;
    const char *file;
    const char *cases;    /* test CASES.jsonl */
    const char *topic;    /* test --from-topic */
    const char *ordering; /* check --ordering */
    int from_config;      /* -c CONFIG in FILE's place: file is the config source's policy */
    eg_kcli kcli;
    long limit;
    int64_t since_ms;
} args;

/* One line naming what is wrong on stderr; returns the exit code 2. */
#define usage_error(...) eg_usage_error("policy", __VA_ARGS__)

/* Parses argv (argv[0] = "policy") into *a. Returns 0 (with a->help set when
 * -h/--help came in an option's place), or the exit code 2 after a one-line
 * message naming what was wrong. */
static int parse(int argc, char **argv, args *a) {
    memset(a, 0, sizeof *a);
    if (argc < 2) return usage_error("missing sub-command (check or test)");
    if ((a->help = eg_is_help(argv[1]) || !strcmp(argv[1], "help"))) return 0;
    a->check = strcmp(argv[1], "check") == 0;
    a->test = strcmp(argv[1], "test") == 0;
    if (!a->check && !a->test)
        return usage_error("unknown sub-command '%s'%s (check or test)", argv[1], eg_dash_hint(argv[1]));
    for (int i = 2; i < argc; i++)
        if ((a->help = eg_is_help(argv[i]))) return 0;
    if (argc < 3) return usage_error("missing the policy FILE");
    a->from_config = !strcmp(argv[2], "-c") || !strcmp(argv[2], "--config") || !strcmp(argv[2], "--source");
    if (argv[2][0] == '-' && argv[2][1] && !a->from_config)
        return usage_error("unknown option %s%s (the policy FILE comes first)", argv[2], eg_dash_hint(argv[2]));
    if (!a->from_config) a->file = argv[2];
    const char *limit = NULL, *since = NULL;
    for (int i = a->from_config ? 2 : 3; i < argc; i++) {
        const char *o = argv[i];
        int k = a->test || a->from_config ? eg_kcli_opt(&a->kcli, argc, argv, &i) : 0;
        if (k < 0) return usage_error("option %s needs a value", o);
        if (k > 0) continue;
        const char **slot = NULL;
        if (a->check && !strcmp(o, "--ordering")) slot = &a->ordering;
        else if (a->test && !strcmp(o, "--from-topic")) slot = &a->topic;
        else if (a->test && !strcmp(o, "--limit")) slot = &limit;
        else if (a->test && !strcmp(o, "--since")) slot = &since;
        else if (o[0] == '-' && o[1]) return usage_error("unknown option %s%s", o, eg_dash_hint(o));
        else if (a->test && !a->cases) {
            a->cases = o;
            continue;
        } else return usage_error("unexpected argument '%s'", o);
        if (i + 1 >= argc) return usage_error("option %s needs a value", o);
        *slot = argv[++i];
    }
    if (a->ordering && strcmp(a->ordering, "partition") && strcmp(a->ordering, "key") && strcmp(a->ordering, "none"))
        return usage_error("--ordering must be partition, key or none, got '%s'", a->ordering);
    if (a->test && !a->cases == !a->topic)
        return usage_error("%s", a->cases ? "give CASES.jsonl or --from-topic LANE, not both"
                                          : "missing CASES.jsonl or --from-topic LANE");
    if (a->from_config && !a->kcli.config) return usage_error("--source goes with -c CONFIG");
    if (!a->from_config && a->kcli.source) return usage_error("--source goes with -c CONFIG in FILE's place");
    if (a->cases && (a->kcli.bootstrap || (a->kcli.config && !a->from_config) || limit || since))
        return usage_error("-b, -c, --limit and --since go with --from-topic");
    a->limit = DEFAULT_LIMIT;
    if (limit) {
        char *end = NULL;
        errno = 0;
        long n = strtol(limit, &end, 10);
        if (errno || end == limit || *end || n < 1 || n > MAX_LIMIT)
            return usage_error("--limit wants a whole number from 1 to %d, got '%s'", MAX_LIMIT, limit);
        a->limit = n;
    }
    if (since) {
        int64_t ms = 0;
        if (eg_parse_duration_ms(since, &ms) != 0 || ms <= 0)
            return usage_error("--since wants a duration such as 90s, 15m, 2h or 7d, got '%s'", since);
        a->since_ms = eg_wall_ms() - ms;
        if (a->since_ms <= 0) a->since_ms = 1;
    }
    return 0;
}

/* Reads the lane and replays it against the policy file. The policy was
 * loaded once already (so a broken file fails before the broker is asked);
 * it is loaded again here with a memory cap that makes room for the lane's
 * text, which lives in the same Lua state while it is replayed. Returns the
 * exit code. */
static int test_from_topic(const args *a) {
    char err[1024];
    rd_kafka_conf_t *conf = eg_kcli_conf(&a->kcli, "errgate-policy-test", err, sizeof err);
    if (!conf) {
        fprintf(stderr, "errgate policy: %s\n", err);
        return 2;
    }
    eg_lane_cases cases;
    eg_lane_cases_opts o = {.since_ms = a->since_ms, .limit = a->limit};
    if (eg_lane_cases_read(conf, a->topic, &o, &cases, err, sizeof err) != 0) {
        printf("FAIL cannot read lane %s: %s\n", a->topic, err);
        return 1;
    }
    eg_policy *p = eg_policy_load_capped(a->file, EG_DEF_POLICY_TIMEOUT_MS,
                                         EG_POLICY_MEM_LIMIT + TEXT_MEM_FACTOR * cases.len, err, sizeof err);
    char *text = NULL;
    int code = 1;
    if (!p || eg_policy_call(p, "cli_test_recorded", cases.text, &text, &code, err, sizeof err) != 0) {
        printf("FAIL %s\n", err);
        eg_policy_free(p);
        eg_lane_cases_free(&cases);
        return 1;
    }
    printf("%s\n", text);
    if (cases.limited) printf("(read stopped at --limit %ld: %s may hold more records)\n", a->limit, a->topic);
    free(text);
    eg_policy_free(p);
    eg_lane_cases_free(&cases);
    return code;
}

static int policy_run(args *ap, char *err, size_t errlen);

int eg_cmd_policy(int argc, char **argv) {
    args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc;
    if (a.help) {
        fputs(SYNOPSIS, stdout);
        fputs(OPTIONS, stdout);
        return EG_EXIT_OK;
    }
    char err[1024];
    eg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (a.from_config) { /* the source's policy, and the ordering it runs under */
        if (a.kcli.bootstrap) setenv("ERRGATE_BOOTSTRAP", a.kcli.bootstrap, 1);
        if (eg_config_load_source(a.kcli.config, a.kcli.source, &cfg, err, sizeof err) != 0) {
            fprintf(stderr, "errgate policy: %s\n", err);
            return 2;
        }
        a.file = cfg.policy;
        if (a.check && !a.ordering) a.ordering = eg_ordering_name(cfg.ordering);
    }
    rc = policy_run(&a, err, sizeof err);
    eg_config_free(&cfg);
    return rc;
}

/* Runs what a asks of its policy file. Returns the exit code. */
static int policy_run(args *ap, char *err, size_t errlen) {
    const args a = *ap;
    eg_policy *p = eg_policy_load(a.file, EG_DEF_POLICY_TIMEOUT_MS, err, errlen);
    if (!p) {
        printf("FAIL %s\n", err);
        return 1;
    }
    if (a.topic) {
        eg_policy_free(p);
        return test_from_topic(&a);
    }
    char *text = NULL;
    int code = 1;
    if (eg_policy_call(p, a.check ? "cli_check" : "cli_test", a.check ? a.ordering : a.cases, &text, &code, err,
                       errlen) != 0) {
        printf("FAIL %s\n", err);
        eg_policy_free(p);
        return 1;
    }
    printf("%s\n", text);
    free(text);
    eg_policy_free(p);
    return code;
}
