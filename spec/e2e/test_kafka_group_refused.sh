#!/usr/bin/env bash
# test_kafka_group_refused.sh — a group setting a real broker refuses for
# good (here a session timeout below its group.min.session.timeout.ms, 1 s
# in the harness) ends the gateway before it consumes anything: one
# group_refused line naming the setting and exit 2, instead of a warning a
# line for ever (librdkafka 2.0.2 tries to join again every few seconds).
# The embedded broker checks no session bounds.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"

start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
gen_records 5 "ok:1" | produce src
write_config "$T/gw.lua" refused none
sed -i 's/\["session.timeout.ms"\] = 6000/["session.timeout.ms"] = 500, ["heartbeat.interval.ms"] = 100/; s/, \["heartbeat.interval.ms"\] = 500//' "$T/gw.lua"
grep -q '"session.timeout.ms"\] = 500' "$T/gw.lua" || die "session.timeout.ms not set in gw.lua"
start_gateway gw "$T/gw.lua"
t0=$SECONDS
wait "$GW_PID"; rc=$?
check "the gateway ends with exit 2 within 30 s (exit $rc, $((SECONDS - t0)) s)" \
  eval '[ "$rc" = 2 ] && [ $((SECONDS - t0)) -le 30 ]'
check "one group_refused line names the session timeout" \
  grep -q '"event":"group_refused".*session.timeout.ms' "$T/gw.err"
lag_is_5() { [ "$(lag refused src)" = 5 ]; }
wait_for 20 lag_is_5
check "nothing was consumed or committed (lag $(lag refused src) of 5)" lag_is_5
check "nothing reached the target" [ ! -s "$T/ok.log" ]
exit $FAILED
