#!/usr/bin/env bash
# test_admin_limits.sh — the admin endpoint cannot starve the gateway (issue
# 11, lesser; issue 28, item 5): the gateway runs with `ulimit -n 96` and
# admin.max_connections = 20. 300 idle clients connect: the kernel hands
# them to the gateway only after the 5 s TCP_DEFER_ACCEPT, then at most 20
# are open at once, each new one taking the place of the oldest idle one,
# and the last ones are closed by the 10 s request timeout: every one is
# closed by the server within 38 s (the kernel accepts deferred ones over
# its SYN-ACK retransmission schedule). Meanwhile records keep flowing (the
# target gets new connections), /healthz answers all along, the log stays
# small (repeated lines are rate-limited and summed up in log_suppressed),
# and oversized or chunked requests get 431 / 413 / 411.
source "$(dirname "$0")/lib.sh"
start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
write_config "$T/gw.lua" al none 'admin = { listen = "127.0.0.1:0", max_connections = 20 },'
sed -i 's|concurrency = 16|concurrency = 8|' "$T/gw.lua"
bg gw bash -c "ulimit -n 96 && exec '$EG' run -c '$T/gw.lua'"; GW_PID=$LASTPID
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
wait_for 30 bash -c "curl -s -m 2 http://$ADDR/readyz | grep -q true" || die "not ready"

$PY "$ROOT/spec/e2e/idle_clients.py" "$ADDR" 300 40 "$T/idle.json" &
IDLE=$!
sleep 1.5
gen_records 300 "ok:1" | produce src
wait_drained al src 20 && ok "records keep flowing while 300 idle clients hold the admin port" ||
  not_ok "lag $(lag al src) with idle admin clients"
check "every record reached the handler" [ "$(awk '{print $2}' "$T/ok.log" | sort -u | wc -l)" = 300 ]
healthz() { [ "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$ADDR/healthz")" = 200 ]; }
probes_ok=1
for i in $(seq 10); do healthz || probes_ok=0; sleep 0.5; done
check "/healthz answers while the idle clients hold their sockets" [ $probes_ok = 1 ]
wait "$IDLE"
diag "idle clients: $(cat "$T/idle.json")"
check "every idle connection was closed by the server: evicted for a newer one or by the 10 s timeout, all by 38 s" \
  $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["still_open"] == 0 and d["failed"] == 0 and d["closed_fast"] + d["closed_late"] == 300 and d["last_close_s"] <= 38 else 1)' "$T/idle.json"

big=$(head -c 70000 /dev/zero | tr '\0' a)
code() { curl -s -m 5 -o /dev/null -w '%{http_code}' "$@"; }
check "headers over 64 KiB: 431" [ "$(code -H "X-Big: $big" "http://$ADDR/healthz")" = 431 ]
check "a body over 64 KiB: 413" [ "$(code -X POST -H 'Content-Length: 100000' --data-binary @/dev/null "http://$ADDR/reload")" = 413 ]
check "a chunked body: 411" [ "$(code -X POST -H 'Transfer-Encoding: chunked' --data-binary x "http://$ADDR/reload")" = 411 ]
check "a HEAD request has no body" bash -c "[ \"\$(curl -s -m 5 -I http://$ADDR/healthz | grep -c '^Content-Length: 16')\" = 1 ]"
lines=$(wc -l <"$T/gw.err")
check "the log stays small ($lines lines)" [ "$lines" -lt 400 ]
check "evicted connections were logged" grep -q '"event":"admin_connection_evicted"' "$T/gw.err"
stop_gateway "$GW_PID"
check "the gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "every log line is JSON" json_lines_ok "$T/gw.err" NO-MARKER
