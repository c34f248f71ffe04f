#!/usr/bin/env bash
# test_dlq_cmd.sh — `errgate dlq stats|tail|resolve` on the payment story
# (dlq_story.sh): stats counts equal the run's accounting per class, code,
# reason and original topic; resolve records statuses in <lane>.state and
# stats shows open versus resolved (a replay marks what it replayed, a
# record dead-lettered again after its resolution is open again);
# accepted-loss needs a reason; tail prints one line per record, in time
# order, never the payload unless --payload, and -f follows until SIGTERM.
# spec/run.sh: kafka
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/dlq_story.sh"

story 40
[ "$N_TRANSIENT" -ge 3 ] && [ "$N_PERMANENT" -ge 3 ] || die "the story needs transient and permanent records"
dlq() { "$EG" dlq "$@"; }
expect() { local d=$1; shift; if eval "$*"; then ok "$d"; else not_ok "$d"; fi; }
# row FILE NAME COLUMN: the value in COLUMN (2 records, 3 open, 4 resolved) of row NAME.
row() { awk -v n="$2" -v c="$3" '$1==n {print $c}' "$1"; }

# ---- stats -----------------------------------------------------------------
dlq stats src.dlq -b "$BOOTSTRAP" --by class >"$T/s1.out" 2>"$T/s1.err"; rc=$?
expect "stats --by class exits 0 (rc $rc)" '[ "$rc" = 0 ]'
expect "stats: a header row" 'head -1 "$T/s1.out" | grep -qE "^CLASS +ITEMS +OPEN +RESOLVED$"'
expect "stats: transient = the story's unavailable records ($(row "$T/s1.out" transient 2) = $N_TRANSIENT), all open" \
  '[ "$(row "$T/s1.out" transient 2)" = "$N_TRANSIENT" ] && [ "$(row "$T/s1.out" transient 3)" = "$N_TRANSIENT" ]'
expect "stats: permanent = the story's permanent records ($(row "$T/s1.out" permanent 2) = $N_PERMANENT)" \
  '[ "$(row "$T/s1.out" permanent 2)" = "$N_PERMANENT" ]'
expect "stats: total = both, 0 resolved" \
  '[ "$(row "$T/s1.out" total 2)" = $((N_TRANSIENT + N_PERMANENT)) ] && [ "$(row "$T/s1.out" total 4)" = 0 ]'
expect "stats: exactly those rows (header, 2 classes, total, two state lines)" '[ "$(wc -l <"$T/s1.out")" = 6 ]'
expect "stats: columns are aligned" \
  '[ "$(head -4 "$T/s1.out" | awk "{print length(\$0)}" | sort -u | wc -l)" = 1 ]'
sed "s|kafka = { |kafka = { [\"bootstrap.servers\"] = \"$BOOTSTRAP\", |" "$T/gw.lua" >"$T/conn.lua"
env -u ERRGATE_BOOTSTRAP "$EG" dlq stats src.dlq -c "$T/conn.lua" --by class >"$T/sc.out" 2>"$T/sc.err"; rc=$?
expect "stats -c CONFIG takes the connection from a gateway config (rc $rc)" '[ "$rc" = 0 ] && cmp -s "$T/s1.out" "$T/sc.out"'
dlq stats src.dlq -b "$BOOTSTRAP" --by code >"$T/s2.out"
expect "stats --by code: http_503 $N_TRANSIENT, http_400 $N_PERMANENT" \
  '[ "$(row "$T/s2.out" http_503 2)" = "$N_TRANSIENT" ] && [ "$(row "$T/s2.out" http_400 2)" = "$N_PERMANENT" ]'
dlq stats src.dlq -b "$BOOTSTRAP" --by reason >"$T/s3.out"
expect "stats --by reason: exhausted $N_TRANSIENT, permanent $N_PERMANENT" \
  '[ "$(row "$T/s3.out" exhausted 2)" = "$N_TRANSIENT" ] && [ "$(row "$T/s3.out" permanent 2)" = "$N_PERMANENT" ]'
dlq stats src.dlq -b "$BOOTSTRAP" --by original.topic >"$T/s4.out"
expect "stats --by original.topic: all from src" '[ "$(row "$T/s4.out" src 2)" = "$N_DLQ" ]'
dlq stats src.dlq -b "$BOOTSTRAP" --by policy >"$T/s5.out"
expect "stats --by policy: all decided by default@1+sha" \
  '[ "$(awk "\$1 ~ /^default@1\\+[0-9a-f]+\$/ {print \$2}" "$T/s5.out")" = "$N_DLQ" ]'
