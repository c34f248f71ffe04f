#!/usr/bin/env bash
# test_admin_routes.sh — the admin endpoint in one run: every route is hit,
# reloads succeed, fail and are refused, SIGHUP reloads, and the statistics
# callback runs. The default `make test` runs it under memcheck
# (VALGRIND=1, see lib.sh): any memory error or definite/indirect leak fails.
# spec/run.sh: valgrind
source "$(dirname "$0")/lib.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
gen_records 300 | produce src
cp "$ROOT/policies/default.lua" "$T/policy.lua"
echo "vg-token" >"$T/token"
write_config "$T/gw.lua" vgadm none 'kafka = { ["session.timeout.ms"] = 6000, ["statistics.interval.ms"] = 300 },
  admin = { listen = "127.0.0.1:0", token_file = "token" },'
sed -i "s|policy = \"$ROOT/policies/default.lua\"|policy = \"policy.lua\"|" "$T/gw.lua"
bg gw "$EG" run -c "$T/gw.lua"; GW_PID=$LASTPID
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"
if wait_drained vgadm src 120; then ok "mixed run drains"; else not_ok "lag $(lag vgadm src)"; fi
sleep 1
codes=""
for path in /metrics /healthz /readyz /policy /lanes /nope; do admin_get "$ADDR" "$path" >/dev/null; codes="$codes $(http_code)"; done
admin_get "$ADDR" /reload -X POST >/dev/null; codes="$codes $(http_code)"
admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer vg-token" >/dev/null; codes="$codes $(http_code)"
echo 'broken (' >>"$T/policy.lua"
admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer vg-token" >/dev/null; codes="$codes $(http_code)"
kill -HUP "$GW_PID"
wait_for 20 grep -q '"event":"reload","result":"failed","trigger":"sighup"' "$T/gw.err" || not_ok "no SIGHUP reload"
admin_get "$ADDR" /metrics >"$T/m.txt"; codes="$codes $(http_code)"
check "the routes answered (codes:$codes)" [ "$codes" = " 200 200 200 200 200 404 401 200 422 200" ]
check "consumer lag came from the statistics callback" grep -q '^errgate_consumer_lag{' "$T/m.txt"
stop_gateway "$GW_PID"
check "admin endpoint: exit 0 after SIGTERM (exit $RC)" [ "$RC" = 0 ]
