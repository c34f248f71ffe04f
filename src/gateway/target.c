/* target.c — choose and build the configured target (see target.h). */
#include "target.h"

eg_target *eg_target_new(const eg_config *cfg, struct event_base *base, eg_target_done_fn done, void *arg, char *err,
                         size_t errlen) {
    eg_target *t = cfg->target_kind != EG_TARGET_HTTP ? eg_target_lua_new(cfg, base, err, errlen)
                                                      : eg_target_http_new(cfg, base, err, errlen);
    if (!t) return NULL;
    t->base = base;
    t->done = done;
    t->done_arg = arg;
    return t;
}
