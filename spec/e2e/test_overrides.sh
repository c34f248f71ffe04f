#!/usr/bin/env bash
# test_overrides.sh — operator overrides on one gateway: `errgate ctl
# override set` (bearer token) applies after the policy decides (the
# decision log names it, reason "override"), `override list` shows it (and
# errgate_overrides_active), it expires on its own at its TTL (logged), and
# the policy decides again after it; `override clear` ends one early; bad
# input is refused clearly (unknown class or action, missing TTL or reason, TTL above
# admin.override_max_ttl, no token, a wrong token). (Two instances:
# test_overrides_fleet.)
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1
start_handler
echo "ov-token" >"$T/token"
echo "bad-token" >"$T/wrong"
write_config "$T/gw.lua" ovg partition \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\", override_max_ttl = 7200000 },"
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
ctl() { "$EG" ctl --admin "http://$ADDR" "$@"; }
dlq_count() { kcat -C -b "$BOOTSTRAP" -t src.dlq -e -q 2>/dev/null | wc -l; }

out=$(ctl --token-file "$T/token" override set hold-perm --class permanent --action hold --ttl 6s \
  --reason "provider misreports 400" --by ana 2>&1); rc=$?
check "override set: exit 0, says what and until when ($rc: $out)" exits_with "$rc" 0 "override hold-perm set: hold until 20" "$out"
check "the change is logged with its author" grep -q '"event":"override_set".*"name":"hold-perm".*"by":"ana"' "$T/gw.err"
out=$(ctl override list 2>&1); rc=$?
check "override list (no token needed) shows it ($rc: $out)" exits_with "$rc" 0 "hold-perm  class=permanent  hold  until .* by ana: provider misreports 400" "$out"
out=$(ctl --json override list)
check "--json list is the endpoint's JSON ($out)" grep -q '"overrides":\[{"name":"hold-perm","match":"class","value":"permanent","action":"hold"' <<<"$out"
out=$("$EG" ctl override list --json --admin "http://$ADDR")
check "ctl's options after the command too: override list --json --admin URL ($out)" grep -q '"overrides":\[{"name":"hold-perm"' <<<"$out"
out=$("$EG" ctl override set reason-is-an-option --class permanent --action hold --ttl 6s --reason --json \
  --admin "http://$ADDR" --token-file "$T/token" 2>&1); rc=$?
check "a value of override set that looks like ctl's option stays its value (--reason --json, $rc: $out)" \
  exits_with "$rc" 0 "override reason-is-an-option set" "$out"
ctl --token-file "$T/token" override clear reason-is-an-option >/dev/null 2>&1
check "errgate_overrides_active is 1" bash -c "curl -s http://$ADDR/metrics | grep -q '^errgate_overrides_active 1'"

{ for i in 1 2 3; do printf 'k%d\t{"id":"p%d","mode":"permanent"}\n' "$i" "$i"; done; } | produce src
wait_for 30 grep -q '"event":"decision".*"override":"hold-perm"' "$T/gw.err" || not_ok "no overridden decision"
check "the decision is the override's: hold, reason override, named" \
  grep -q '"event":"decision".*"class":"permanent".*"action":"hold".*"reason":"override".*"override":"hold-perm"' "$T/gw.err"
check "nothing reached the DLQ while it holds ($(dlq_count))" [ "$(dlq_count)" = 0 ]
wait_for 20 grep -q '"event":"override_expired".*"name":"hold-perm"' "$T/gw.err"
check "it expired on its own at its TTL, logged" grep -q '"event":"override_expired".*"name":"hold-perm"' "$T/gw.err"
wait_drained ovg src 30 || not_ok "not drained after the expiry"
check "after the expiry the policy decides again: 3 in the DLQ ($(dlq_count))" [ "$(dlq_count)" = 3 ]
out=$(ctl override list 2>&1)
check "the list is empty again ($out)" grep -q "no overrides in force" <<<"$out"

out=$(ctl --token-file "$T/token" override set ign --topic src:0 --action ignore --ttl 1h --reason test 2>&1); rc=$?
check "a topic:partition override is set ($rc: $out)" exits_with "$rc" 0 "override ign set: ignore" "$out"
out=$(ctl --token-file "$T/token" override clear ign 2>&1); rc=$?
check "override clear: exit 0 ($rc: $out)" exits_with "$rc" 0 "override ign cleared" "$out"
check "the clear is logged" grep -q '"event":"override_cleared".*"name":"ign"' "$T/gw.err"
out=$(ctl --token-file "$T/token" override clear ign 2>&1); rc=$?
check "clearing it again: 404, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 404.*no override in force is called 'ign'" "$out"

set_ov() { ctl --token-file "$T/token" override set x --class c "$@" 2>&1; }
out=$(set_ov --action explode --ttl 1h --reason r); rc=$?
check "unknown action: refused by the gateway, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 400.*unknown action 'explode'" "$out"
out=$(ctl --token-file "$T/token" override set x --class no_such_class --action hold --ttl 1h --reason r 2>&1); rc=$?
check "a class the policy never gives: refused, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 400.*unknown class 'no_such_class' (the policy's classes: .*permanent" "$out"
out=$(set_ov --action hold --reason r); rc=$?
check "missing TTL: usage error, exit 2 ($rc: $out)" exits_with "$rc" 2 "missing --ttl" "$out"
out=$(set_ov --action hold --ttl 1h); rc=$?
check "missing reason: usage error, exit 2 ($rc: $out)" exits_with "$rc" 2 "missing --reason" "$out"
out=$(set_ov --action hold --ttl 3h --reason r); rc=$?
check "TTL above the maximum (2 h here): refused, exit 1 ($rc: $out)" exits_with "$rc" 1 "ttl: 3h is above the maximum (7200 s)" "$out"
code=$(curl -s -o "$T/b" -w '%{http_code}' -H 'Authorization: Bearer ov-token' -d 'name=x&class=c&action=hold&reason=r' "http://$ADDR/overrides")
check "the endpoint itself refuses a missing TTL: 400 ($code $(cat "$T/b"))" bash -c '[ "$1" = 400 ] && grep -q "ttl: required" "$2"' _ "$code" "$T/b"
out=$(ctl override set x --class c --action hold --ttl 1h --reason r 2>&1); rc=$?
check "no token: usage error, exit 2 ($rc: $out)" exits_with "$rc" 2 "no token" "$out"
out=$(ctl --token-file "$T/wrong" override set x --class c --action hold --ttl 1h --reason r 2>&1); rc=$?
check "a wrong token: 401, exit 1 ($rc: $out)" exits_with "$rc" 1 "HTTP 401" "$out"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://$ADDR/overrides/x")
check "DELETE without a token is 401 ($code)" [ "$code" = 401 ]
check "nothing refused was set" bash -c "$EG ctl --admin http://$ADDR override list | grep -q 'no overrides in force'"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
