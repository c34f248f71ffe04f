#!/usr/bin/env bash
# test_admin_limits.sh — the admin endpoint cannot starve the gateway (issue
# 11, lesser): the gateway runs with `ulimit -n 96` and admin.max_connections
# = 20. 300 idle clients connect: 20 are kept (and closed after the 10 s
# request timeout), the rest are closed at once. Meanwhile records keep
# flowing (the target gets new connections), /healthz answers again once the
# idle ones time out, the log stays small (repeated lines are rate-limited
# and summed up in log_suppressed), and oversized or chunked requests get
# 431 / 413 / 411.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
write_config "$T/gw.lua" al none 'admin = { listen = "127.0.0.1:0", max_connections = 20 },'
sed -i 's|concurrency = 16|concurrency = 8|' "$T/gw.lua"
bg gw bash -c "ulimit -n 96 && exec '$EG' run -c '$T/gw.lua'"; GW_PID=$LASTPID
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
wait_for 30 bash -c "curl -s -m 2 http://$ADDR/readyz | grep -q true" || die "not ready"

$PY "$ROOT/spec/e2e/idle_clients.py" "$ADDR" 300 14 "$T/idle.json" &
IDLE=$!
sleep 1.5
gen_records 300 "ok:1" | produce src
wait_drained al src 20 && ok "records keep flowing while 300 idle clients hold the admin port" ||
  not_ok "lag $(lag al src) with idle admin clients"
check "every record reached the handler" [ "$(awk '{print $2}' "$T/ok.log" | sort -u | wc -l)" = 300 ]
healthz() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$ADDR/healthz")" = 200 ]; }
wait_for 20 healthz && ok "/healthz answers once the idle connections time out" || not_ok "/healthz does not answer"
wait "$IDLE"
diag "idle clients: $(cat "$T/idle.json")"
check "connections beyond the cap were closed at once (within 3 s of their connect)" \
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["closed_fast"] >= 270 else 1)' "$T/idle.json"
check "the kept ones were closed by the 10 s timeout (not before 9 s, all by 15 s)" \
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["still_open"] == 0 and 1 <= d["closed_late"] <= 30 and 9 <= d["last_close_s"] <= 15 else 1)' "$T/idle.json"

big=$(head -c 70000 /dev/zero | tr '\0' a)
code() { curl -s -m 5 -o /dev/null -w '%{http_code}' "$@"; }
check "headers over 64 KiB: 431" [ "$(code -H "X-Big: $big" "http://$ADDR/healthz")" = 431 ]
check "a body over 64 KiB: 413" [ "$(code -X POST -H 'Content-Length: 100000' --data-binary @/dev/null "http://$ADDR/reload")" = 413 ]
check "a chunked body: 411" [ "$(code -X POST -H 'Transfer-Encoding: chunked' --data-binary x "http://$ADDR/reload")" = 411 ]
check "a HEAD request has no body" bash -c "[ \"\$(curl -s -m 5 -I http://$ADDR/healthz | grep -c '^Content-Length: 16')\" = 1 ]"
lines=$(wc -l <"$T/gw.err")
check "the log stays small ($lines lines)" [ "$lines" -lt 400 ]
check "refused connections were logged at a limited rate and summed up" \
  grep -q '"event":"log_suppressed","suppressed_event":"admin_connection_refused"' "$T/gw.err"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "every log line is JSON" json_lines_ok "$T/gw.err" NO-MARKER
