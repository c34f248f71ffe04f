/* test_replay_dest.c — replay_dest.c, where a replay may write (issue 28):
 * globs and ^regexes, the internal topics refused whatever the allow-list
 * says, and the default allow-list (an inbox's sources by DLQ name, else
 * the sources). */
#include "replay_dest.h"
#include "tap.h"

#include <string.h>

int main(void) {
    CHECK(eg_topic_match("payments", "payments") && !eg_topic_match("payments", "payments2"), "a name matches itself");
    CHECK(eg_topic_match("team-a.*", "team-a.orders") && eg_topic_match("team-a.*", "team-a.") &&
              !eg_topic_match("team-a.*", "team-b.orders") && eg_topic_match("*", "x") &&
              eg_topic_match("a*b*c", "aXbYbZc") && !eg_topic_match("a*b*c", "aXbYbZ"),
          "* matches any run");
    CHECK(eg_topic_match("^bill(ing)?$", "billing") && !eg_topic_match("^bill$", "billing") &&
              !eg_topic_match("^(", "("),
          "a ^regex matches as POSIX ERE; one that does not compile matches nothing");
    CHECK(eg_topic_pattern_ok("a.b-c_*") && !eg_topic_pattern_ok("") && !eg_topic_pattern_ok("a b") &&
              !eg_topic_pattern_ok("^(") && eg_topic_pattern_ok("^a+$"),
          "patterns are checked");

    char why[200];
    const char *internal[] = {"__consumer_offsets", "__transaction_state", "errgate.audit",
                              "payments.state",     "payments-gw.fences",  NULL};
    for (const char **t = internal; *t; t++)
        CHECK(eg_replay_internal(NULL, *t, why, sizeof why) && why[0], "without a config, %s is internal (%s)", *t,
              why);
    CHECK(!eg_replay_internal(NULL, "payments", why, sizeof why), "payments is not");

    eg_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char *topics[] = {"payments-dlt", "^legacy\\..*-dlq$"};
    cfg.topics = topics;
    cfg.ntopics = 2;
    cfg.lane_dlq = "{topic}.dlq";
    cfg.lane_quarantine = "{topic}.quarantine";
    cfg.lane_retry = "{topic}.retry.{rung}";
    cfg.audit_topic = "ops.audit";
    cfg.inbox = "auto";
    CHECK(eg_replay_internal(&cfg, "ops.audit", why, sizeof why) &&
              !eg_replay_internal(&cfg, "errgate.audit", why, sizeof why),
          "the audit topic is the config's");
    CHECK(eg_replay_internal(&cfg, "payments-dlt.retry.replay", why, sizeof why) &&
              eg_replay_internal(&cfg, "payments-dlt.dlq", why, sizeof why) &&
              eg_replay_internal(&cfg, "payments-dlt", why, sizeof why) &&
              eg_replay_internal(&cfg, "legacy.x-dlq", why, sizeof why),
          "an inbox's lanes, rungs and sources (literal or matched) are internal");
    CHECK(eg_replay_allowed(&cfg, "payments") && !eg_replay_allowed(&cfg, "billing") && !eg_replay_allowed(&cfg, "") &&
              !eg_replay_allowed(&cfg, "legacy.x"),
          "the default of an inbox: the topics its literal sources are DLQs of by name");
    char *t2[] = {"orders.DLT", "a_dlq", "dlq.b"};
    cfg.topics = t2;
    cfg.ntopics = 3;
    cfg.lane_dlq = "dlq.{topic}";
    CHECK(eg_replay_allowed(&cfg, "orders") && eg_replay_allowed(&cfg, "a") && eg_replay_allowed(&cfg, "b") &&
              !eg_replay_allowed(&cfg, "orders.DLT"),
          "Spring's .DLT, _dlq, and lanes.dlq's own template");
    char *allow[] = {"billing", "team-*"};
    cfg.replay_allow = allow;
    cfg.nreplay_allow = 2;
    cfg.replay_allow_set = 1;
    CHECK(eg_replay_allowed(&cfg, "billing") && eg_replay_allowed(&cfg, "team-x") && !eg_replay_allowed(&cfg, "orders"),
          "source.replay_allow replaces the default");
    cfg.nreplay_allow = 0;
    CHECK(!eg_replay_allowed(&cfg, "orders"), "an empty source.replay_allow allows nothing");
    cfg.replay_allow_set = 0;
    cfg.inbox = NULL;
    char *t3[] = {"orders", "^shop\\..*"};
    cfg.topics = t3;
    cfg.ntopics = 2;
    CHECK(eg_replay_allowed(&cfg, "orders") && eg_replay_allowed(&cfg, "shop.x") &&
              !eg_replay_allowed(&cfg, "billing") && !eg_replay_internal(&cfg, "orders", why, sizeof why),
          "not an inbox: the sources (where a lane's records were born), which are not internal");
    char text[300];
    eg_replay_allow_text(&cfg, text, sizeof text);
    CHECK(strstr(text, "orders") != NULL, "the allow-list is named in messages (%s)", text);
    return TAP_DONE();
}
