#!/usr/bin/env bash
# test_dlq_signed.sh — signed DLQ state records (LANE.state, kind "state",
# src/lib/ctlsign.h): with a control key (--key-file, or
# ERRGATE_CONTROL_KEY_FILE), `dlq approve` and `replay` sign the states they
# write, and `dlq stats` and `replay`'s state filter ignore every state
# record that is unsigned, signed with another key or changed (counted in a
# state_records_refused line): an "approved" written straight to
# src.dlq.state with a plain producer does not approve anything and is not
# replayed. Without a key the same forged record still counts (the
# unauthenticated deployment: the gateway says so at start). Four eyes: an
# approval names its approver (`dlq stats --by state`: approved by ...);
# `replay --four-eyes` (or the config's replay_four_eyes) refuses, counts
# and reports an approved item its approver tries to replay, and leaves it
# for another person.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

start_broker --topic src:2 --topic src.dlq:2 --topic src.replay:2
start_handler
gen_records 24 "ok:1 permanent:3" | awk -F'\t' '{ sub(/^k[0-9]+/, "k" NR); print }' >"$T/records.tsv"
N_PERMANENT=$(grep -c '"mode":"permanent"' "$T/records.tsv")
[ "$N_PERMANENT" -ge 3 ] || die "the run needs permanent records"
produce src <"$T/records.tsv"
write_config "$T/gw.lua" sdlq none
sed -i "s|policy = \".*\"|policy = \"$FIXTURES/approve_permanent.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_drained sdlq src 60 || die "the gateway did not drain src: lag $(lag sdlq src)"
stop_gateway "$GW_PID"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/other.key"
row() { awk -v n="$2" -v c="$3" '$1==n {print $c}' "$1"; }
field() { tail -1 "$2" | grep -o "$1 [0-9]*" | head -1 | awk '{print $NF}'; }
hdr_dump src.dlq "$T/dlq.jsonl"
mapfile -t IDS < <($PY -c 'import json, sys
for r in map(json.loads, open(sys.argv[1])):
    if r["headers"].get("error.class") == "permanent": print(r["headers"]["errgate.id"])' "$T/dlq.jsonl")
[ "${#IDS[@]}" = "$N_PERMANENT" ] || die "ids: ${IDS[*]}"
NOWISO=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
forged() { printf '{"status":"approved","reason":"forged","at":"%s","by":"%s","since":"2000-01-01T00:00:00.000Z"}' "$NOWISO" "$1"; }
# a plain producer approves the first item; a tool with another key the second
printf '%s\t%s\n' "${IDS[0]}" "$(forged mallory)" | produce src.dlq.state
$PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" src.dlq.state state "$T/other.key" "${IDS[1]}" "$(forged eve)" >/dev/null ||
  die "ctl_sign.py failed"

"$EG" dlq stats src.dlq --by state >"$T/s0.out" 2>&1
check "without a key the forged approvals count (unauthenticated): approved 2 ($(row "$T/s0.out" approved 2))" \
  [ "$(row "$T/s0.out" approved 2)" = 2 ]
"$EG" dlq stats src.dlq --by state --key-file "$T/ctl.key" >"$T/s1.out" 2>"$T/s1.err"; rc=$?
check "with the key they are ignored: pending-approval $N_PERMANENT, approved 0 (rc $rc)" \
  bash -c "[ $rc = 0 ] && [ \"\$(awk '\$1==\"pending-approval\"{print \$2}' $T/s1.out)\" = $N_PERMANENT ] && [ -z \"\$(awk '\$1==\"approved\"{print \$2}' $T/s1.out | grep -v '^0$')\" ]"
check "and a warn line says how many were ignored" grep -q '"event":"state_records_refused".*2 state record' "$T/s1.err"
ERRGATE_CONTROL_KEY_FILE="$T/ctl.key" "$EG" replay --from src.dlq --to src.replay --state approved >"$T/r0.out" 2>&1; rc=$?
check "replay --state approved with the key (from ERRGATE_CONTROL_KEY_FILE) replays none of them (rc $rc)" \
  bash -c "[ $rc = 0 ] && [ \"\$(tail -1 $T/r0.out | grep -o 'replayed [0-9]*' | head -1 | awk '{print \$2}')\" = 0 ] && [ $(count_topic src.replay) = 0 ]"

"$EG" dlq approve src.dlq --id "${IDS[2]}" --by alice --key-file "$T/ctl.key" >"$T/a1.out" 2>&1; rc=$?
check "dlq approve --key-file (rc $rc)" bash -c "[ $rc = 0 ] && grep -q '^approved ${IDS[2]} ' $T/a1.out"
kcat -C -b "$BOOTSTRAP" -t src.dlq.state -e -J -q 2>/dev/null >"$T/state.json"
check "its state record carries errgate.sig" grep -qE "\"headers\":\[\"errgate.sig\",\"v1:[0-9a-f]{64}\"\],\"key\":\"${IDS[2]}\"" "$T/state.json"
"$EG" dlq stats src.dlq --by state --key-file "$T/ctl.key" >"$T/s2.out" 2>&1
check "with the key: exactly the signed approval counts (approved $(row "$T/s2.out" approved 2))" \
  [ "$(row "$T/s2.out" approved 2)" = 1 ]
"$EG" replay --from src.dlq --to src.replay --state approved --key-file "$T/ctl.key" >"$T/r1.out" 2>&1; rc=$?
check "replay --state approved replays the signed approval only (rc $rc, $(count_topic src.replay))" \
  bash -c "[ $rc = 0 ] && [ $(count_topic src.replay) = 1 ]"
kcat -C -b "$BOOTSTRAP" -t src.dlq.state -e -J -q 2>/dev/null >"$T/state2.json"
check "the replayed state replay wrote is signed too" \
  bash -c "grep '\"key\":\"${IDS[2]}\"' $T/state2.json | grep '\\\\\"status\\\\\":\\\\\"replayed' | grep -qE '\"errgate.sig\",\"v1:[0-9a-f]{64}\"'"
out=$("$EG" dlq stats src.dlq --key-file "$T/missing.key" 2>&1); rc=$?
check "a key file that cannot be read is an error, not an unsigned run ($rc: $out)" \
  bash -c "[ $rc != 0 ] && grep -q 'control key file' <<<\"\$1\"" _ "$out"

# ---- four eyes: an approval names its approver; --four-eyes keeps them from replaying it
USER=alice "$EG" dlq approve src.dlq --id "${IDS[0]}" --by alice --key-file "$T/ctl.key" >"$T/a2.out" 2>&1 ||
  not_ok "approve ${IDS[0]} by alice: $(cat "$T/a2.out")"
"$EG" dlq stats src.dlq --by state --key-file "$T/ctl.key" >"$T/s3.out" 2>&1
check "dlq stats --by state names the approvers ($(grep '^approvers' "$T/s3.out"))" grep -q '^approvers: alice 1$' "$T/s3.out"
USER=alice "$EG" replay --from src.dlq --to src.replay --state approved --four-eyes --key-file "$T/ctl.key" \
  >"$T/r2.out" 2>"$T/r2.err"; rc=$?
check "replay --four-eyes by the approver: refused, counted, exit 1 ($rc: $(tail -1 "$T/r2.out"))" \
  bash -c "[ $rc = 1 ] && grep -q 'four-eyes-refused 1' $T/r2.out && grep -q 'replayed 0' $T/r2.out && [ $(count_topic src.replay) = 1 ]"
check "and says who approved it" grep -q "four-eyes: .* was approved by alice; alice@.* may not replay it" "$T/r2.err"
sed -i 's|^}$|  replay_four_eyes = true,\n}|' "$T/gw.lua"
USER=alice "$EG" replay -c "$T/gw.lua" -b "$BOOTSTRAP" --from src.dlq --to src.replay --state approved \
  --key-file "$T/ctl.key" >"$T/r3.out" 2>&1; rc=$?
check "the config's replay_four_eyes does the same ($rc: $(tail -1 "$T/r3.out"))" \
  bash -c "[ $rc = 1 ] && grep -q 'four-eyes-refused 1' $T/r3.out"
USER=bob "$EG" replay --from src.dlq --to src.replay --state approved --four-eyes --key-file "$T/ctl.key" \
  >"$T/r4.out" 2>&1; rc=$?
check "another person replays it (the group did not move past it) ($rc: $(tail -1 "$T/r4.out"))" \
  bash -c "[ $rc = 0 ] && [ $(count_topic src.replay) = 2 ]"
exit $FAILED
