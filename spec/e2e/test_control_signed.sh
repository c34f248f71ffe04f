#!/usr/bin/env bash
# test_control_signed.sh — signed control records (control_key_file,
# src/lib/ctlsign.h): the gateway signs what it writes to the audit topic
# (header errgate.sig) and applies only records whose signature verifies
# with the deployment's key. An operator tool holding the key (ctl_sign.py,
# written from the documented canonical form) sets an override; an unsigned
# record, a signed one with a byte changed, one signed with another key and
# a signed record produced again (a replay; and a signed change an hour old
# read live) are refused and counted by reason, never applied. The signed
# state survives a restart; the operator's ctl path still works. A gateway
# with a key does not log control_unauthenticated. Rotation: with a key ring
# (the old key signing, the new one accepted) what the old key signed is
# still restored, a record signed with the new key is applied, and another
# deployment's key is still refused. An out-of-range reset of the audit
# reader re-reads signed records without refusing them as replays.
source "$(dirname "$0")/lib.sh"

start_broker --topic src:1 --topic src.dlq:1
start_handler
echo "sign-token" >"$T/token"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/other.key"
write_config "$T/gw.lua" sgd partition "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },
  control_key_file = \"$T/ctl.key\","
start_gateway gw "$T/gw.lua"
ADDR=$(admin_addr gw) || die "no admin endpoint: $(tail -3 "$T/gw.err")"
wait_for 40 grep -q '"event":"assign".*src\[' "$T/gw.err" || die "no assignment"
ctl() { "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
listed() { "$EG" ctl --admin "http://$ADDR" override list 2>/dev/null | grep -q "^$1 "; }
refused() { metric "$ADDR" errgate_control_records_refused_total "reason=\"$1\""; }
sign() { $PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" errgate.audit audit "$@"; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
rec() { # rec NAME AT_EPOCH: an override record of group sgd, 1 h TTL
  printf '{"group":"sgd","name":"%s","spec":"class=permanent&action=hold","reason":"tool","by":"%s","at":"%s","expires_at":"%s","cleared_at":null}' \
    "$1" "${3:-ops-tool}" "$(iso "$2")" "$(iso $(($2 + 3600)))"
}
check "a keyed gateway does not say its control topics are unauthenticated" \
  bash -c "! grep -q control_unauthenticated $T/gw.err"

out=$(ctl override set op1 --class permanent --action hold --ttl 10m --reason "real" --by ana 2>&1); rc=$?
check "the operator's ctl override set works ($rc: $out)" exits_with "$rc" 0 "override op1 set" "$out"
kcat -C -b "$BOOTSTRAP" -t errgate.audit -e -J -q 2>/dev/null >"$T/audit.json"
check "its audit record carries errgate.sig = v1:<64 hex>" grep -qE '"headers":\["errgate.sig","v1:[0-9a-f]{64}"\],"key":"sgd/op1"' "$T/audit.json"

NOW=$(date +%s)
SIG=$(sign "$T/ctl.key" sgd/tool1 "$(rec tool1 "$NOW")") || die "ctl_sign.py failed"
wait_for 10 listed tool1
check "a record signed by an operator tool holding the key is applied" listed tool1
sign "$T/ctl.key" sgd/u1 "$(rec u1 "$NOW")" none >/dev/null
sign "$T/ctl.key" sgd/t1 "$(rec t1 "$NOW")" tamper >/dev/null
sign "$T/other.key" sgd/w1 "$(rec w1 "$NOW")" >/dev/null
sign "$T/ctl.key" sgd/tool1 "$(rec tool1 "$NOW")" "copy:${SIG#v1:}" >/dev/null
sign "$T/ctl.key" sgd/old1 "$(rec old1 $((NOW - 3600)))" >/dev/null
# an older change of tool2, signed, produced after a newer one: refused live (older than the window) and
# at the restart below (older than the change in force for its name), never restored over the newer
sign "$T/ctl.key" sgd/tool2 "$(rec tool2 "$NOW" ops-new)" >/dev/null
sign "$T/ctl.key" sgd/tool2 "$(rec tool2 $((NOW - 1800)) ops-old)" >/dev/null
total() { curl -s "http://$ADDR/metrics" | awk '/^errgate_control_records_refused_total/{s+=$2} END{print s+0}'; }
wait_for 10 bash -c "[ \$(curl -s http://$ADDR/metrics | awk '/^errgate_control_records_refused_total/{s+=\$2} END{print s+0}') -ge 6 ]"
check "an unsigned record: refused ($(refused unsigned))" [ "$(refused unsigned)" = 1 ]
check "a changed byte and another deployment's key: bad_signature ($(refused bad_signature))" \
  [ "$(refused bad_signature)" = 2 ]
check "the same signed record produced again, and signed changes an hour and 30 min old read live: replayed ($(refused replayed))" \
  [ "$(refused replayed)" = 3 ]
for n in u1 t1 w1 old1; do check "$n is not in force" bash -c "! $EG ctl --admin http://$ADDR override list | grep -q '^$n '"; done
check "refusals are logged with their reason" \
  grep -q '"event":"control_record_refused".*"reason":"bad_signature"' "$T/gw.err"

stop_gateway "$GW_PID"
start_gateway gw2 "$T/gw.lua"
ADDR=$(admin_addr gw2) || die "no admin endpoint after the restart: $(tail -3 "$T/gw2.err")"
check "after a restart the signed overrides are restored" bash -c "listed() { $EG ctl --admin http://$ADDR override list | grep -q \"^\$1 \"; }; listed op1 && listed tool1"
check "and the forged ones are still refused ($(refused unsigned) unsigned, $(refused bad_signature) bad)" \
  bash -c "[ $(refused unsigned) = 1 ] && [ $(refused bad_signature) = 2 ]"
check "at the restart the older tool2 change is refused as a replay, the newer one stays ($(refused replayed))" \
  bash -c "[ $(refused replayed) -ge 2 ] && $EG ctl --admin http://$ADDR override list | grep -q '^tool2 .*by ops-new'"
check "none of them was restored" bash -c "! grep -q '\"event\":\"override_restored\".*\"name\":\"\(u1\|t1\|w1\)\"' $T/gw2.err"
# key rotation: a ring whose old key signs and whose new key is accepted too (ctlsign.h)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/new.key"
printf 'errgate-keyring-v1\n%s\n%s\n' "$(cat "$T/ctl.key")" "$(cat "$T/new.key")" >"$T/ring.key"
stop_gateway "$GW_PID"
sed "s|$T/ctl.key|$T/ring.key|" "$T/gw.lua" >"$T/gw3.lua"
start_gateway gw3 "$T/gw3.lua"
ADDR=$(admin_addr gw3) || die "no admin endpoint with the key ring: $(tail -3 "$T/gw3.err")"
check "with a key ring the overrides the old key signed are restored" bash -c "listed() { $EG ctl --admin http://$ADDR override list | grep -q \"^\$1 \"; }; listed op1 && listed tool1"
sign "$T/new.key" sgd/rot1 "$(rec rot1 "$(date +%s)")" >/dev/null
wait_for 10 listed rot1
check "a record an already rotated tool signed with the new key is applied" listed rot1
check "another deployment's key is still refused ($(refused bad_signature) bad_signature)" [ "$(refused bad_signature)" = 2 ]
# an out-of-range reset re-reads the topic: a signed record read again is
# not a copy produced again, an old one not a stale replay (fetch errors go
# to whichever client fetches next: injected until the audit reader met one)
nref=$(total)
for round in 1 2 3 4 5 6; do
  broker_ctl request-errors Fetch 3 OFFSET_OUT_OF_RANGE >/dev/null || die "request-errors refused"
  wait_for 8 grep -q '"event":"control_reread"' "$T/gw3.err" && break
done
check "an out-of-range reset re-reads the audit topic" grep -q '"event":"control_reread"' "$T/gw3.err"
wait_for 10 bash -c "[ \"\$(curl -s http://$ADDR/metrics | awk '/^errgate_control_records_reread_total/{print \$2}')\" -ge 10 ]"
check "no record read again is refused as replayed or counted again ($(total), was $nref)" [ "$(total)" = "$nref" ]
check "the signed overrides are still in force" bash -c "listed() { $EG ctl --admin http://$ADDR override list | grep -q \"^\$1 \"; }; listed op1 && listed tool1 && listed rot1"
out=$(ctl override clear op1 2>&1); rc=$?
check "the operator clears op1 ($rc: $out)" exits_with "$rc" 0 "override op1 cleared" "$out"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
