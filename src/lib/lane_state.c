/* lane_state.c — the lifecycle state topic of a lane (see lane_state.h for
 * the format and the rule that decides open versus resolved).
 *
 * `<LANE>.state` is created compacted through the Admin API when it is
 * missing. librdkafka 2.0.2's mock cluster implements no Admin request
 * (CreateTopics, DescribeConfigs: its Metadata names controller 0, a broker
 * that does not exist, so an Admin call would only time out); there the
 * topic cannot be made compacted, and eg_dlq_state_ensure says so in a note
 * instead of waiting. State records are keyed by item id, so the latest
 * status of an id is the last record of its key in its partition; readers
 * keep, per id, the last status read. */
#include "lane_state.h"
#include "headers.h"
#include "json.h"
#include "kcli.h"
#include "record.h"
#include "util.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const status_names[EG_DLQ__N] = {"open",     "pending-approval", "approved",
                                                    "replayed", "accepted-loss",    "closed"};

const char *eg_dlq_status_name(eg_dlq_status s) { return s >= 0 && s < EG_DLQ__N ? status_names[s] : "?"; }

int eg_dlq_state_parse(const char *s) {
    for (int i = 0; i < EG_DLQ__N; i++)
        if (strcmp(s, status_names[i]) == 0) return i;
    return -1;
}

int eg_dlq_status_parse(const char *s) {
    int i = eg_dlq_state_parse(s);
    return i >= 0 && eg_dlq_resolved(i) ? i : -1;
}

void eg_dlq_state_topic(const char *lane, char *out, size_t outlen) { snprintf(out, outlen, "%s.state", lane); }

/* Appends the literal lit at out + *len (NUL-terminated). Returns 0 or -1. */
static int put_lit(char *out, size_t outlen, size_t *len, const char *lit) {
    size_t n = strlen(lit);
    if (*len + n + 1 > outlen) return -1;
    memcpy(out + *len, lit, n + 1);
    *len += n;
    return 0;
}

int eg_dlq_state_json(eg_dlq_status s, const char *reason, int64_t at_ms, const char *by, int64_t since_ms, char *out,
                      size_t outlen) {
    char at[40], since[40];
    size_t len = 0;
    eg_rfc3339(at_ms, at, sizeof at);
    const char *st = eg_dlq_status_name(s);
    reason = reason ? reason : "";
    if (put_lit(out, outlen, &len, "{\"status\":") || eg_json_put_str(out, outlen, &len, st, strlen(st)) ||
        put_lit(out, outlen, &len, ",\"reason\":") || eg_json_put_str(out, outlen, &len, reason, strlen(reason)) ||
        put_lit(out, outlen, &len, ",\"at\":") || eg_json_put_str(out, outlen, &len, at, strlen(at)) ||
        put_lit(out, outlen, &len, ",\"by\":") || eg_json_put_str(out, outlen, &len, by, strlen(by)))
        return -1;
    if (since_ms >= 0) {
        eg_rfc3339(since_ms, since, sizeof since);
        if (put_lit(out, outlen, &len, ",\"since\":") || eg_json_put_str(out, outlen, &len, since, strlen(since)))
            return -1;
    }
    return put_lit(out, outlen, &len, "}") ? -1 : (int)len;
}

void eg_dlq_whoami(char *out, size_t outlen) {
    const char *user = getenv("USER");
    if (!user || !*user) {
        struct passwd *pw = getpwuid(geteuid());
        user = pw ? pw->pw_name : "unknown";
    }
    char host[256];
    if (gethostname(host, sizeof host) != 0) eg_strlcpy(host, "unknown", sizeof host);
    host[sizeof host - 1] = '\0';
    snprintf(out, outlen, "%s@%s", user, host);
}

void eg_dlq_item_id(const rd_kafka_message_t *m, char *out, size_t outlen) {
    if (eg_header_str(m, EG_H_ID, out, outlen) == 0 && *out) return;
    snprintf(out, outlen, "%s/%d/%lld", rd_kafka_topic_name(m->rkt), (int)m->partition, (long long)m->offset);
}

int eg_dlq_state_ensure(rd_kafka_t *rk, const char *topic, int partitions, char *note, size_t notelen, char *err,
                        size_t errlen) {
    return eg_topic_ensure(rk, topic, partitions, 1, 0, NULL, note, notelen, err, errlen) < 0 ? -1 : 0;
}