dlq stats src.dlq -b "$BOOTSTRAP" --since 1h >"$T/s6.out"
expect "stats --since 1h counts the story" '[ "$(row "$T/s6.out" total 2)" = "$N_DLQ" ]'
sleep 1
dlq stats src.dlq -b "$BOOTSTRAP" --since 500ms >"$T/s7.out"
expect "stats --since 500ms counts nothing older" '[ "$(row "$T/s7.out" total 2)" = 0 ]'

# ---- tail ------------------------------------------------------------------
LINE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z src/[0-3]/[0-9]+ class=(transient|permanent) code=http_(503|400) reason=(exhausted|permanent) retry.count=0 attempts=[0-9]+ message="HTTP (503|400) [^"]*"$'
dlq tail src.dlq -b "$BOOTSTRAP" >"$T/t1.out" 2>"$T/t1.err"; rc=$?
expect "tail: the last 10 records by default, one line each (rc $rc)" '[ "$rc" = 0 ] && [ "$(wc -l <"$T/t1.out")" = 10 ]'
expect "tail: every line has time, original coordinates, class, code, reason, retry.count, attempts and message" \
  '[ "$(grep -cE "$LINE" "$T/t1.out")" = 10 ]'
expect "tail: no payload (the records carry \"mode\")" '! grep -q mode "$T/t1.out"'
dlq tail src.dlq -b "$BOOTSTRAP" -n 1000 >"$T/t2.out"
expect "tail -n 1000: every record once" \
  '[ "$(wc -l <"$T/t2.out")" = "$N_DLQ" ] && [ "$(cut -d" " -f2 "$T/t2.out" | sort -u | wc -l)" = "$N_DLQ" ]'
expect "tail: lines in time order" 'cut -d" " -f1 "$T/t2.out" | sort -c'
expect "tail -n 3: the 3 newest" '[ "$(dlq tail src.dlq -b "$BOOTSTRAP" -n 3)" = "$(tail -3 "$T/t2.out")" ]'
expect "tail: errgate.attempts counts every attempt: 5 for an exhausted transient record (4 retries), 1 for a permanent one" \
  '[ "$(grep -c " class=transient .* attempts=5 " "$T/t2.out")" = "$N_TRANSIENT" ] && [ "$(grep -c " class=permanent .* attempts=1 " "$T/t2.out")" = "$N_PERMANENT" ]'
dlq tail src.dlq -b "$BOOTSTRAP" -n 1000 --json >"$T/tj.out"; rc=$?
expect "tail --json: one JSON object per record with the line's fields, lane coordinates, id, policy and action, no payload (rc $rc)" \
  '[ "$rc" = 0 ] && $PY - "$T/tj.out" "$T/t2.out" "$N_DLQ" <<"PY"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
lines = open(sys.argv[2]).read().splitlines()
assert len(objs) == int(sys.argv[3]) == len(lines), (len(objs), len(lines))
for o, l in zip(objs, lines):  # the same records in the same order as the text lines
    orig = "%s/%s/%s" % (o["original_topic"], o["original_partition"], o["original_offset"])
    assert l.split(" ")[1] == orig and o["id"] == orig, (l, o)
    assert " class=%s code=%s reason=%s retry.count=%d attempts=%d " % (o["class"], o["code"], o["reason"], o["retry_count"], o["attempts"]) in l, (l, o)
    assert o["lane"]["topic"] == "src.dlq" and o["action"] == "dlq" and o["policy"].startswith("default@1+"), o
    assert o["message"].startswith("HTTP ") and "key" not in o and "value" not in o, o
PY'
dlq tail src.dlq -b "$BOOTSTRAP" -n 1 --json --payload >"$T/tjp.out"
expect "tail --json --payload adds key and value as strings" \
  '$PY -c "import json,sys; o=json.loads(open(sys.argv[1]).read()); assert o[\"key\"].startswith(\"k\") and json.loads(o[\"value\"])[\"mode\"]" "$T/tjp.out"'
dlq tail src.dlq -b "$BOOTSTRAP" -n 1000 --payload >"$T/t3.out"
expect "tail --payload adds key and value" \
  '[ "$(grep -cE " key=\"k[0-9]+\" value=\"\{\\\\\"id\\\\\":\\\\\"r[0-9]+\\\\\",\\\\\"mode\\\\\":" "$T/t3.out")" = "$N_DLQ" ]'
