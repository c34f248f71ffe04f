#!/usr/bin/env bash
# test_ladder_reload.sh — a rung's delay comes from the policy deciding now:
# records wait in a rung named "slow" whose delay is 60 s; the SRE edits
# the policy to `{ name = "slow", delay = "1s" }` (same rung topic) and the
# records already waiting there come back within seconds, not a minute.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
N=40

start_broker $(ladder_topics src slow)
handler_at h
policy() { # policy DELAY: one ladder with a single rung "slow" of DELAY
  # (inline, not in spec/fixtures/policies/: each call writes another delay
  # and version into the policy, and the test edits the watched file with it)
  cat <<LUA
local policy = require "errgate.policy"
return policy.define {
  name = "reload-rung", version = "$1",
  classify = { { status = 503, class = "transient" }, { class = "unknown" } },
  retry = { provider = { ladder = { { name = "slow", delay = "$1" } } } },
  route = { transient = { ladder = "provider" }, default = "dlq" },
  examples = { { failure = 503, expect = { action = "ladder", rung = "slow" } } },
}
LUA
}
policy 60s >"$T/policy.lua"
ladder_config "$T/gw.lua" rl src none "$T/policy.lua"
# outage-MS: 503 until the handler is 6 s old, then 200
gen_records "$N" "outage-6000:1" | produce src
start_gateway gw "$T/gw.lua"
wait_for 20 all_committed rl src || die "source not committed: lag $(lag rl src)"
check "every record went to the 60 s rung" [ "$(grep -c '"action":"ladder".*"lane":"src.retry.slow"' "$T/gw.err")" = "$N" ]
sleep 6 # the handler has recovered; the records still have most of a minute to wait
t0=$SECONDS
policy 1s >"$T/policy.lua" # an edit: the file watch reloads it
wait_for 10 grep -q '"event":"reload".*"result":"ok".*"trigger":"file"' "$T/gw.err" || not_ok "no reload"
check "the reload logged the rung's new delay" grep -q '"event":"rung_delay".*src.retry.slow: 60000 ms -> 1000 ms' "$T/gw.err"
wait_for 20 bash -c "[ \$(awk '{print \$2}' '$T/h.log' 2>/dev/null | sort -u | wc -l) -ge $N ]" &&
  ok "the waiting records came back under the new delay ($((SECONDS - t0)) s after the edit)" ||
  not_ok "$(awk '{print $2}' "$T/h.log" 2>/dev/null | sort -u | wc -l) of $N succeeded $((SECONDS - t0)) s after the edit"
wait_for 20 all_committed rl src.retry.slow && ok "the rung is committed" || not_ok "rung lag"
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
