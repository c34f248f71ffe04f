#!/usr/bin/env bash
# test_dlq_guard.sh — the dead-letter flood guard: with max_per_second = 1
# over window = 2 (2 dead letters in the window), a storm of permanent
# failures puts 2 records in the DLQ and then holds the rest (reason
# dlq_guard, nothing committed past the held record), loudly: a log line,
# errgate_dlq_guard_tripped{topic="src"} 1, /readyz 503 with the reason.
# `errgate ctl dlq-guard reset` re-arms it at once (2 more, then it trips
# again); without a token it is refused. With action = "stop" the guard's
# trip is a stop (exit 3). Re-arming after the cooldown is
# c/test_dlq_guard's. A class whose route entry says guard = false always
# dead-letters, and is not counted.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1 --topic g2:1 --topic g2.dlq:1 --topic g3:1 --topic g3.dlq:1
start_handler
echo "guard-token" >"$T/token"
for t in src g2; do
  { for i in $(seq 1 10); do printf 'k%d\t{"id":"%s%d","mode":"permanent"}\n' "$i" "$t" "$i"; done; } | produce $t
done
dlq_count() { kcat -C -b "$BOOTSTRAP" -t "$1" -e -q 2>/dev/null | wc -l; }
# wait_dlq TOPIC N SECONDS: until TOPIC holds N records (a read a second: kcat takes a while)
wait_dlq() { local i; for i in $(seq "$3"); do [ "$(dlq_count "$1")" -ge "$2" ] && return 0; sleep 1; done; return 1; }
committed() { "$EG" offsets -b "$BOOTSTRAP" -g "$1" "$2" | awk -v t="$2" '$1==t{print $3}'; }

write_config "$T/gw.lua" guardg partition \
  "dlq_guard = { max_per_second = 1, window = 2, cooldown = 600 }, admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
sed -i "s|policy = \".*\"|policy = \"$ROOT/spec/fixtures/policies/dlq_everything.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 60 grep -q '"event":"dlq_guard_tripped"' "$T/gw.err" || die "the guard never tripped: $(tail -5 "$T/gw.err")"
check "the trip is logged at error level with the topic" \
  grep -q '"level":"error".*"event":"dlq_guard_tripped".*"topic":"src"' "$T/gw.err"
wait_for 10 grep -q '"event":"decision".*"action":"hold".*"reason":"dlq_guard"' "$T/gw.err"
check "the third dead letter became a hold with reason dlq_guard" \
  grep -q '"event":"decision".*"offset":2,.*"action":"hold".*"reason":"dlq_guard"' "$T/gw.err"
sleep 3
check "exactly 2 records reached the DLQ ($(dlq_count src.dlq))" [ "$(dlq_count src.dlq)" = 2 ]
check "committed offset is the held record's (2) ($(committed guardg src))" [ "$(committed guardg src)" = 2 ]
check "the held record is decided again (and held again) while tripped" \
  [ "$(grep -c '"event":"decision".*"offset":2,.*"reason":"dlq_guard"' "$T/gw.err")" -ge 2 ]
body=$(admin_get "$ADDR" /readyz)
check "/readyz is 503 naming the guard and the topic ($(http_code) $body)" \
  bash -c '[ "$1" = 503 ] && grep -q "dlq_guard tripped for src" <<<"$2"' _ "$(http_code)" "$body"
metrics=$(curl -s "http://$ADDR/metrics")
check "errgate_dlq_guard_tripped{topic=\"src\"} is 1" grep -q '^errgate_dlq_guard_tripped{topic="src"} 1' <<<"$metrics"
check "no dlq_guard decision was counted as a policy fallback" grep -q '^errgate_policy_fallbacks_total 0' <<<"$metrics"

