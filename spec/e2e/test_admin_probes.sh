#!/usr/bin/env bash
# test_admin_probes.sh — idle connections cannot starve the probes (issue 28,
# item 5). A gateway with the default admin.max_connections (64): 128 idle
# sockets held open from one peer (the probes' own address, 127.0.0.1), then
# 192 from eight peers (127.0.0.2-9), each reopened at once when the server
# closes it, for 14 s (past the 10 s request timeout). Meanwhile /healthz,
# /readyz and /metrics are asked every 0.3 s and must each answer 200 within
# 1 s; an idle connection makes way for a new one (logged
# admin_connection_evicted at a limited rate), and the gateway exits 0.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
write_config "$T/gw.lua" ap none 'admin = { listen = "127.0.0.1:0" },'
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
wait_for 30 bash -c "curl -s -m 2 http://$ADDR/readyz | grep -q true" || die "not ready"

# probe_while PID LOG: until PID ends, asks the three probes in turn every
# 0.3 s; one line per probe: "PATH CODE SECONDS".
probe_while() {
  local pid=$1 log=$2 p
  : >"$log"
  sleep 1 # the holder has its sockets open by then
  while kill -0 "$pid" 2>/dev/null; do
    for p in /healthz /readyz /metrics; do
      echo "$p $(curl -s -m 1 -o /dev/null -w '%{http_code} %{time_total}' "http://$ADDR$p")" >>"$log"
    done
    sleep 0.3
  done
}

# judge NAME LOG HOLD_JSON: every probe answered 200 within 1 s.
judge() {
  local n bad worst
  n=$(wc -l <"$2")
  bad=$(awk '$2 != 200 || $3 >= 1' "$2" | wc -l)
  worst=$(sort -k3 -g "$2" | tail -1)
  diag "$1: holder $(cat "$3"); $n probes, slowest: $worst"
  check "$1: all $n probes (/healthz, /readyz, /metrics) answered 200 within 1 s ($bad did not)" \
    bash -c "[ $n -ge 60 ] && [ $bad = 0 ]"
}

$PY "$ROOT/spec/e2e/idle_hold.py" "$ADDR" 128 14 "$T/hold1.json" &
HOLD=$!
probe_while $HOLD "$T/probes1.log"
wait $HOLD
check "one peer held 128 connections open ($(cat "$T/hold1.json"))" \
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["max_open"] >= 128 else 1)' "$T/hold1.json"
judge "128 idle connections from one peer" "$T/probes1.log" "$T/hold1.json"

$PY "$ROOT/spec/e2e/idle_hold.py" "$ADDR" 192 14 "$T/hold2.json" 127.0.0.{2..9} &
HOLD=$!
probe_while $HOLD "$T/probes2.log"
wait $HOLD
check "eight peers held 192 connections open ($(cat "$T/hold2.json"))" \
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["max_open"] >= 192 else 1)' "$T/hold2.json"
judge "192 idle connections from eight peers" "$T/probes2.log" "$T/hold2.json"

check "evictions were logged at a limited rate" grep -q '"event":"admin_connection_evicted"' "$T/gw.err"
lines=$(wc -l <"$T/gw.err")
check "the log stays small: rate-limited ($lines lines in some 30 s)" [ "$lines" -lt 2500 ]
check "/healthz still answers" [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$ADDR/healthz")" = 200 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "every log line is JSON" json_lines_ok "$T/gw.err" NO-MARKER
echo "1..$TESTNO"
exit $FAILED
