#!/usr/bin/env bash
# test_policy_watch.sh — a change of the policy file reloads it, with no
# signal: an edit takes effect (trigger "file"), a broken edit is reported
# once and never takes effect, a touch that changes nothing reloads
# nothing, and records keep flowing through it all (0 lost).
source "$(dirname "$0")/lib.sh"

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4
start_handler
sed 's/version = "1"/version = "A"/' "$ROOT/policies/default.lua" >"$T/A.lua"
sed 's/version = "1"/version = "B"/' "$ROOT/policies/default.lua" >"$T/B.lua"
A=$("$EG" policy check "$T/A.lua" | awk '/^policy/{print $2}')
B=$("$EG" policy check "$T/B.lua" | awk '/^policy/{print $2}')
cp "$T/A.lua" "$T/policy.lua"
write_config "$T/gw.lua" watch none
sed -i "s|policy = \".*\"|policy = \"$T/policy.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_for 30 grep -q '"event":"assign"' "$T/gw.err" || die "no assignment"
reloads() { grep -c '"event":"reload"' "$T/gw.err"; }

gen_records 2000 "ok:80 permanent:20" | produce src
# version A decides some records before the edit (on a loaded machine the
# edit could otherwise come first)
wait_for 30 grep -q "\"event\":\"decision\".*\"policy\":\"$A\"" "$T/gw.err" || diag "no decision by $A before the edit"
cp "$T/B.lua" "$T/policy.lua" # an in-place write, as an editor does
wait_for 10 grep -q '"event":"reload".*"result":"ok".*"trigger":"file".*"policy":"default@B' "$T/gw.err" &&
  ok "an edit of the file is reloaded without a signal" || not_ok "no file-triggered reload to B"

printf 'return {\n' >"$T/policy.lua"
wait_for 10 grep -q '"event":"reload".*"result":"failed".*"trigger":"file"' "$T/gw.err" &&
  ok "a broken edit is reported" || not_ok "no failed reload reported"
sleep 2.5
check "the broken edit is reported once, not every second" [ "$(grep -c '"result":"failed"' "$T/gw.err")" = 1 ]

cp "$T/B.lua" "$T/policy.lua"
sleep 2.5
n=$(reloads)
touch "$T/policy.lua"
sleep 2.5
check "a touch without a change reloads nothing ($n reloads before, $(reloads) after)" [ "$(reloads)" = "$n" ]

gen_records 2000 "ok:80 permanent:20" | sed 's/"id":"r/"id":"s/' | produce src
wait_drained watch src 60 && ok "every record committed" || not_ok "lag $(lag watch src)"
stop_gateway "$GW_PID"
check "gateway exits 0 (exit $RC)" [ "$RC" = 0 ]
dump src.dlq "$T/dlq.json"
check "both versions decided" $PY -c '
import json, sys
ids = {h[i + 1] for l in open(sys.argv[1]) for h in [json.loads(l)["headers"]] for i in range(0, len(h), 2) if h[i] == "errgate.policy"}
print("# policies on the DLQ:", sorted(ids))
sys.exit(0 if ids == set(sys.argv[2:]) else 1)' "$T/dlq.json" "$A" "$B"
# every lane record names a version that loaded, and nothing is lost
account watch 4 "$T/gw.err" --policies "$A,$B"
