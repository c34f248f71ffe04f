/* replay_dest.c — where a replay may write (see replay_dest.h).
 *
 * Nothing here is cached: a check expands the config's lane templates
 * afresh and frees them, which costs microseconds per replayed record (a
 * replay is rare next to the records the gateway passes on) and keeps no
 * state to own or free. Globs have only `*`, matched by the classic
 * backtracking of the last star, linear in practice and at most
 * |pattern| x |topic| steps (both at most 249 bytes). */
#include "replay_dest.h"
#include "util.h"

#include <regex.h>
#include <stdio.h>
#include <string.h>

/* Suffixes that name a DLQ of the topic before them (Spring Kafka's -dlt
 * and .DLT, and the usual spellings of the rest). */
static const char *const dlq_suffixes[] = {"-dlt", ".DLT", ".dlt", "_dlt", "-dlq", ".dlq", "_dlq", "-DLT", NULL};

/* 1 when topic matches the glob p (`*` any run). */
static int glob(const char *p, const char *t) {
    const char *star = NULL, *mark = NULL;
    while (*t) {
        if (*p == '*') {
            star = p++;
            mark = t;
        } else if (*p == *t) {
            p++;
            t++;
        } else if (star) {
            p = star + 1;
            t = ++mark;
        } else {
            return 0;
        }
    }
    while (*p == '*') p++;
    return !*p;
}

int eg_topic_match(const char *pattern, const char *topic) {
    if (!eg_topic_is_regex(pattern)) return glob(pattern, topic);
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) return 0;
    int m = regexec(&re, topic, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

int eg_topic_pattern_ok(const char *pattern) {
    size_t n = strlen(pattern);
    if (n == 0) return 0;
    if (eg_topic_is_regex(pattern)) {
        regex_t re;
        if (n > 1024 || regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) return 0;
        regfree(&re);
        return 1;
    }
    if (n > EG_TOPIC_NAME_MAX) return 0;
    return strspn(pattern, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-*") == n;
}

/* 1 when s ends with suffix. */
static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

int eg_replay_internal(const eg_config *cfg, const char *topic, char *why, size_t whylen) {
    const char *audit = cfg && cfg->audit_topic ? cfg->audit_topic : EG_DEF_AUDIT_TOPIC;
    const char *lane = NULL;
    if (!strncmp(topic, "__", 2)) snprintf(why, whylen, "a Kafka internal topic (__*)");
    else if (ends_with(topic, ".state")) snprintf(why, whylen, "a state topic (*.state)");
    else if (ends_with(topic, ".fences")) snprintf(why, whylen, "a fence topic (GROUP.fences)");
    else if (!strcmp(topic, audit)) snprintf(why, whylen, "the audit topic (admin.audit_topic)");
    else if (cfg && eg_config_own_lane(cfg, topic, &lane)) snprintf(why, whylen, "one of the gateway's %s lanes", lane);
    else {
        for (int i = 0; cfg && cfg->inbox && i < cfg->ntopics;
             i++) /* a gateway's own source is where replays go home */
            if (eg_topic_is_regex(cfg->topics[i]) ? eg_topic_match(cfg->topics[i], topic)
                                                  : !strcmp(cfg->topics[i], topic)) {
                snprintf(why, whylen, "the inbox itself (a source topic of the gateway)");
                return 1;
            }
        return 0;
    }
    return 1;
}

/* 1 when topic is what template tmpl (one {topic}, no other placeholder)
 * makes of `orig`, i.e. orig is topic without tmpl's prefix and suffix. */
static int template_of(const char *tmpl, const char *src, const char *orig) {
    const char *at = strstr(tmpl, "{topic}");
    if (!at || strchr(at + 7, '{') || memchr(tmpl, '{', (size_t)(at - tmpl))) return 0;
    size_t pre = (size_t)(at - tmpl), suf = strlen(at + 7), n = strlen(src);
    return n > pre + suf && !strncmp(src, tmpl, pre) && !strcmp(src + n - suf, at + 7) &&
           strlen(orig) == n - pre - suf && !strncmp(src + pre, orig, n - pre - suf);
}

/* 1 when source topic src is, by its name, a DLQ of topic (see
 * eg_replay_allowed). */
static int dlq_of(const eg_config *cfg, const char *src, const char *topic) {
    size_t n = strlen(topic);
    for (const char *const *s = dlq_suffixes; *s; s++)
        if (strlen(src) == n + strlen(*s) && !strncmp(src, topic, n) && !strcmp(src + n, *s)) return 1;
    return (cfg->lane_dlq && template_of(cfg->lane_dlq, src, topic)) ||
           (cfg->lane_quarantine && template_of(cfg->lane_quarantine, src, topic));
}

int eg_replay_allowed(const eg_config *cfg, const char *topic) {
    if (!topic[0]) return 0;
    if (cfg->replay_allow_set) {
        for (int i = 0; i < cfg->nreplay_allow; i++)
            if (eg_topic_match(cfg->replay_allow[i], topic)) return 1;
        return 0;
    }
    for (int i = 0; i < cfg->ntopics; i++) {
        const char *src = cfg->topics[i];
        if (cfg->inbox               ? !eg_topic_is_regex(src) && dlq_of(cfg, src, topic)
            : eg_topic_is_regex(src) ? eg_topic_match(src, topic)
                                     : !strcmp(src, topic))
            return 1;
    }
    return 0;
}

void eg_replay_allow_text(const eg_config *cfg, char *out, size_t outlen) {
    size_t n = (size_t)snprintf(out, outlen, "%s", cfg->replay_allow_set ? "source.replay_allow:" : "the default:");
    int any = 0;
    if (cfg->replay_allow_set) {
        for (int i = 0; i < cfg->nreplay_allow && n < outlen; i++, any = 1)
            n += (size_t)snprintf(out + n, outlen - n, "%s %s", any ? "," : "", cfg->replay_allow[i]);
    } else {
        for (int i = 0; i < cfg->ntopics && n < outlen; i++) {
            if (cfg->inbox && eg_topic_is_regex(cfg->topics[i])) continue;
            n += (size_t)snprintf(out + n, outlen - n, "%s %s%s", any ? "," : "",
                                  cfg->inbox ? "the topics of DLQ " : "", cfg->topics[i]);
            any = 1;
        }
    }
    if (!any && n < outlen) snprintf(out + n, outlen - n, " nothing");
}
