#!/usr/bin/env bash
# test_target_adaptive.sh — the adaptive concurrency limit towards the
# target (issue 30 item 3; adaptive.h): a target that serves 4 requests at
# once (50 ms each) and sheds the rest with 503 (capacity_handler.py). 300
# records, ordering none, the HTTP target's concurrency 32.
#   - with target.adaptive = { min = 1, max = 32 }, every record is
#     delivered, the limit (errgate_target_concurrency_limit, sampled while
#     it drains) rose above its floor and came down again after an overload
#     (AIMD's saw-tooth), and few requests were shed (under 20%);
#   - the same records and target without it: at least 3 times as many 503s
#     (the gateway sends 32 at a time into a target that serves 4).
source "$(dirname "$0")/lib.sh"
N=300 CAP=4
start_broker --topic src:4 --topic src.dlq:1 --topic src2:4 --topic src2.dlq:1
for t in src src2; do
  for i in $(seq 1 $N); do printf 'k%d\t{"id":"r%d","mode":"ok"}\n' $((i % 50)) "$i"; done | produce $t
done
config() { # config FILE GROUP TOPIC EXTRA
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "$3" }, ordering = "none", max_inflight = 500 },
  target = { http = { url = "$HANDLER_URL", timeout = 3000, concurrency = 32 }, $4 },
  policy = "$ROOT/policies/default.lua",
  commit_interval = 200,
  shutdown_timeout = 5000,
  admin = { listen = "127.0.0.1:0" },
  kafka = { ["session.timeout.ms"] = 6000, ["heartbeat.interval.ms"] = 500 },
}
CFG
}
handler() { # handler LOG: a capacity handler, HANDLER_URL set
  bg "h$1" $PY "$ROOT/spec/e2e/capacity_handler.py" "$T/$1.log" $CAP 0.05
  wait_for 10 grep -q '^listening=' "$T/h$1.out" || die "handler did not start: $(cat "$T/h$1.err")"
  HANDLER_URL="http://$(sed -n '1s/^listening=//p' "$T/h$1.out")/"
}
shed() { awk '$3 == 503' "$T/$1.log" | wc -l; }
served() { awk '$3 == 200' "$T/$1.log" | wc -l; }

handler ada
config "$T/ada.lua" ada src 'adaptive = { min = 1, max = 32 },'
start_gateway gw "$T/ada.lua"
ADDR=$(admin_addr gw) || die "no admin address: $(tail -3 "$T/gw.err")"
: >"$T/limits.txt"
t_end=$((SECONDS + 90))
until [ "$(served ada)" -ge $N ] && lag_is_zero ada src; do
  [ "$SECONDS" -ge "$t_end" ] && break
  metric "$ADDR" errgate_target_concurrency_limit >>"$T/limits.txt"
  sleep 0.2
done
stop_gateway "$GW_PID"
check "with the adaptive limit every record is delivered ($(served ada) served, lag $(lag ada src))" \
  bash -c "[ $(served ada) -ge $N ] && [ '$(lag ada src)' = 0 ]"
peak=$(sort -n "$T/limits.txt" | tail -1)
check "the limit rose above its floor while it drained (samples: $(tr '\n' ' ' <"$T/limits.txt" | cut -c1-200))" \
  [ "${peak:-0}" -ge 3 ]
check "and came down again after an overload (a sample below an earlier peak)" \
  awk 'BEGIN { p = 0; d = 0 } $1 == "?" { next } { if ($1 + 0 < p) d = 1; if ($1 + 0 > p) p = $1 + 0 } END { exit !d }' "$T/limits.txt"
SA=$(shed ada)
check "few requests were shed: $SA 503s for $(served ada) served (< 20%)" [ $((SA * 5)) -lt "$(served ada)" ]

handler fixed
config "$T/fixed.lua" fixed src2 ''
start_gateway gw2 "$T/fixed.lua"
t_end=$((SECONDS + 90))
until lag_is_zero fixed src2; do [ "$SECONDS" -ge "$t_end" ] && break; sleep 0.3; done
stop_gateway "$GW_PID"
SF=$(shed fixed)
check "without it the same records were shed 3 times as often or more ($SF 503s against $SA)" \
  bash -c "[ $SF -ge $((3 * SA)) ] && [ $SF -ge 50 ]"
exit $FAILED
