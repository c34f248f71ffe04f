#!/usr/bin/env bash
# test_dlq_approval.sh — the DLQ lifecycle with approval: a route entry
# { dlq = true, approval = true } dead-letters permanent failures with
# errgate.approval: required (they start pending-approval) while exhausted
# transient ones start open, and lanes.quarantine_approval marks every
# quarantine record; `replay` honours the states (skips
# pending-approval and resolved items, saying how many and why; --state
# approved replays only approved ones; --include-resolved overrides);
# `dlq approve` by --class, --id and --where (dry run, author, idempotent,
# refuses resolved items); `dlq stats --by state` adds up.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

start_broker --topic src:4 --topic src.dlq:4 --topic src.quarantine:4 --topic src.replay:4
start_handler
gen_records 30 "ok:4 unavailable:3 permanent:3 semantic:1" | awk -F'\t' '{ sub(/^k[0-9]+/, "k" NR); print }' >"$T/records.tsv"
N_TRANSIENT=$(grep -c '"mode":"unavailable"' "$T/records.tsv")
N_PERMANENT=$(grep -c '"mode":"permanent"' "$T/records.tsv")
[ "$N_TRANSIENT" -ge 3 ] && [ "$N_PERMANENT" -ge 3 ] || die "the run needs transient and permanent records"
produce src <"$T/records.tsv"
write_config "$T/gw.lua" appr none 'lanes = { quarantine_approval = true },'
sed -i "s|policy = \".*\"|policy = \"$FIXTURES/approve_permanent.lua\"|" "$T/gw.lua"
start_gateway gw "$T/gw.lua"
wait_drained appr src 60 || die "the gateway did not drain src: lag $(lag appr src)"
stop_gateway "$GW_PID"
N_DLQ=$(count_topic src.dlq)
diag "transient $N_TRANSIENT, permanent $N_PERMANENT; DLQ holds $N_DLQ"
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }
row() { awk -v n="$2" -v c="$3" '$1==n {print $c}' "$1"; }
# field NAME FILE: the first count after NAME on the summary line (the last line)
field() { tail -1 "$2" | grep -o "$1 [0-9]*" | head -1 | awk '{print $NF}'; }

hdr_dump src.dlq "$T/dlq.jsonl"
hdr_dump src.quarantine "$T/q.jsonl"
expect "lanes.quarantine_approval: every quarantine record carries errgate.approval: required" \
  '[ -s "$T/q.jsonl" ] && [ "$(grep -c "\"errgate.approval\": \"required\"" "$T/q.jsonl")" = "$(wc -l <"$T/q.jsonl")" ]'
expect "permanent records carry errgate.approval: required, transient ones do not" $PY - "$T/dlq.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
perm = [r for r in recs if r["headers"].get("error.class") == "permanent"]
tran = [r for r in recs if r["headers"].get("error.class") == "transient"]
ok = perm and tran and all(r["headers"].get("errgate.approval") == "required" for r in perm) \
    and not any("errgate.approval" in r["headers"] for r in tran)
sys.exit(0 if ok else 1)
PY

"$EG" dlq stats src.dlq --by state >"$T/s1.out" 2>"$T/s1.err"; rc=$?
expect "stats --by state: pending-approval $N_PERMANENT, open $N_TRANSIENT (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(row "$T/s1.out" pending-approval 2)" = "$N_PERMANENT" ] && [ "$(row "$T/s1.out" open 2)" = "$N_TRANSIENT" ]'
expect "stats: pending-approval is not resolved" '[ "$(row "$T/s1.out" total 4)" = 0 ]'
expect "stats: the state line names them" \
  'grep -q "^unresolved by state: open $N_TRANSIENT  pending-approval $N_PERMANENT  approved 0$" "$T/s1.out"'

# ---- replay honours the states --------------------------------------------------
"$EG" replay --from src.dlq --to src.replay >"$T/r1.out" 2>"$T/r1.err"; rc=$?
expect "replay replays the open items only (rc $rc, $(field replayed "$T/r1.out"))" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r1.out")" = "$N_TRANSIENT" ] && [ "$(count_topic src.replay)" = "$N_TRANSIENT" ]'
expect "replay says what it skipped and why" \
  'grep -q "skipped $N_PERMANENT (pending-approval=$N_PERMANENT)$" "$T/r1.out"'
