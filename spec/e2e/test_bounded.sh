#!/usr/bin/env bash
# test_bounded.sh — bounded resources (DESIGN §2.8): the in-flight caps hold
# while a slow target lets work pile up (scraped from /metrics), and a hold
# far longer than max.poll.interval.ms costs neither group membership nor
# records: the gateway keeps polling while its partitions wait.
source "$(dirname "$0")/lib.sh"

# --- in-flight caps: 4 partitions x max_inflight 30, total cap 80
start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
gen_records 2000 "slow-5:1" | produce src
write_config "$T/gw.lua" bounded none 'admin = { listen = "127.0.0.1:0" },'
sed -i 's/max_inflight = 500 }/max_inflight = 30, max_inflight_total = 80 }/' "$T/gw.lua"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin address"
max=0 samples=0
until [ "$(lag bounded src)" = 0 ]; do
  v=$(admin_get "$ADDR" /metrics | awk '$1=="errgate_inflight_records"{print int($2)}')
  [ -n "$v" ] && { samples=$((samples + 1)); [ "$v" -gt "$max" ] && max=$v; }
  [ "$samples" -gt 400 ] && break
  sleep 0.05
done
diag "in-flight records: max $max over $samples samples"
check "in-flight records never exceed the total cap of 80 (max $max)" [ "$max" -le 80 ]
check "the caps were actually reached (max $max >= 40): the test measured something" [ "$max" -ge 40 ]
wait_drained bounded src 60 && ok "all 2000 records finished under the caps" || not_ok "lag $(lag bounded src)"
stop_gateway "$GW_PID"

# --- a 7 s hold (over twice max.poll.interval.ms = 3000): the target is down
kill -TERM "$HANDLER_PID"; wait "$HANDLER_PID" 2>/dev/null
PORT=${HANDLER_URL##*:}; PORT=${PORT%/}
printf 'a\t{"id":"h1","mode":"ok"}\nb\t{"id":"h2","mode":"ok"}\n' | kcat -P -b "$BOOTSTRAP" -t held -K $'\t'
# statistics off: their events would wake the loop and hide a missing poll tick
# (max.poll.interval.ms may not be below session.timeout.ms)
write_config "$T/hold.lua" holdg partition 'kafka = { ["session.timeout.ms"] = 3000, ["heartbeat.interval.ms"] = 500, ["max.poll.interval.ms"] = 3000, ["statistics.interval.ms"] = 0 },'
sed -i 's/"src"/"held"/' "$T/hold.lua"
start_gateway gwhold "$T/hold.lua"
wait_for 30 grep -q '"action":"hold"' "$T/gwhold.err" || die "no hold decision"
sleep 7
check "no poll-interval overrun during a 7 s hold" bash -c "! grep -qi 'maximum poll interval' '$T/gwhold.err'"
check "the partitions were never revoked while held" bash -c "! grep -q '\"event\":\"revoke\"' '$T/gwhold.err'"
bg handler2 "$FLAKY" --port "$PORT" --log "$T/ok2.log"
wait_drained holdg held 30 && ok "the held records are delivered when the target returns" || not_ok "lag $(lag holdg held)"
stop_gateway "$GW_PID"
check "exit 0 (exit $RC)" [ "$RC" = 0 ]
