#!/usr/bin/env bash
# test_admin_ready.sh — /readyz flips to 503 while a lane write has been
# failing longer than admin.ready_lane_failure (the DLQ topic goes missing
# for 10 s after the lane producer has written to it) and back to 200 after
# the fault; /lanes and the lane failure metric show the failures, nothing is
# lost, and readiness is false while stopping (a slow
# record keeps the drain going).
source "$(dirname "$0")/lib.sh"
N=1000

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
write_config "$T/gw.lua" rd none 'kafka = { ["session.timeout.ms"] = 6000, ["message.timeout.ms"] = 2000, ["topic.metadata.propagation.max.ms"] = 1000 },
  admin = { listen = "127.0.0.1:0", ready_lane_failure = 1000 },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
gen_records 200 "ok:50 permanent:50" | sed 's/"id":"r/"id":"w/' | produce src
wait_drained rd src 60 || die "warm-up did not drain"
code() { admin_get "$ADDR" /readyz >/dev/null; http_code; }
check "ready after the warm-up" [ "$(code)" = 200 ]
broker_ctl topic-fault src.dlq 10 UNKNOWN_TOPIC_OR_PART >/dev/null || die "topic-fault refused"
gen_records "$N" "ok:80 permanent:20" | produce src
not_ready() { [ "$(code)" = 503 ]; }
if wait_for 15 not_ready; then ok "/readyz is 503 during the lane fault ($(cat "$T/http_body"))"
else not_ok "/readyz stayed $(http_code) during the lane fault"; fi
check "the reason names the failing lane writes" grep -q '"reason":"lane writes failing' "$T/http_body"
admin_get "$ADDR" /lanes >"$T/lanes_fault.json"
check "/lanes shows failed and pending DLQ writes" $PY -c '
import json, sys
l = {x["topic"]: x for x in json.load(open(sys.argv[1]))["lanes"]}["src.dlq"]
sys.exit(0 if l["failed"] > 0 and l["pending"] > 0 else 1)' "$T/lanes_fault.json"
is_ready() { [ "$(code)" = 200 ]; }
wait_for 60 is_ready && ok "/readyz is 200 again after the fault" || not_ok "/readyz still $(http_code) after the fault"
wait_drained rd src 60 && ok "every record is committed after the fault" || not_ok "lag $(lag rd src)"
admin_get "$ADDR" /metrics >"$T/m.txt"
check "lane write failures are counted per lane" grep -q '^errgate_lane_write_failures_total{lane="src.dlq"} [1-9]' "$T/m.txt"
# a slow record keeps the drain busy for a few seconds after SIGTERM
printf 'k1\t{"id":"slow","mode":"slow-4000"}\n' | produce src
inflight() { admin_get "$ADDR" /metrics | grep -q '^errgate_inflight_records 1$'; }
wait_for 20 inflight || not_ok "the slow record never went in flight"
kill -TERM "$GW_PID"
stopping() { admin_get "$ADDR" /readyz >/dev/null; [ "$(http_code)" = 503 ] && grep -q '"reason":"stopping"' "$T/http_body"; }
wait_for 2 stopping && ok "/readyz is 503 while stopping" || not_ok "/readyz answered $(http_code) while stopping"
RC=0; wait "$GW_PID" || RC=$?
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "every log line is JSON" json_lines_ok "$T/gw.err" "no-marker-here"
account rd 4 "$T/gw.err"