bg tailf "$EG" dlq tail src.dlq -b "$BOOTSTRAP" -f -n 0
tpid=$LASTPID
sleep 1
printf 'kf\t{"id":"rf","mode":"manual"}\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=manual -H errgate.id=src/9/9 2>/dev/null
wait_for 10 grep -q 'class=manual' "$T/tailf.out"
kill -TERM "$tpid"; rc=0; wait "$tpid" || rc=$?
expect "tail -f prints the new record and exits 0 on SIGTERM (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(wc -l <"$T/tailf.out")" = 1 ] && grep -q "^.* -/-/- class=manual code=- " "$T/tailf.out"'

# ---- resolve -----------------------------------------------------------------
hdr_dump src.dlq "$T/dlq.json"
pid=$(grep '"error.class": "permanent"' "$T/dlq.json" | head -1 | $PY -c 'import json,sys; print(json.loads(sys.stdin.readline())["headers"]["errgate.id"])')
pid2=$(grep '"error.class": "permanent"' "$T/dlq.json" | sed -n 2p | $PY -c 'import json,sys; print(json.loads(sys.stdin.readline())["headers"]["errgate.id"])')
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid" --status accepted-loss >"$T/r0.out" 2>"$T/r0.err"; rc=$?
expect "accepted-loss without --reason is refused (rc $rc)" '[ "$rc" = 2 ] && grep -q "accepted-loss needs --reason" "$T/r0.err"'
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid" --status accepted-loss --reason "  " >/dev/null 2>&1; rc=$?
expect "accepted-loss with a blank --reason is refused (rc $rc)" '[ "$rc" = 2 ]'
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid" --status accepted-loss --reason 'refunded by hand, ticket "OPS-7"' >"$T/r1.out" 2>"$T/r1.err"; rc=$?
expect "resolve accepted-loss with a reason (rc $rc)" '[ "$rc" = 0 ] && grep -q "^$pid accepted-loss in src.dlq.state" "$T/r1.out"'
if [ "$BROKER" = kafka ]; then
  pol=$($PY "$ROOT/spec/e2e/kafka_admin.py" config "$BOOTSTRAP" src.dlq.state cleanup.policy)
  expect "resolve created the state topic compacted through the Admin API (cleanup.policy=$pol)" \
    '[ "$pol" = compact ] && ! grep -q "cannot create" "$T/r1.err"'
else
  expect "resolve says the mock cannot make the state topic compacted" \
    'grep -q "cannot create src.dlq.state with cleanup.policy=compact" "$T/r1.err"'
fi
expect "the refused resolves wrote nothing" '[ "$(count_topic src.dlq.state)" = 1 ]'
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid2" --status closed >"$T/r2.out" 2>&1; rc=$?
expect "resolve closed without a reason (rc $rc)" '[ "$rc" = 0 ]'
dlq resolve src.dlq -b "$BOOTSTRAP" --id src/3/999 --status closed >/dev/null 2>"$T/r3.err"; rc=$?
expect "an id that no lane record carries is refused (rc $rc)" '[ "$rc" = 2 ] && grep -q "no record of src.dlq carries that id" "$T/r3.err"'
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid" --status done >/dev/null 2>"$T/r4.err"; rc=$?
expect "an unknown status is refused (rc $rc)" '[ "$rc" = 2 ] && grep -q "not one of replayed, accepted-loss, closed" "$T/r4.err"'
kcat -C -b "$BOOTSTRAP" -t src.dlq.state -e -q -f '%k\t%s\n' >"$T/state.tsv" 2>/dev/null
expect "the state topic holds the two resolutions keyed by errgate.id, as JSON {status, reason, at, by}" $PY - "$T/state.tsv" "$pid" "$pid2" <<'PY'
import json, re, sys
rows = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1])]
got = {k: json.loads(v) for k, v in rows}
a, b = got.get(sys.argv[2]), got.get(sys.argv[3])
ok = len(rows) == 2 and a and b and a["status"] == "accepted-loss" and a["reason"] == 'refunded by hand, ticket "OPS-7"' \
    and b["status"] == "closed" and b["reason"] == "" and "@" in a["by"] \
    and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", a["at"]) and set(a) == {"status", "reason", "at", "by"}
