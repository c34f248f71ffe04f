#!/usr/bin/env bash
# test_lane_early_report.sh — the lane producer's delivery reports are served
# even when librdkafka queued a report before the gateway wired its queue to
# the loop (found by make chaos, seed 33). librdkafka signals a queue's pipe
# only when the queue turns non-empty; a gateway started while a broker was
# down had the "connection refused" error queued between rd_kafka_new and
# rd_kafka_queue_io_event_enable, so the queue never turned non-empty again:
# no delivery report was ever served, every lane record stayed unfinished,
# nothing was committed and the partitions stalled until the stop.
#
# The brokers are down when the gateway starts (up again 3 s later); an
# LD_PRELOAD shim (slow_pipe.c) makes pipe2 take 500 ms, so the refusal is
# surely queued first. Every
# record is permanent (400 -> DLQ): each needs its lane report before its
# offset may be committed.
source "$(dirname "$0")/lib.sh"

cc -shared -fPIC -O2 -o "$T/slow_pipe.so" "$ROOT/spec/e2e/slow_pipe.c" -ldl || die "cannot build the shim"
start_broker --brokers 3 --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
gen_records 200 "permanent:1" | produce src
write_config "$T/gw.lua" early none
broker_ctl broker-down all >/dev/null || die "broker-down refused"
# (a sanitizer build wants its runtime first among the preloaded libraries)
bg gw env LD_PRELOAD="$T/slow_pipe.so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
  "$EG" run -c "$T/gw.lua"
GW_PID=$LASTPID
# the lane producer is made (and meets the refusing brokers) first thing;
# the start then waits for the brokers (the audit topic is read before it)
sleep 3
broker_ctl broker-up all >/dev/null || die "broker-up refused"
wait_for 40 grep -q '"event":"start"' "$T/gw.err" || die "gateway did not start: $(tail -3 "$T/gw.err")"
check "the lane producer met the refusing broker before its queue was wired" \
  grep -q '"client":"errgate-lanes.*Connection refused' "$T/gw.err"
if wait_drained early src 40; then ok "every record dead-lettered and committed (lag 0)"
else not_ok "lag stays $(lag early src): lane reports not served ($(grep -c '"action":"dlq"' "$T/gw.err") dlq decisions)"; fi
dump src.dlq "$T/dlq.json"
check "200 records in src.dlq (got $(wc -l <"$T/dlq.json"))" [ "$(wc -l <"$T/dlq.json")" -ge 200 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
