/* test_log_rate.c — repeated log lines are rate-limited process-wide: 2,000
 * lines of one event written in a burst come out as at most EG_LOG_RATE per
 * second plus log_suppressed lines whose counts make up the rest exactly;
 * decision and spilled lines are never limited; another event is not affected by the
 * first one's limit. stderr is redirected to a file and read back. */
#include "log.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    char path[] = "/tmp/errgate-lograte.XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    eg_log_setup(EG_INFO, 0);
    for (int i = 0; i < 2000; i++) {
        eg_log_msg(EG_WARN, "spam", "line %d", i);
        if (i % 10 == 0) eg_log_msg(EG_INFO, "decision", "d %d", i);
        if (i % 20 == 0) eg_log_msg(EG_WARN, "spilled", "s %d", i);
        if (i % 100 == 0) eg_log_msg(EG_INFO, "other", "o %d", i);
    }
    eg_log_flush_suppressed();
    dup2(saved, STDERR_FILENO);
    close(saved);

    FILE *f = fopen(path, "r");
    char line[4096];
    long spam = 0, decisions = 0, spilled = 0, other = 0, suppressed = 0, notes = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"event\":\"spam\"")) spam++;
        else if (strstr(line, "\"event\":\"decision\"")) decisions++;
        else if (strstr(line, "\"event\":\"other\"")) other++;
        else if (strstr(line, "\"event\":\"spilled\"")) spilled++;
        else if (strstr(line, "\"event\":\"log_suppressed\"") && strstr(line, "\"suppressed_event\":\"spam\"")) {
            const char *p = strstr(line, "\"suppressed\":");
            suppressed += p ? atol(p + 13) : 0;
            notes++;
        }
    }
    fclose(f);
    unlink(path);
    CHECK(spam >= EG_LOG_RATE && spam <= 3 * EG_LOG_RATE, "spam lines written: %ld (at most %d per second)", spam,
          EG_LOG_RATE);
    CHECK(notes >= 1, "log_suppressed lines for spam: %ld", notes);
    CHECK(spam + suppressed == 2000, "written + suppressed = 2000 (%ld + %ld)", spam, suppressed);
    CHECK(decisions == 200, "every decision line is written (%ld)", decisions);
    CHECK(spilled == 100, "every spilled line is written (%ld)", spilled);
    CHECK(other == 20, "another event keeps its own budget (%ld of 20)", other);
    return TAP_DONE();
}