"$EG" replay --from src.dlq --to src.replay >"$T/r2.out" 2>&1; rc=$?
expect "the same replay again republishes nothing (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r2.out")" = 0 ] && [ "$(count_topic src.replay)" = "$N_TRANSIENT" ]'
"$EG" replay --from src.dlq --to src.replay --state approved --dry-run >"$T/r3.out" 2>&1; rc=$?
expect "--state approved before any approval: nothing (rc $rc)" '[ "$rc" = 0 ] && [ "$(field "would replay" "$T/r3.out")" = 0 ]'
expect "the dry run table shows why each item is skipped" 'grep -q "skip: pending-approval" "$T/r3.out"'

# ---- approve --------------------------------------------------------------------
"$EG" dlq approve src.dlq --class permanent --by alice --dry-run >"$T/a0.out" 2>&1; rc=$?
expect "approve --dry-run lists the items and writes nothing (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "^would approve " "$T/a0.out")" = "$N_PERMANENT" ] &&
   [ "$(row "$("$EG" dlq stats src.dlq --by state >"$T/s0.out"; echo "$T/s0.out")" pending-approval 2)" = "$N_PERMANENT" ]'
# one item approved by id: the first replay command, run again, replays it
# (its group did not move past the items it skipped as pending-approval)
first=$($PY -c 'import json, sys
print(next(r["headers"]["errgate.id"] for r in map(json.loads, open(sys.argv[1])) if r["headers"].get("error.class") == "permanent"))' "$T/dlq.jsonl")
"$EG" dlq approve src.dlq --id "$first" --by carol >"$T/a00.out" 2>&1; rc=$?
expect "approve --id $first (rc $rc)" '[ "$rc" = 0 ] && grep -q "^approved $first src.dlq/" "$T/a00.out" && grep -q "^approved 1$" "$T/a00.out"'
"$EG" replay --from src.dlq --to src.replay >"$T/r3b.out" 2>&1; rc=$?
expect "the first replay command again: exactly the approved item (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r3b.out")" = 1 ] && [ "$(count_topic src.replay)" = $((N_TRANSIENT + 1)) ] &&
   grep -q "(pending-approval=$((N_PERMANENT - 1)), replayed=$N_TRANSIENT)$" "$T/r3b.out"'
"$EG" dlq approve src.dlq --class permanent --by alice --reason "checked with the payments team" >"$T/a1.out" 2>"$T/a1.err"; rc=$?
expect "approve --class prints what it approved and what it left alone (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(grep -c "^approved src/[0-9]*/[0-9]* src.dlq/[0-9]*/[0-9]* class=permanent" "$T/a1.out")" = $((N_PERMANENT - 1)) ] &&
   grep -q "^approved $((N_PERMANENT - 1))  left alone: replayed 1$" "$T/a1.out"'
kcat -C -b "$BOOTSTRAP" -t src.dlq.state -e -q -f '%k\t%s\n' >"$T/state.tsv" 2>/dev/null
expect "the state records name the approver, the reason and since (the approved copy's time)" $PY - "$T/state.tsv" "$N_PERMANENT" <<'PY'
import json, sys
got = [json.loads(l.split("\t", 1)[1]) for l in open(sys.argv[1])]
ap = [v for v in got if v["status"] == "approved" and v["by"] == "alice"]
import re
since = [re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", v.get("since", "")) and v["since"] <= v["at"] for v in ap]
sys.exit(0 if len(ap) == int(sys.argv[2]) - 1 and all(v["reason"] == "checked with the payments team" for v in ap)
         and all(since) else 1)
PY
"$EG" replay --from src.dlq --to src.replay --state approved >"$T/r4.out" 2>&1; rc=$?
expect "replay --state approved republishes exactly the approved items (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r4.out")" = $((N_PERMANENT - 1)) ] && [ "$(count_topic src.replay)" = $((N_TRANSIENT + N_PERMANENT)) ]'
"$EG" replay --from src.dlq --to src.replay >"$T/r5.out" 2>&1; rc=$?
expect "the first replay command, rerun, finds nothing left (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field replayed "$T/r5.out")" = 0 ] && grep -qE "skipped [1-9][0-9]* \(replayed=[1-9][0-9]*\)$" "$T/r5.out"'
"$EG" replay --from src.dlq --to src.replay --include-resolved --dry-run >"$T/r6.out" 2>&1; rc=$?
expect "--include-resolved is the explicit override (rc $rc)" '[ "$rc" = 0 ] && [ "$(field "would replay" "$T/r6.out")" = "$N_DLQ" ]'
"$EG" replay --from src.dlq --to src.replay --state replayed >"$T/r7.out" 2>"$T/r7.err"; rc=$?
expect "--state replayed without --include-resolved is a usage error (rc $rc)" \
  '[ "$rc" = 2 ] && grep -q "needs --include-resolved" "$T/r7.err"'