print("#", rows)
sys.exit(0 if ok else 1)
PY
dlq stats src.dlq -b "$BOOTSTRAP" >"$T/s8.out"
expect "stats: permanent shows 2 resolved, $((N_PERMANENT - 2)) open" \
  '[ "$(row "$T/s8.out" permanent 3)" = $((N_PERMANENT - 2)) ] && [ "$(row "$T/s8.out" permanent 4)" = 2 ]'
expect "stats: resolved by status names them" 'grep -q "^resolved by status: replayed 0  accepted-loss 1  closed 1$" "$T/s8.out"'

# replay marks what it replayed
create_topic src.replay 4
"$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.replay --class transient >"$T/rp.out" 2>&1; rc=$?
dlq stats src.dlq -b "$BOOTSTRAP" >"$T/s9.out"
expect "after replay: every transient record resolved as replayed (rc $rc)" \
  '[ "$rc" = 0 ] && [ "$(row "$T/s9.out" transient 4)" = "$N_TRANSIENT" ] && [ "$(row "$T/s9.out" transient 3)" = 0 ] &&
   grep -q "^resolved by status: replayed $N_TRANSIENT  accepted-loss 1  closed 1$" "$T/s9.out"'
expect "the dry run marks nothing" \
  '"$EG" replay -b "$BOOTSTRAP" --from src.dlq --to src.replay --class permanent --dry-run >/dev/null 2>&1 &&
   [ "$(count_topic src.dlq.state)" = $((2 + N_TRANSIENT)) ]'

# the latest status per id wins; a record dead-lettered again after its resolution is open
dlq resolve src.dlq -b "$BOOTSTRAP" --id "$pid2" --status replayed >/dev/null 2>&1
printf 'kx\tagain\n' | kcat -P -b "$BOOTSTRAP" -t src.dlq -K $'\t' -H error.class=permanent -H errgate.id="$pid" 2>/dev/null
dlq stats src.dlq -b "$BOOTSTRAP" >"$T/s10.out"
expect "latest status wins (closed -> replayed) and a newer copy of a resolved id is open" \
  '[ "$(row "$T/s10.out" permanent 2)" = $((N_PERMANENT + 1)) ] && [ "$(row "$T/s10.out" permanent 3)" = $((N_PERMANENT - 1)) ] &&
   grep -q "^resolved by status: replayed $((N_TRANSIENT + 1))  accepted-loss 1  closed 0$" "$T/s10.out"'

# ---- bad input -----------------------------------------------------------------
dlq stats nosuch.dlq -b "$BOOTSTRAP" >/dev/null 2>"$T/b1.err"; rc=$?
expect "a missing lane: exit 2 naming it (rc $rc)" '[ "$rc" = 2 ] && grep -q "topic nosuch.dlq does not exist" "$T/b1.err"'
for bad in "stats src.dlq --by colour" "stats src.dlq --since soon" "tail src.dlq -n x" "peek src.dlq" "stats" "resolve src.dlq --status closed"; do
  # shellcheck disable=SC2086
  dlq $bad -b "$BOOTSTRAP" >/dev/null 2>"$T/b2.err"; rc=$?
  expect "bad arguments 'dlq $bad': exit 2 with a reason (rc $rc)" '[ "$rc" = 2 ] && head -1 "$T/b2.err" | grep -q "^errgate dlq: "'
done

# ---- copies: a lane write repeated (after a crash or a rebalance) is not a second item
dlq stats src.dlq -b "$BOOTSTRAP" --by class >"$T/before.out"
$PY - "$BOOTSTRAP" <<'PY' || die "cannot copy lane records"
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "copier", "enable.auto.commit": False})
c.assign([TopicPartition("src.dlq", p, 0) for p in c.list_topics("src.dlq", timeout=10).topics["src.dlq"].partitions])
got = []
while len(got) < 2:
    m = c.poll(5)
    if m is None: break
    if not m.error(): got.append(m)
p = Producer({"bootstrap.servers": sys.argv[1]})
for m in got:  # the same record again, twice: key, value and every header
    for _ in range(2): p.produce("src.dlq", key=m.key(), value=m.value(), headers=m.headers(), partition=m.partition())
p.flush(10)
c.close()
print(len(got))
PY
dlq stats src.dlq -b "$BOOTSTRAP" --by class >"$T/after.out"
expect "stats counts items: 4 more lane records, the same total ($(row "$T/after.out" total 2) = $(row "$T/before.out" total 2))" \
  '[ "$(row "$T/after.out" total 2)" = "$(row "$T/before.out" total 2)" ]'
expect "and says how many copies it folded" 'grep -q "^copies folded: 4 " "$T/after.out"'
