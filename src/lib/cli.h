/* cli.h — entry points of errgate's subcommands and the conventions they share.
 *
 * main.c dispatches `errgate <command> ...` to one of these. Each takes the
 * arguments after the command name (argv[0] is the command itself) and returns
 * the process exit code, one of EG_EXIT_*. Every command and subcommand
 * answers -h/--help with its usage on stdout (exit EG_EXIT_OK), and a usage
 * error with exactly one line on stderr naming the problem (EG_EXIT_USAGE),
 * through eg_usage_error. */
#ifndef EG_CLI_H
#define EG_CLI_H

#define EG_VERSION "0.1.0"

/* Process exit codes, the same for every command (man errgate, EXIT STATUS). */
#define EG_EXIT_OK 0    /* success; `run`: stopped by SIGTERM/SIGINT */
#define EG_EXIT_FAIL 1  /* runtime failure (Kafka, a check or test that failed) */
#define EG_EXIT_USAGE 2 /* usage, config, policy or target file error: nothing was consumed */
#define EG_EXIT_STOP 3  /* `run`: the policy decided stop */

int eg_cmd_broker(int argc, char **argv);  /* broker.c */
int eg_cmd_run(int argc, char **argv);     /* gw_run.c */
int eg_cmd_offsets(int argc, char **argv); /* cmd_offsets.c */
int eg_cmd_policy(int argc, char **argv);  /* cmd_policy.c */
int eg_cmd_replay(int argc, char **argv);  /* cmd_replay.c */
int eg_cmd_dlq(int argc, char **argv);     /* cmd_dlq.c */
int eg_cmd_spill(int argc, char **argv);   /* cmd_spill.c */
int eg_cmd_ctl(int argc, char **argv);     /* cmd_ctl.c */

/* 1 when arg asks for help (-h or --help), else 0. */
int eg_is_help(const char *arg);

/* For an argument a command does not know: when arg is a long option
 * written with one dash (-from-topic, -json, as Go's flag package and some
 * Kafka tools spell them), "; did you mean --from-topic?", else "". The
 * text lives in a thread-local buffer until the next call. errgate does
 * not take single-dash long options itself: -c CONFIG and friends are
 * single letters, and a value may start with a dash, so rewriting
 * arguments could change a value's meaning; it names the spelling. */
const char *eg_dash_hint(const char *arg);

/* Prints "errgate CMD: <message> (see errgate CMD --help)" as one line on
 * stderr (cmd may hold a subcommand: "dlq stats"). Returns EG_EXIT_USAGE. */
int eg_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
