#!/usr/bin/env bash
# test_admin.sh — the admin endpoint: health and readiness around the first
# assignment, /policy, unknown paths and methods, and POST /reload: without or
# with a wrong bearer token 401 and no reload; with the token a reload (loaded_at
# moves); a broken policy file is refused with its reason, the error is kept
# and the old policy goes on deciding; SIGHUP takes the same path. A second
# gateway without admin.token_file answers 403 on POST /reload.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
TOKEN=tok-$RANDOM-$RANDOM-admin

start_broker --topic src:2 --topic src.dlq:2 --topic src.quarantine:2
start_handler
cp "$ROOT/policies/default.lua" "$T/policy.lua"
printf '%s\n' "$TOKEN" >"$T/token"
write_config "$T/gw.lua" adm partition 'admin = { listen = "127.0.0.1:0", token_file = "token" },'
sed -i "s|policy = \"$ROOT/policies/default.lua\"|policy = \"policy.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
GW1=$GW_PID
ADDR=$(admin_addr gw) || die "no admin_listening line: $(tail -5 "$T/gw.err")"

body=$(admin_get "$ADDR" /readyz)
if [ "$BROKER" = kafka ] && [ "$(http_code)" = 200 ] && grep -q '"event":"assign"' "$T/gw.err"; then
  # a real cluster with group.initial.rebalance.delay.ms=0 assigns within
  # milliseconds; the embedded broker's first join takes about 3 s
  diag "the real cluster assigned before /readyz could first be asked: readiness before the first assignment is checked on the embedded broker"
else
  check "/readyz is 503 before the first assignment ($body)" [ "$(http_code)" = 503 ]
fi
admin_get "$ADDR" /healthz >/dev/null
check "/healthz is 200" [ "$(http_code)" = 200 ]
ready() { admin_get "$ADDR" /readyz >/dev/null; [ "$(http_code)" = 200 ]; }
wait_for 30 ready && ok "/readyz turns 200 after the assignment" || not_ok "/readyz still $(http_code)"

admin_get "$ADDR" /policy >"$T/p0.json"
check "/policy names the policy, its path, sha256 and load time" $PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
ok = p["name"] == "default" and p["version"] and p["path"].endswith("policy.lua") and len(p["sha256"]) == 64 \
     and p["loaded_at"].endswith("Z") and p["last_reload_error"] is None
sys.exit(0 if ok else 1)' "$T/p0.json"
loaded0=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["loaded_at_ms"])' "$T/p0.json")

admin_get "$ADDR" /nope >/dev/null
check "an unknown path is 404" [ "$(http_code)" = 404 ]
admin_get "$ADDR" /metrics -X POST >/dev/null
check "POST /metrics is 405" [ "$(http_code)" = 405 ]
admin_get "$ADDR" /reload >/dev/null
check "GET /reload is 405" [ "$(http_code)" = 405 ]

sleep 0.05 # loaded_at has millisecond resolution
admin_get "$ADDR" /reload -X POST >/dev/null
check "POST /reload without a token is 401" [ "$(http_code)" = 401 ]
admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer wrong-$TOKEN" >/dev/null
check "POST /reload with a wrong token is 401" [ "$(http_code)" = 401 ]
admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer ${TOKEN%?}" >/dev/null
check "POST /reload with a token prefix is 401" [ "$(http_code)" = 401 ]
admin_get "$ADDR" /policy >"$T/p1.json"
loaded1=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["loaded_at_ms"])' "$T/p1.json")
check "refused reloads did not reload" [ "$loaded1" = "$loaded0" ]
check "no reload was logged" bash -c "! grep -q '\"event\":\"reload' '$T/gw.err'"

admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer $TOKEN" >"$T/r1.json"
check "POST /reload with the token is 200" [ "$(http_code)" = 200 ]
admin_get "$ADDR" /policy >"$T/p2.json"
loaded2=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["loaded_at_ms"])' "$T/p2.json")
check "the reload moved loaded_at ($loaded0 -> $loaded2)" [ "$loaded2" -gt "$loaded0" ]
check "the reload was logged" grep -q '"event":"reload","result":"ok","trigger":"admin"' "$T/gw.err"