out=$("$EG" ctl --admin "http://$ADDR" --token-file /nonexistent dlq-guard reset 2>&1); rc=$?
check "reset with an unreadable token file: exit 1, said ($rc: $out)" exits_with "$rc" 1 "cannot read the token file" "$out"
out=$(curl -s -X POST "http://$ADDR/dlq-guard/reset"); code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$ADDR/dlq-guard/reset")
check "POST /dlq-guard/reset without a token is 401 ($code)" [ "$code" = 401 ]
check "still tripped after the refused resets ($(dlq_count src.dlq))" [ "$(dlq_count src.dlq)" = 2 ]
out=$("$EG" ctl --admin "http://$ADDR" --token-file "$T/token" dlq-guard reset 2>&1); rc=$?
check "ctl dlq-guard reset: exit 0, one guard re-armed ($rc: $out)" exits_with "$rc" 0 '1 tripped guard(s) re-armed' "$out"
check "the re-arm is logged, by reset" grep -q '"event":"dlq_guard_rearmed".*"topic":"src".*"by":"reset"' "$T/gw.err"
wait_dlq src.dlq 4 20
wait_for 10 bash -c "[ \$(grep -c '\"event\":\"dlq_guard_tripped\"' '$T/gw.err') -ge 2 ]" || not_ok "no second trip"
sleep 2
check "after the reset 2 more dead letters went through, then it tripped again ($(dlq_count src.dlq))" \
  [ "$(dlq_count src.dlq)" = 4 ]
stop_gateway "$GW_PID"
check "SIGTERM while tripped exits 0 ($RC)" [ "$RC" = 0 ]
check "the held record stays uncommitted ($(committed guardg src))" [ "$(committed guardg src)" = 4 ]

# action = "stop": the trip stops the gateway (exit 3)
write_config "$T/stop.lua" guards partition 'dlq_guard = { max_per_second = 1, window = 2, action = "stop" },'
sed -i -e "s|policy = \".*\"|policy = \"$ROOT/spec/fixtures/policies/dlq_everything.lua\"|" \
  -e 's/topics = { "src" }/topics = { "g2" }/' "$T/stop.lua"
start_gateway gws "$T/stop.lua"
rc=0; wait_for 60 bash -c "! kill -0 $GW_PID" || { not_ok "the gateway did not stop"; kill -9 "$GW_PID"; }
wait "$GW_PID" || rc=$?
check "action = \"stop\": the trip stops the gateway, exit 3 ($rc)" [ "$rc" = 3 ]
check "the stop decision has reason dlq_guard" \
  grep -q '"event":"decision".*"offset":2,.*"action":"stop".*"reason":"dlq_guard"' "$T/gws.err"
check "2 records reached g2.dlq ($(dlq_count g2.dlq))" [ "$(dlq_count g2.dlq)" = 2 ]
check "committed offset is the stopping record's (2) ($(committed guards g2))" [ "$(committed guards g2)" = 2 ]

# guard = false: the vip class always dead-letters while the guard holds the others
cat >"$T/vip.lua" <<'LUA'
local policy = require "errgate.policy"
return policy.define { name = "vip", version = "1",
  classify = { { explicit = true }, { class = "other" } },
  route = { vip = { action = "dlq", guard = false }, default = "dlq" } }
LUA
{ for i in $(seq 1 5); do
    printf 'o%d\t{"id":"o%d","mode":"permanent"}\n' "$i" "$i"
    printf 'v%d\t{"id":"v%d","mode":"explicit-vip-x"}\n' "$i" "$i"
  done; } | produce g3
write_config "$T/vip.cfg" guardv none 'dlq_guard = { max_per_second = 1, window = 2, cooldown = 600 },'
sed -i -e "s|policy = \".*\"|policy = \"$T/vip.lua\"|" -e 's/topics = { "src" }/topics = { "g3" }/' "$T/vip.cfg"
start_gateway gwv "$T/vip.cfg"
wait_for 60 grep -q '"event":"dlq_guard_tripped"' "$T/gwv.err" || not_ok "the guard never tripped on g3"
wait_dlq g3.dlq 7 20
sleep 3
dump g3.dlq "$T/g3dlq.json"
# classes: the error.class header of each g3.dlq record, one a line
classes() { $PY -c 'import json,sys
for l in open(sys.argv[1]):
    h = json.loads(l).get("headers") or []
    print(dict(zip(h[0::2], h[1::2])).get("error.class"))' "$T/g3dlq.json"; }
check "guard = false: all 5 vip records reached g3.dlq" [ "$(classes | grep -c '^vip$')" = 5 ]
check "and only 2 of the 5 others ($(classes | grep -c '^other$'))" [ "$(classes | grep -c '^other$')" = 2 ]
check "no vip decision was held" bash -c "! grep -q '\"event\":\"decision\".*\"class\":\"vip\".*\"action\":\"hold\"' '$T/gwv.err'"
stop_gateway "$GW_PID"
exit $FAILED
