/* cli.c — the command-line conventions every command shares (see cli.h): what
 * asks for help, the one-line usage error, and the right spelling of a long
 * option written with one dash. Kept out of the commands so
 * that all of them word and route a usage error the same way. */
#include "cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int eg_is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

const char *eg_dash_hint(const char *arg) {
    static _Thread_local char hint[160];
    hint[0] = '\0';
    /* one dash, then a word of letters, digits and dashes, at least two long */
    if (!arg || arg[0] != '-' || !isalpha((unsigned char)arg[1]) || !arg[2]) return hint;
    size_t n = strspn(arg + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
    size_t eq = strcspn(arg + 1, "="); /* -name=value: the name is what is misspelt */
    if (n < eq || eq > 64) return hint;
    snprintf(hint, sizeof hint, "; did you mean -%.*s?", (int)(eq + 1), arg);
    return hint;
}

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
