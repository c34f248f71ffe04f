#!/usr/bin/env bash
# test_stop_wait.sh — on_stop = "wait": a stop decision keeps the gateway
# alive with consumption paused, nothing committed past the stopping record,
# /readyz 503 with the reason, until `errgate ctl resume` (bearer token)
# decides that record again from scratch (attempt 1 again) and goes on; a
# resume without a wait, without a token or with a wrong one is refused
# clearly; SIGTERM while waiting exits 0 with the offsets committed up to
# the stopping record.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1
start_handler
cat >"$T/stop503.lua" <<'LUA'
local policy = require "errgate.policy"
return policy.define { name = "stop503", version = "1",
  classify = { { status = 503, class = "down" }, { class = "other" } },
  route = { down = "stop", other = "dlq", default = "dlq" } }
LUA
echo "s3cret-token" >"$T/token"
echo "wrong-token" >"$T/wrong"
{ for i in $(seq 1 10); do
    m=ok; [ "$i" = 5 ] && m=transient-2
    printf 'k%d\t{"id":"w%d","mode":"%s"}\n' "$i" "$i" "$m"
  done; } | produce src
write_config "$T/gw.lua" waitg partition "on_stop = \"wait\", admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
sed -i "s|policy = \".*\"|policy = \"$T/stop503.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
committed() { "$EG" offsets -b "$BOOTSTRAP" -g waitg src | awk '$1=="src"{print $3}'; }
ctl() { "$EG" ctl --admin "http://$ADDR" "$@"; }

wait_for 60 grep -q '"event":"stop_wait"' "$T/gw.err" || die "no stop_wait: $(tail -5 "$T/gw.err")"
check "the stop decision names offset 4, attempt 1" \
  grep -q '"event":"decision".*"offset":4,.*"action":"stop".*"attempt":1,' "$T/gw.err"
sleep 2
check "the gateway is still running after the stop" kill -0 "$GW_PID"
body=$(admin_get "$ADDR" /readyz)
check "/readyz is 503 with the stopping record as reason ($(http_code) $body)" \
  bash -c '[ "$1" = 503 ] && grep -q "stopped at src\[0\]@4" <<<"$2" && grep -q "ctl resume" <<<"$2"' _ "$(http_code)" "$body"
check "errgate_waiting_for_operator is 1" bash -c "curl -s http://$ADDR/metrics | grep -q '^errgate_waiting_for_operator 1'"
wait_for 10 bash -c '[ "$(committed)" = 4 ]'
check "committed offset is the stopping record's (4), not past it ($(committed))" [ "$(committed)" = 4 ]
check "nothing after the stopping record reached the handler" bash -c "! grep -Eq '^ok w([6-9]|10) ' '$T/ok.log'"

out=$("$EG" ctl --admin "http://$ADDR" resume 2>&1); rc=$?
check "resume without a token: usage error, exit 2 ($rc: $out)" exits_with "$rc" 2 "no token" "$out"
out=$(ctl --token-file "$T/wrong" resume 2>&1); rc=$?
check "resume with a wrong token: refused, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 401" "$out"
check "still waiting after the refusals" bash -c "curl -s http://$ADDR/readyz | grep -q 'stopped at'"

out=$(ctl --token-file "$T/token" resume 2>&1); rc=$?
check "ctl resume: exit 0, names the record ($rc: $out)" exits_with "$rc" 0 "resumed: stopped at src\[0\]@4" "$out"
# transient-2 fails once more: decided again from scratch, it is a new stop at attempt 1
wait_for 30 bash -c "[ \$(grep -c '\"event\":\"stop_wait\"' '$T/gw.err') -ge 2 ]" || not_ok "no second stop_wait"
check "decided again from scratch: the second stop is at attempt 1 too" \
  [ "$(grep -c '"event":"decision".*"offset":4,.*"action":"stop".*"attempt":1,' "$T/gw.err")" = 2 ]
out=$(ctl --token-file "$T/token" --json resume 2>&1); rc=$?
check "ctl --json resume: exit 0, the endpoint's JSON ($rc: $out)" exits_with "$rc" 0 '"result":"resumed"' "$out"
wait_drained waitg src 60 || not_ok "not drained after resume"
check "after resume everything was consumed and committed (lag 0)" lag_is_zero waitg src
check "the stopping record reached the handler" grep -q '^ok w5 ' "$T/ok.log"
check "and every record after it (10 distinct)" [ "$(awk '{print $2}' "$T/ok.log" | sort -u | wc -l)" = 10 ]
body=$(admin_get "$ADDR" /readyz)
check "/readyz is ready again ($(http_code) $body)" [ "$(http_code)" = 200 ]
out=$(ctl --token-file "$T/token" resume 2>&1); rc=$?
check "resume while not waiting: refused with 409, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 409" "$out"
out=$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/resume")
check "GET /resume is 405 ($out)" [ "$out" = 405 ]

# SIGTERM while waiting: exit 0, committed up to the stopping record
printf 'k11\t{"id":"w11","mode":"transient-5"}\nk12\t{"id":"w12","mode":"ok"}\n' | produce src
wait_for 30 bash -c "[ \$(grep -c '\"event\":\"stop_wait\"' '$T/gw.err') -ge 3 ]" || not_ok "no third stop_wait"
wait_for 10 bash -c '[ "$(committed)" = 10 ]'
stop_gateway "$GW_PID"
check "SIGTERM while waiting exits 0 ($RC)" [ "$RC" = 0 ]
check "committed offset is the stopping record's (10) after SIGTERM ($(committed))" [ "$(committed)" = 10 ]
check "the record after it never reached the handler" bash -c "! grep -q '^ok w12 ' '$T/ok.log'"
exit $FAILED