# a broken policy: refused with the reason, the old one keeps deciding
echo 'this is not lua (' >>"$T/policy.lua"
admin_get "$ADDR" /reload -X POST -H "Authorization: Bearer $TOKEN" >"$T/r2.json"
check "a broken policy answers 422" [ "$(http_code)" = 422 ]
check "the answer gives the reason" grep -q '"result":"failed","error":"[^"]*policy.lua' "$T/r2.json"
admin_get "$ADDR" /policy >"$T/p3.json"
check "/policy keeps the error and the old load time" $PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
sys.exit(0 if p["last_reload_error"] and str(p["loaded_at_ms"]) == sys.argv[2] else 1)' "$T/p3.json" "$loaded2"
check "the failed reload was logged with its reason" grep -q '"event":"reload","result":"failed","trigger":"admin".*"error":"[^"]*policy.lua' "$T/gw.err"
printf 'k1\t{"id":"after-broken","mode":"permanent"}\n' | produce src
wait_drained adm src 30 && ok "the old policy still decides (record dead-lettered)" || not_ok "lag $(lag adm src)"
check "the decision names the old policy" grep -q '"event":"decision".*"offset":0.*"action":"dlq".*"policy":"default@' "$T/gw.err"

# SIGHUP takes the same path; fixed file -> success, error cleared
cp "$ROOT/policies/default.lua" "$T/policy.lua"
kill -HUP "$GW1"
wait_for 10 grep -q '"event":"reload","result":"ok","trigger":"sighup"' "$T/gw.err" && ok "SIGHUP reloads" || not_ok "no reload after SIGHUP"
admin_get "$ADDR" /policy >"$T/p4.json"
check "a good reload clears last_reload_error" $PY -c '
import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["last_reload_error"] is None else 1)' "$T/p4.json"
admin_get "$ADDR" /metrics >"$T/m.txt"
# the 1 s file watch may reload an edited file before the POST or SIGHUP
# does: the counters must match the reloads logged, whatever their trigger
n_ok=$(grep -c '"event":"reload","result":"ok"' "$T/gw.err")
n_failed=$(grep -c '"event":"reload","result":"failed"' "$T/gw.err")
check "reloads are counted by result ($n_ok logged, at least 2)" \
  bash -c "[ $n_ok -ge 2 ] && grep -q '^errgate_policy_reloads_total{result=\"success\"} $n_ok\$' '$T/m.txt'"
check "failed reloads are counted ($n_failed logged, at least 1)" \
  bash -c "[ $n_failed -ge 1 ] && grep -q '^errgate_policy_reloads_total{result=\"failure\"} $n_failed\$' '$T/m.txt'"

# no token file: mutating endpoints are off
write_config "$T/gw2.lua" adm2 partition 'admin = { listen = "127.0.0.1:0" },'
start_gateway gw2 "$T/gw2.lua"
GW2=$GW_PID
ADDR2=$(admin_addr gw2) || die "no admin_listening line for gw2"
admin_get "$ADDR2" /reload -X POST -H "Authorization: Bearer $TOKEN" >/dev/null
check "without admin.token_file POST /reload is 403" [ "$(http_code)" = 403 ]
stop_gateway "$GW2"
stop_gateway "$GW1"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
check "the token never appears in a log line" bash -c "! grep -q -- '$TOKEN' '$T'/gw.err '$T'/gw2.err"
check "every log line is JSON" json_lines_ok "$T/gw.err" "no-marker-here"

# the admin table is validated like every other key
bad_config() { # EXTRA_LUA WANT_IN_ERROR
  write_config "$T/bad.lua" adm3 partition "$1"
  local rc=0; "$EG" run -c "$T/bad.lua" 2>"$T/bad.err" || rc=$?
  [ "$rc" = 2 ] && grep -q -- "$2" "$T/bad.err"
}
check "admin: an unknown key is refused" bad_config 'admin = { lisen = "x" },' "unknown key 'admin.lisen'"
check "admin.listen must be host:port" bad_config 'admin = { listen = "9464" },' "admin.listen"
check "admin.ready_lane_failure must be a duration" bad_config 'admin = { ready_lane_failure = "x" },' 'admin.ready_lane_failure: invalid duration "x"'
check "its former name is checked the same way" bad_config 'admin = { ready_lane_failure_ms = {} },' "admin.ready_lane_failure: expected a duration"
check "admin.token_file must be readable" bad_config 'admin = { token_file = "missing.token" },' "admin.token_file"
: >"$T/empty.token"
check "an empty token file is refused" bad_config "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/empty.token\" }," "admin.token_file"
