/* cli.h — entry points of errgate's subcommands.
 *
 * main.c dispatches `errgate <command> ...` to one of these. Each takes the
 * arguments after the command name (argv[0] is the command itself) and returns
 * the process exit code: 0 success, 1 runtime failure, 2 usage or config error,
 * 3 the gateway stopped on a `stop` decision. */
#ifndef EG_CLI_H
#define EG_CLI_H

int eg_cmd_broker(int argc, char **argv);   /* broker.c  */
int eg_cmd_run(int argc, char **argv);      /* gateway.c */
int eg_cmd_offsets(int argc, char **argv);  /* offsets_cmd.c */
int eg_cmd_policy(int argc, char **argv);   /* policy_cmd.c */
int eg_cmd_replay(int argc, char **argv);   /* replay.c */
int eg_cmd_dlq(int argc, char **argv);      /* dlq_cmd.c */
int eg_cmd_spill(int argc, char **argv);    /* spill_cmd.c */

#endif
