#!/usr/bin/env bash
# test_stop.sh — `stop` means stop: a `bug` record (HTTP 500 -> systemic ->
# stop) ends the gateway with a non-zero exit, nothing past it is consumed
# by the target or committed, and a restart stops again at the same record.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
{ for i in $(seq 1 30); do
    m=ok; [ "$i" = 15 ] && m=bug
    printf 'k%d\t{"id":"r%d","mode":"%s"}\n' "$i" "$i" "$m"
  done; } | produce src
write_config "$T/gw.lua" stopg partition

committed() { "$EG" offsets -b "$BOOTSTRAP" -g stopg src | awk '$1=="src"{print $3}'; }
for run in 1 2; do
  start_gateway "gw$run" "$T/gw.lua"
  rc=0; wait_for 60 bash -c "! kill -0 $GW_PID" || { not_ok "run $run: gateway did not stop"; kill -9 "$GW_PID"; }
  wait "$GW_PID" || rc=$?
  check "run $run: the gateway exits non-zero on stop (exit $rc)" [ "$rc" = 3 ]
  check "run $run: the stop decision names the bug record (offset 14)" \
    grep -q '"event":"decision".*"offset":14,.*"action":"stop"' "$T/gw$run.err"
  c=$(committed)
  check "run $run: committed offset $c is at or below the bug record (14)" [ "$c" -le 14 ]
  check "run $run: the finished prefix before it was committed (committed = 14)" [ "$c" = 14 ]
done
check "records after the bug record never reached the handler" bash -c "! grep -Eq '^ok r(1[6-9]|2[0-9]|30) ' '$T/ok.log'"
check "the records before it all did (14 distinct)" [ "$(awk '{print $2}' "$T/ok.log" | sort -u | wc -l)" = 14 ]
check "readable reason in the log" grep -q '"event":"stop".*the policy decided stop' "$T/gw1.err"

# stop turns readiness false at once: a slow record keeps the gateway
# draining after the stop decision, and meanwhile /readyz says 503 stopping
printf 'a\t{"id":"s1","mode":"slow-4000"}\nb\t{"id":"s2","mode":"bug"}\n' | produce st2
write_config "$T/ready.lua" stopr none 'admin = { listen = "127.0.0.1:0" },'
sed -i 's/topics = { "src" }/topics = { "st2" }/' "$T/ready.lua"
start_gateway gwr "$T/ready.lua"
ADDR=$(admin_addr gwr) || die "no admin address"
wait_for 30 grep -q '"event":"decision".*"action":"stop"' "$T/gwr.err" || not_ok "no stop decision"
body=$(admin_get "$ADDR" /readyz)
check "after the stop decision, while still draining, /readyz is 503 stopping ($(http_code) $body)" \
  bash -c '[ "$1" = 503 ] && grep -q "stopping" <<<"$2"' _ "$(http_code)" "$body"
rc=0; wait_for 30 bash -c "! kill -0 $GW_PID"; wait "$GW_PID" || rc=$?
check "and the gateway then exits 3 (exit $rc)" [ "$rc" = 3 ]