"$EG" dlq stats src.dlq --by state >"$T/s2.out"
expect "stats --by state adds up: replayed $N_DLQ = total" \
  '[ "$(row "$T/s2.out" replayed 2)" = "$N_DLQ" ] && [ "$(row "$T/s2.out" total 2)" = "$N_DLQ" ]'

# ---- approve by --id and --where; what cannot be approved --------------------------
printf 'kz\tlate\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.id=src/0/9999 \
  -H errgate.approval=required 2>/dev/null
printf 'ky\tlate\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=semantic -H errgate.id=src/1/9999 \
  -H errgate.approval=required 2>/dev/null
"$EG" dlq approve src.dlq --where 'headers["error.class"] == "semantic"' --by bob --dry-run >"$T/a2.out" 2>&1; rc=$?
expect "approve --where selects by expression (rc $rc)" \
  '[ "$rc" = 0 ] && grep -q "^would approve src/1/9999 " "$T/a2.out" && [ "$(grep -c "^would approve" "$T/a2.out")" = 1 ]'
"$EG" dlq approve src.dlq --id src/0/9999 --by bob >"$T/a3.out" 2>&1; rc=$?
expect "approve --id (rc $rc)" '[ "$rc" = 0 ] && grep -q "^approved src/0/9999 " "$T/a3.out"'
"$EG" dlq approve src.dlq --id src/0/9999 --by bob >"$T/a4.out" 2>"$T/a4.err"; rc=$?
expect "approving it again writes nothing (rc $rc)" '[ "$rc" = 0 ] && grep -q "already approved" "$T/a4.err"'
"$EG" dlq approve src.dlq --id "$first" --by bob >/dev/null 2>"$T/a5.err"; rc=$?
expect "a replayed item cannot be approved (rc $rc)" '[ "$rc" = 2 ] && grep -q "is replayed" "$T/a5.err"'
"$EG" dlq approve src.dlq --id src/3/1 --by bob >/dev/null 2>"$T/a6.err"; rc=$?
expect "an unknown id is refused (rc $rc)" '[ "$rc" = 2 ] && grep -q "no record of src.dlq carries that id" "$T/a6.err"'
"$EG" dlq approve src.dlq --where 'error(' --by bob >/dev/null 2>"$T/a7.err"; rc=$?
expect "a bad --where is refused before anything is written (rc $rc)" '[ "$rc" = 2 ]'
"$EG" dlq stats src.dlq --by state >"$T/s3.out"
expect "stats --by state: approved 1, pending-approval 1, replayed $N_DLQ; total adds up" \
  '[ "$(row "$T/s3.out" approved 2)" = 1 ] && [ "$(row "$T/s3.out" pending-approval 2)" = 1 ] &&
   [ "$(row "$T/s3.out" total 2)" = $((N_DLQ + 2)) ]'

# the replayed record failed again: a new copy of $first, pending approval.
# Approving it leaves the older copy replayed (the latest resolving status
# of the id applies to it), so nothing is replayed twice.
printf 'kf\tagain\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.id="$first" \
  -H errgate.approval=required 2>/dev/null
"$EG" dlq approve src.dlq --id "$first" --by dave >"$T/a8.out" 2>&1; rc=$?
expect "the new copy of a replayed record is approved by --id (rc $rc)" \
  '[ "$rc" = 0 ] && grep -q "^approved $first src.dlq/" "$T/a8.out" && grep -q "^approved 1  left alone: replayed 1$" "$T/a8.out"'
"$EG" dlq approve src.dlq --id "$first" --by dave >/dev/null 2>"$T/a9.err"; rc=$?
expect "approving it again: already approved (rc $rc)" '[ "$rc" = 0 ] && grep -q "already approved" "$T/a9.err"'
"$EG" dlq stats src.dlq --by state >"$T/s4.out"
expect "stats: the older copy stays replayed, the new one is approved" \
  '[ "$(row "$T/s4.out" replayed 2)" = "$N_DLQ" ] && [ "$(row "$T/s4.out" approved 2)" = 2 ]'
"$EG" replay --from src.dlq --to src.replay --state approved --dry-run >"$T/r8.out" 2>&1; rc=$?
expect "replay --state approved would send the two approved items, not the replayed copy (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(field "would replay" "$T/r8.out")" = 2 ]'
for bad in "--by bob" "--class permanent" "--class permanent --id x --by bob" "--class permanent --by ' '"; do
  eval "\"\$EG\" dlq approve src.dlq $bad" >/dev/null 2>"$T/b.err"; rc=$?
  expect "bad arguments 'approve $bad': exit 2 with a reason (rc $rc)" '[ "$rc" = 2 ] && head -1 "$T/b.err" | grep -q "^errgate dlq: "'
done
exit $FAILED
