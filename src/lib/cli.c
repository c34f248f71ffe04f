/* cli.c — the command-line conventions every command shares (see cli.h): what
 * asks for help, and the one-line usage error. Kept out of the commands so
 * that all of them word and route a usage error the same way. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int eg_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

int eg_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one line, whatever the message holds (an argument may contain a newline) */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    /* the hint names the command, not the subcommand: its help covers all of them */
    fprintf(stderr, "errgate %s: %s (see errgate %.*s --help)\n", cmd, msg, (int)strcspn(cmd, " "), cmd);
    return EG_EXIT_USAGE;
}
