#!/usr/bin/env bash
# test_spill.sh — guarantee 3 with the spill journal (lanes.spill): the DLQ
# topic goes missing for 15 s while records flow. Lane writes not
# acknowledged within after_ms are appended to the local journal, which
# counts as durable: the source partitions keep flowing and committing past
# DLQ-bound records during the fault. After the fault the drainer delivers
# the journal to the DLQ and deletes its segments; a `kill -9` of the
# gateway while the journal holds frames (a second fault) and a restart
# lose nothing either. On a real cluster (3 brokers) the fault is the
# broker that alone holds the DLQ topic stopped (lib.sh, lane_outage).
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
N=3000

if [ "$BROKER" = kafka ]; then
  start_broker --brokers 3 --topic src:4 --topic src.dlq:4@3 --topic src.quarantine:4
else
  start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
fi
start_handler
SPILL="$T/spill"
write_config "$T/gw.lua" sp none "kafka = { [\"session.timeout.ms\"] = 6000, [\"message.timeout.ms\"] = 3000, [\"topic.metadata.propagation.max.ms\"] = 1000 },
  lanes = { spill = { dir = \"$SPILL\", after = 1000 } },
  admin = { listen = \"127.0.0.1:0\" },"
start_gateway gw "$T/gw.lua"
# warm-up: the lane producer has written to the DLQ before the fault
gen_records 200 "ok:50 permanent:50" | sed 's/"id":"r/"id":"w/' | produce src
wait_drained sp src 60 || die "warm-up did not drain"
"$EG" offsets -b "$BOOTSTRAP" -g sp src >"$T/warm.txt"
lane_outage src.dlq 15 || die "the lane outage was refused"
fault_end=$((SECONDS + 14))
gen_records "$N" "ok:80 permanent:20" | produce src
wait_for 12 lag_is_zero sp src && ok "during the DLQ fault every source record is committed (lane writes spilled)" ||
  not_ok "lag $(lag sp src) during the fault"
[ "$SECONDS" -lt "$fault_end" ] && ok "... and before the fault ended" || not_ok "the fault was over before the source drained"
check "records were spilled and logged" grep -q '"event":"spilled".*"lane":"src.dlq"' "$T/gw.err"
ls "$SPILL"/spill-*.eg >/dev/null 2>&1 && ok "the journal holds segments during the fault" || not_ok "no journal segment"
ADDR=$(admin_addr gw)
admin_get "$ADDR" /metrics >"$T/m1.txt"
check "spilled records counted" grep -q '^errgate_records_spilled_total{lane="src.dlq"} [1-9]' "$T/m1.txt"
# the journal keeps each lane partition's order: the spilled lines (the
# journal's append order; sampled, never reordered) name the records of a
# DLQ partition in the order their lane writes began (their decision lines)
$PY "$ROOT/spec/e2e/spill_order.py" "$T/gw.err" >"$T/order.txt" 2>&1 &&
  ok "each DLQ partition's records were spilled in the order their writes began ($(cat "$T/order.txt"))" ||
  not_ok "spill order: $(head -c 600 "$T/order.txt")"

# after the fault: the drainer delivers and deletes the segments
wait_for 40 bash -c "! ls '$SPILL'/spill-*.eg >/dev/null 2>&1" && ok "the journal drained after the fault" ||
  not_ok "segments left: $(ls "$SPILL")"
admin_get "$ADDR" /metrics >"$T/m2.txt"
check "drained frames counted" grep -q '^errgate_spill_frames_drained_total [1-9]' "$T/m2.txt"

# a second fault, and kill -9 while the journal holds frames
f0=$SECONDS
lane_outage src.dlq 20 || die "the second lane outage was refused"
gen_records "$N" "ok:60 permanent:40" | sed 's/"id":"r/"id":"s/' | produce src
wait_for 12 lag_is_zero sp src || not_ok "lag $(lag sp src) during the second fault"
wait_for 20 bash -c "grep -q '\"event\":\"spilled\".*\"offset\"' '$T/gw.err' && [ \$(grep -c '\"event\":\"spilled\"' '$T/gw.err') -gt 300 ]" || diag "few spills"
# kill -9 well before the fault ends (at its end the drainer, which keeps
# retrying, empties the journal within ~50 ms; a slow build, SAN=1, may need
# 12 s to reach the line above): the journal still holds frames
while [ "$SECONDS" -lt $((f0 + 14)) ]; do sleep 0.2; done
segs=$(ls "$SPILL"/spill-*.eg 2>/dev/null | wc -l)
kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
check "the gateway was killed with the journal not yet drained ($segs segments)" [ "$segs" -gt 0 ]
start_gateway gw2 "$T/gw.lua"
wait_for 40 bash -c "! ls '$SPILL'/spill-*.eg >/dev/null 2>&1" && ok "the restarted gateway drained the rest of the journal" ||
  not_ok "segments left after restart: $(ls "$SPILL")"
wait_drained sp src 60 || not_ok "lag $(lag sp src) after restart"
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
account sp 4 "$T/gw*.err"
