#!/usr/bin/env bash
# test_lane_fatal.sh — a fatal error of the idempotent lane producer is never
# "recovered": the mock broker answers the gateway's first
# DLQ write with OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka raises as a
# fatal idempotence error (rd_kafka_fatal_error). The gateway logs it
# (lane_producer_fatal), stops, commits only the finished prefix (up to the
# record whose DLQ write failed, not the successes after it) and exits 1.
# A restarted gateway (a fresh producer) writes that record to the DLQ and
# finishes the rest: nothing lost.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1
start_handler
write_config "$T/gw.lua" lf none
{ printf 'k1\t{"id":"w1","mode":"ok"}\nk2\t{"id":"p2","mode":"permanent"}\n'; gen_records 20 "ok:1"; } | produce src
broker_ctl request-errors Produce 1 OUT_OF_ORDER_SEQUENCE_NUMBER >/dev/null || die "broker_ctl failed"
start_gateway gw1 "$T/gw.lua"
stopped() { ! kill -0 "$GW_PID" 2>/dev/null; }
wait_for 40 stopped && ok "the gateway stopped by itself" || { not_ok "the gateway is still running after 40 s"; kill -9 "$GW_PID"; }
RC=0; wait "$GW_PID" || RC=$?
check "it exits 1 (exit $RC)" [ "$RC" = 1 ]
check "the fatal error is logged with its cause" \
  grep -q '"event":"lane_producer_fatal","error":"OUT_OF_ORDER_SEQUENCE_NUMBER"' "$T/gw1.err"
check "the stop names it" grep -q '"event":"stop","msg":"fatal lane producer error' "$T/gw1.err"
"$EG" offsets -b "$BOOTSTRAP" -g lf src >"$T/off1.txt" 2>&1
check "the committed offset stops at the unfinished record (offset 1): $(awk '$1=="src"{print $3}' "$T/off1.txt")" \
  [ "$(awk '$1=="src"{print $3}' "$T/off1.txt")" -le 1 ]
dump src.dlq "$T/dlq1.json"
check "nothing reached the DLQ" [ ! -s "$T/dlq1.json" ]

broker_ctl clear-request-errors Produce >/dev/null || die "broker_ctl failed"
start_gateway gw2 "$T/gw.lua"
wait_drained lf src 40 && ok "a restarted gateway finishes every record" || not_ok "lag $(lag lf src)"
dump src.dlq "$T/dlq2.json"
check "p2 is in the DLQ" grep -q 'p2' "$T/dlq2.json"
stop_gateway "$GW_PID"
check "the second gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
