/* test_log.c — what a log line does to text: UTF-8 is written as it is (in
 * the JSON and the text format), bytes that are not UTF-8 become \ufffd
 * (JSON) or '?' (text), control characters are escaped, and a value too
 * long for the line is dropped whole with "truncated":true, the line still
 * valid UTF-8. The loop's buffer: its lines reach stderr only with a flush
 * (one write), at once with an error line, and never hold another thread's
 * lines. stderr is redirected to a file and read back. */
#include "json.h"
#include "log.h"
#include "tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes one line with the field msg = val (n bytes) in the given format
 * and returns it (static, without its newline). */
static const char *line_of(int text, const char *val, size_t n) {
    static char line[4096];
    char path[] = "/tmp/errgate-logtest.XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    eg_log_setup(EG_INFO, text);
    eg_logline l;
    if (eg_log_begin(&l, EG_INFO, "t\xc3\xa9st")) {
        eg_log_strn(&l, "msg", val, n);
        eg_log_int(&l, "n", 7);
        eg_log_end(&l);
    }
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    FILE *f = fopen(path, "r");
    line[0] = '\0';
    if (!fgets(line, sizeof line, f)) line[0] = '\0';
    fclose(f);
    unlink(path);
    line[strcspn(line, "\n")] = '\0';
    return line;
}

#define LINE(text, lit) line_of(text, lit, sizeof lit - 1)

/* Lines in the file at fd's path so far. */
static int lines_in(const char *p) {
    FILE *f = fopen(p, "r");
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void *other_thread(void *arg) {
    eg_log_msg(EG_INFO, "from_librdkafka", "a line of another thread");
    return NULL;
}

/* The buffer of the calling thread, checked against the file's lines. */
static void check_buffer(void) {
    char p[] = "/tmp/errgate-logbuf.XXXXXX";
    int fd = mkstemp(p), saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    eg_log_setup(EG_INFO, 0);
    eg_log_buffer_start();
    for (int i = 0; i < 3; i++) eg_log_msg(EG_INFO, "buffered", "line %d", i);
    int before = lines_in(p);
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    int other = lines_in(p);
    eg_log_flush();
    int flushed = lines_in(p);
    eg_log_msg(EG_INFO, "buffered", "line 4");
    eg_log_msg(EG_ERROR, "fatal", "an error line");
    int after_error = lines_in(p);
    for (int i = 0; i < 2000; i++) { /* past 64 KiB; "decision" lines are not rate-limited */
        eg_logline l;
        if (eg_log_begin(&l, EG_INFO, "decision")) {
            eg_log_int(&l, "filler", i);
            eg_log_end(&l);
        }
    }
    int filled = lines_in(p);
    eg_log_buffer_stop();
    int stopped = lines_in(p);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fd);
    unlink(p);
    CHECK(before == 0, "the loop's lines wait in its buffer (%d written)", before);
    CHECK(other == 1, "another thread's line is written at once (%d)", other);
    CHECK(flushed == 4, "a flush writes them (%d lines)", flushed);
    CHECK(after_error == 6, "an error line is written at once, with what was buffered before it (%d)", after_error);
    CHECK(filled > 6 && filled < 2006, "a full buffer is written without a flush (%d)", filled);
    CHECK(stopped == 2006, "stopping the buffer writes the rest (%d)", stopped);
}

int main(void) {
    const char *l = LINE(0, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 na\xc3\xafve");
    CHECK(strstr(l, "\"msg\":\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 na\xc3\xafve\"") != NULL,
          "JSON: UTF-8 text written unchanged: %s", l);
    CHECK(strstr(l, "\"event\":\"t\xc3\xa9st\"") != NULL, "JSON: the event name too");
    l = LINE(0, "bad\xff\xc3(\"q\"\x01");
    CHECK(strstr(l, "\"msg\":\"bad\\ufffd\\ufffd(\\\"q\\\"\\u0001\"") != NULL,
          "JSON: invalid bytes as \\ufffd, quotes and controls escaped: %s", l);
    l = LINE(1, "caf\xc3\xa9 \xe2\x9c\x93");
    CHECK(strstr(l, " msg=caf\xc3\xa9 \xe2\x9c\x93 n=7") != NULL, "text: UTF-8 text written unchanged: %s", l);
    l = LINE(1, "bad\xff\x01ok");
    CHECK(strstr(l, " msg=bad??ok n=7") != NULL, "text: invalid bytes and controls as '?': %s", l);

    char big[3000];
    for (size_t i = 0; i + 1 < sizeof big; i += 2) memcpy(big + i, "\xc3\xa9", 2);
    l = line_of(0, big, sizeof big - 1);
    CHECK(strstr(l, "\"truncated\":true") && !strstr(l, "\"msg\"") && eg_utf8_valid(l, strlen(l)),
          "a value too long for the line is dropped whole (and the fields after it), the line stays UTF-8: %.80s", l);
    check_buffer();
    return TAP_DONE();
}
