#!/usr/bin/env bash
# test_lane_fatal.sh — a fatal error of the idempotent lane producer (the
# mock broker answers a DLQ write with OUT_OF_ORDER_SEQUENCE_NUMBER, which
# librdkafka raises as a fatal idempotence error, rd_kafka_fatal_error; on a
# real cluster librdkafka 2.0.2 raises it after a broker lost the tail of
# its log) replaces the producer in place (lanes.c):
#   - one fatal error: logged (lane_producer_fatal, then
#     lane_producer_replaced), counted (errgate_lane_producer_replaced_total),
#     the gateway goes on: the record whose write failed reaches the DLQ
#     through the fresh producer, every record is finished and committed,
#     and the replaced producer is destroyed once it served its last report;
#   - a fourth fatal error within 10 minutes (each fresh producer's first
#     write refused again) is not answered by a replacement: the gateway
#     stops, commits only the finished prefix (up to the record whose DLQ
#     write failed, not the successes after it) and exits 1; a restarted
#     gateway (a fresh producer) finishes: nothing lost.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:1 --topic src.dlq:1 --topic src.quarantine:1 --topic two:1 --topic two.dlq:1
start_handler
write_config "$T/gw.lua" lf none 'admin = { listen = "127.0.0.1:0" },'
{ printf 'k1\t{"id":"w1","mode":"ok"}\nk2\t{"id":"p2","mode":"permanent"}\n'; gen_records 20 "ok:1"; } | produce src
broker_ctl request-errors Produce 1 OUT_OF_ORDER_SEQUENCE_NUMBER >/dev/null || die "broker_ctl failed"
start_gateway gw1 "$T/gw.lua"
ADDR=$(admin_addr gw1) || die "no admin address: $(tail -3 "$T/gw1.err")"
wait_drained lf src 40 && ok "after one fatal error every record is finished and committed" || not_ok "lag $(lag lf src)"
check "the fatal error is logged with its cause and what follows" \
  grep -q '"event":"lane_producer_fatal","error":"OUT_OF_ORDER_SEQUENCE_NUMBER".*"next":"the producer is replaced' "$T/gw1.err"
check "the producer is replaced" grep -q '"event":"lane_producer_replaced"' "$T/gw1.err"
check "and counted ($(metric "$ADDR" errgate_lane_producer_replaced_total))" \
  [ "$(metric "$ADDR" errgate_lane_producer_replaced_total)" = 1 ]
wait_for 10 grep -q '"event":"lane_producer_reaped"' "$T/gw1.err"
check "the replaced producer is destroyed once it served its last report" \
  grep -q '"event":"lane_producer_reaped"' "$T/gw1.err"
dump src.dlq "$T/dlq1.json"
check "p2 is in the DLQ (written by the fresh producer)" grep -q 'p2' "$T/dlq1.json"
check "the gateway is still running" kill -0 "$GW_PID"
stop_gateway "$GW_PID"
check "it exits 0 (exit $RC)" [ "$RC" = 0 ]

# a fourth fatal error in 10 minutes stops the gateway
sed 's/"src"/"two"/; s/group = "lf"/group = "lf2"/' "$T/gw.lua" >"$T/gw2.lua"
{ printf 'k1\t{"id":"w1","mode":"ok"}\nk2\t{"id":"q2","mode":"permanent"}\n'; gen_records 20 "ok:1"; } | produce two
broker_ctl request-errors Produce 4 OUT_OF_ORDER_SEQUENCE_NUMBER >/dev/null || die "broker_ctl failed"
start_gateway gw2 "$T/gw2.lua"
stopped() { ! kill -0 "$GW_PID" 2>/dev/null; }
wait_for 60 stopped && ok "a fourth fatal error stops the gateway" || { not_ok "the gateway is still running after 60 s"; kill -9 "$GW_PID"; }
RC=0; wait "$GW_PID" || RC=$?
check "it exits 1 (exit $RC)" [ "$RC" = 1 ]
check "after 3 replacements ($(grep -c '"event":"lane_producer_replaced"' "$T/gw2.err"))" \
  [ "$(grep -c '"event":"lane_producer_replaced"' "$T/gw2.err")" = 3 ]
check "the last fatal error says the gateway stops" \
  grep -q '"event":"lane_producer_fatal".*"next":"the gateway stops"' "$T/gw2.err"
check "the stop names it" grep -q '"event":"stop","msg":"fatal lane producer error' "$T/gw2.err"
"$EG" offsets -b "$BOOTSTRAP" -g lf2 two >"$T/off2.txt" 2>&1
check "the committed offset stops at the unfinished record (offset 1): $(awk '$1=="two"{print $3}' "$T/off2.txt")" \
  [ "$(awk '$1=="two"{print $3}' "$T/off2.txt")" -le 1 ]
broker_ctl clear-request-errors Produce >/dev/null || die "broker_ctl failed"
start_gateway gw3 "$T/gw2.lua"
wait_drained lf2 two 40 && ok "a restarted gateway finishes every record" || not_ok "lag $(lag lf2 two)"
dump two.dlq "$T/dlq2.json"
check "q2 is in the DLQ" grep -q 'q2' "$T/dlq2.json"
stop_gateway "$GW_PID"
check "the restarted gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
