#!/usr/bin/env bash
# test_fence.sh — per-key fencing (source.fence) on the embedded broker, with
# an order oracle (fence_order.py: per key, the order in which the target
# accepted records against their production order).
#   1. fence without ordering = "key" is refused at load, one clear error;
#   2. ordering = "key" without a fence: 240 records of 12 interleaved keys,
#      some failing transiently onto the rungs 1s/2s: later records of a key
#      pass the one on a rung, and the oracle sees it (inversions > 0);
#   3. the same records with source.fence = "ladder": no inversion, every
#      record that can succeed did, the followers went to the rungs with
#      errgate.fenced-by naming a record of their own key, the metrics count
#      them, and nothing is fenced at the end (a dead-lettered head released
#      its key);
#   4. source.fence = "ladder+dlq": a dead-lettered record's followers go to
#      the DLQ marked errgate.fenced-by; GET /fences shows the key and its
#      queue; after a kill -9 the next gateway rebuilds the fence from the
#      fence topic (gheld.fences) and K's next record still follows;
#      errgate ctl fence list shows it, errgate ctl fence release K
#      (POST /fences/release) lifts it and K's next record passes;
#   5. "ladder+dlq": replaying a key's DLQ items in order (errgate replay)
#      resolves its fence: the target sees them in order;
#   6. with control_key_file, fence records in the fence topic that are not
#      signed with the key (anyone can produce there) or malformed are
#      refused, counted by reason and never fence a key; the same fences
#      signed with the key are rebuilt and fence it; a forged unsigned
#      release record is refused the same way (the key stays fenced), one
#      signed with the key lifts the fence;
#   7. two instances of one group ("ladder+dlq"): a release asked on the
#      instance that does not own the key's partition (errgate ctl fence
#      release) is written to the fence topic and frees the key on the one
#      that does: its next record passes;
#   8. dlq resolve of a dead-lettered head (-c CONFIG) tells its owner: the
#      first follower is the key's head next (still fenced, so a later record
#      follows it in order), a resolved follower leaves the queue, and once
#      the last is resolved the key's later records pass, in order; without
#      -c the command says the key stays fenced;
#   9. a resolve written while no gateway of the group runs is read by the
#      next owner: it rebuilds the fence with the head moved on;
#  10. ladder+dlq: followers reach the DLQ in offset order;
#  11. an operator's release, then a later fence of the key that resolves
#      before the released head and follower come back from their rung:
#      they still reach the target (the release floor: not dropped as
#      copies of resolved records).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
ORACLE="$ROOT/spec/e2e/fence_order.py"
POLICY="$ROOT/spec/fixtures/policies/ladder_1s_2s.lua"
start_broker $(ladder_topics plain 1s 2s) $(ladder_topics fenced 1s 2s) $(ladder_topics held 1s 2s) \
  $(ladder_topics sig 1s 2s) $(ladder_topics two 1s 2s) $(ladder_topics ord 1s 10s) $(ladder_topics rel 1s 10s)
echo "fence-token" >"$T/token"
ADMIN="admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"

# 1. refused without key ordering
handler_at h0
ladder_config "$T/bad.lua" gbad plain partition "$POLICY" "" "source = { topics = { \"plain\" }, ordering = \"partition\", fence = \"ladder\" },"
# (the later source table wins in a Lua constructor: ordering partition with a fence)
out=$(timeout 20 "$EG" run -c "$T/bad.lua" 2>&1); rc=$?
check "a fence without ordering = key is refused: exit 2 ($rc: $(tail -1 <<<"$out"))" \
  exits_with "$rc" 2 'source.fence: "ladder" needs source.ordering = "key" (it is "partition")' "$out"

$PY "$ORACLE" gen 240 12 7 "ok:70 transient-1:14 transient-2:8 transient-3:4 permanent:4" >"$T/records.txt"
EXPECTED=$(grep -vc 'transient-3\|permanent' "$T/records.txt")
DEAD=$(grep -c 'transient-3\|permanent' "$T/records.txt")
diag "$EXPECTED records can succeed, $DEAD end in the DLQ"

# run TOPIC GROUP HANDLER FENCE: the records through a gateway on TOPIC;
# waits until every record that can succeed did and the DLQ has the rest.
run() {
  local topic=$1 group=$2 h=$3 fence=$4
  handler_at "$h"
  ladder_config "$T/$group.lua" "$group" "$topic" key "$POLICY" "" "$ADMIN"
  [ -n "$fence" ] && sed -i "s/ordering = \"key\",/ordering = \"key\", fence = \"$fence\",/" "$T/$group.lua"
  produce "$topic" <"$T/records.txt"
  start_gateway "$group" "$T/$group.lua"
  wait_for 60 bash -c "[ \$(awk '{print \$2}' '$T/$h.log' 2>/dev/null | sort -u | wc -l) -ge $EXPECTED ] &&
    [ \$(kcat -C -b $BOOTSTRAP -t $topic.dlq -e -q 2>/dev/null | wc -l) -ge $DEAD ]" ||
    not_ok "$topic: $(awk '{print $2}' "$T/$h.log" 2>/dev/null | sort -u | wc -l) of $EXPECTED succeeded"
  wait_for 20 all_committed "$group" "$topic" "$topic.retry.1s" "$topic.retry.2s" || not_ok "$topic: not all committed"
}

# 2. without a fence the oracle sees disorder
run plain gplain h1 ""
res=$($PY "$ORACLE" check "$T/records.txt" "$T/h1.log" --expect-disorder); rc=$?
check "without a fence later records of a key pass the one on a rung ($res)" [ "$rc" = 0 ]
stop_gateway "$GW_PID"

# 3. with source.fence = "ladder": in order
run fenced gfenced h2 ladder
ADDR=$(admin_addr gfenced) || die "no admin endpoint"
res=$($PY "$ORACLE" check "$T/records.txt" "$T/h2.log" --expect-ordered); rc=$?
check "with source.fence = ladder every key's records reached the target in order, all that can succeed did ($res)" \
  [ "$rc" = 0 ]
dump fenced.retry.1s "$T/r1.json"
dump fenced.retry.2s "$T/r2.json"
dump fenced.dlq "$T/dlq.json"
$PY - "$T/records.txt" "$T/r1.json" "$T/r2.json" "$T/dlq.json" >"$T/fenced.check" <<'PY'
import json, sys
key_at = {}  # fenced/P/OFFSET -> key: offsets are per partition, so map by the record's id from its value
lines = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1])]
rid_key = {v.split('"id":"', 1)[1].split('"', 1)[0]: k for k, v in lines}
recs = []
for f in sys.argv[2:]:
    for line in open(f):
        m = json.loads(line)
        h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
        rid = m["payload"].split('"id":"', 1)[1].split('"', 1)[0]
        recs.append((h, rid, m["key"]))
        key_at[h["errgate.id"]] = m["key"]
fenced = [(h, rid, k) for h, rid, k in recs if "errgate.fenced-by" in h]
bad = [rid for h, rid, k in fenced
       if key_at.get(h["errgate.fenced-by"]) != k or h.get("errgate.reason") != "fenced" or h.get("error.kind") != "fenced"]
in_dlq = [rid for h, rid, k in fenced if h.get("errgate.action") == "dlq"]
print("fenced=%d bad=%d fenced_in_dlq=%d %s" % (len(fenced), len(bad), len(in_dlq), [
    (h.get("errgate.fenced-by"), key_at.get(h["errgate.fenced-by"]), k, h.get("errgate.reason"), h.get("error.kind"))
    for h, rid, k in fenced if rid in bad[:2]]))
sys.exit(0 if fenced and not bad and not in_dlq else 1)
PY
rc=$?
check "followers went to the rungs with errgate.fenced-by naming a parked record of their key, reason and kind fenced, none to the DLQ under ladder ($(cat "$T/fenced.check"))" [ "$rc" = 0 ]
n=$(metric "$ADDR" errgate_records_fenced_total)
check "errgate_records_fenced_total counts the followers ($n)" \
  eval '[ "${n:-0}" != "?" ] && [ "${n%.*}" -gt 0 ]'
n=$(metric "$ADDR" errgate_fenced_keys)
check "nothing is fenced at the end: errgate_fenced_keys $n" [ "$n" = 0 ]
n=$(metric "$ADDR" errgate_fence_writes_total)
w=$(kcat -C -b "$BOOTSTRAP" -t gfenced.fences -e -q 2>/dev/null | grep -c '^errgate-fence')
check "every fence change was written to gfenced.fences (errgate_fence_writes_total $n, $w records read)" \
  eval '[ "${n%.*}" -gt 0 ] && [ "$w" -gt 0 ]'
body=$(admin_get "$ADDR" /fences)
check "GET /fences: 200, mode ladder, no fence left ($(http_code): $body)" \
  eval '[ "$(http_code)" = 200 ] && grep -q "\"mode\":\"ladder\".*\"fences\":\[\]" <<<"$body"'
check "the decision log names the parked record of a follower" \
  grep -q '"event":"decision".*"action":"ladder".*"reason":"fenced".*"fenced_by":"fenced/' "$T/gfenced.err"
# a stale copy of a follower's rung record, produced again after its record succeeded (what a
# rebalance redelivers when the copy's offset was not committed yet): dropped as a duplicate, not
# sent to the target a second time
$PY - "$T/r1.json" "$T/h2.log" >"$T/stale.txt" <<'PY'
import json, sys
done = {l.split()[1] for l in open(sys.argv[2]) if len(l.split()) > 1}
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    rid = m["payload"].split('"id":"', 1)[1].split('"', 1)[0]
    if "errgate.fenced-by" in h and rid in done:
        print("\t".join([rid, str(m["partition"]), h["errgate.id"], h["errgate.fenced-by"], m["key"], m["payload"]]))
        break
PY
IFS=$'\t' read -r srid spart sid sby skey spayload <"$T/stale.txt"
[ -n "$sid" ] || die "no follower on fenced.retry.1s to copy"
before=$(awk -v id="$srid" '$2 == id' "$T/h2.log" | wc -l)
d0=$(metric "$ADDR" errgate_fence_duplicates_dropped_total)
printf '%s\t%s\n' "$skey" "$spayload" | kcat -P -b "$BOOTSTRAP" -t fenced.retry.1s -p "$spart" -K $'\t' \
  -H "errgate.id=$sid" -H "errgate.fenced-by=$sby" -H "retry.count=1" -H "original.topic=fenced" \
  -H "original.partition=$spart" 2>/dev/null || die "kcat produce of the stale copy failed"
for _ in $(seq 40); do
  d1=$(metric "$ADDR" errgate_fence_duplicates_dropped_total)
  [ "${d1%.*}" -gt "${d0%.*}" ] 2>/dev/null && break
  sleep 0.5
done
wait_for 20 all_committed gfenced fenced.retry.1s || not_ok "fenced.retry.1s: the stale copy is not committed"
after=$(awk -v id="$srid" '$2 == id' "$T/h2.log" | wc -l)
check "a stale copy of follower $sid (succeeded) is dropped, committed, not sent again (target saw it $before then $after times; errgate_fence_duplicates_dropped_total $d0 -> $d1)" \
  eval '[ "$after" = "$before" ] && [ "${d1%.*}" -gt "${d0%.*}" ]'
check "the drop is logged (fence_duplicate, the record's id and its key's resolved offset)" \
  grep -q "\"event\":\"fence_duplicate\".*\"id\":\"$sid\".*\"resolved_to\":" "$T/gfenced.err"
stop_gateway "$GW_PID"
check "the fenced gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 4. ladder+dlq: a dead letter fences its key until an operator releases it
handler_at h3
ladder_config "$T/gheld.lua" gheld held key "$POLICY" "" "$ADMIN"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder+dlq",/' "$T/gheld.lua"
start_gateway gheld "$T/gheld.lua"
ADDR=$(admin_addr gheld) || die "no admin endpoint"
printf 'z\t{"id":"z1","mode":"permanent"}\nz\t{"id":"z2","mode":"ok"}\ny\t{"id":"y1","mode":"ok"}\nz\t{"id":"z3","mode":"ok"}\n' |
  produce held
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t held.dlq -e -q 2>/dev/null | wc -l) -ge 3 ]" ||
  not_ok "held.dlq: $(kcat -C -b "$BOOTSTRAP" -t held.dlq -e -q 2>/dev/null | wc -l) records"
wait_for 10 grep -q '^ok y1 ' "$T/h3.log" || not_ok "y1 did not pass"
check "another key passes while z is fenced; z2 and z3 did not reach the target" \
  bash -c "! grep -q '^ok z' '$T/h3.log'"
dump held.dlq "$T/hdlq.json"
$PY - "$T/hdlq.json" >"$T/held.check" <<'PY'
import json, sys
rows = []
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    rows.append((m["payload"].split('"id":"', 1)[1].split('"', 1)[0], h.get("errgate.fenced-by", ""), h["errgate.id"]))
rows.sort(key=lambda r: int(r[2].rsplit("/", 1)[1]))
print(rows)
z1 = [r for r in rows if r[0] == "z1"]
ok = len(rows) == 3 and z1 and z1[0][1] == "" and [r[0] for r in rows] == ["z1", "z2", "z3"] and \
    all(r[1] == z1[0][2] for r in rows[1:])
sys.exit(0 if ok else 1)
PY
rc=$?
check "z1 dead-lettered, z2 and z3 followed it to the DLQ in order with errgate.fenced-by: z1's id ($(cat "$T/held.check"))" [ "$rc" = 0 ]
body=$(admin_get "$ADDR" /fences)
check "GET /fences shows z parked in the DLQ with 2 followers ($body)" \
  grep -q '"key":"z".*"parked":true,"why":"dlq","lane":"dlq".*"followers":2' <<<"$body"
# kill -9: the next gateway rebuilds z's fence from gheld.fences before it takes records
kill -9 "$GW_PID"; wait "$GW_PID" 2>/dev/null
start_gateway gheld2 "$T/gheld.lua"
ADDR=$(admin_addr gheld2) || die "no admin endpoint after the restart"
wait_for 40 grep -q '"event":"assign".*held\[' "$T/gheld2.err" || die "no assignment after the restart"
check "after a kill -9 the new gateway rebuilt z's fence from gheld.fences" \
  grep -q '"event":"fences_rebuilt".*held\[3\]: 1 fences rebuilt from gheld.fences' "$T/gheld2.err"
body=$(admin_get "$ADDR" /fences)
check "GET /fences shows z with the same head and queue after the restart ($body)" \
  grep -q '"key":"z".*"head":"held/3/0","parked":true,"why":"dlq".*"queue":\["held/3/1","held/3/2"\]' <<<"$body"
printf 'z\t{"id":"z5","mode":"ok"}\n' | produce held
wait_for 20 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t held.dlq -e -q 2>/dev/null | wc -l) -ge 4 ]" &&
  ok "z's next record follows to the DLQ under the rebuilt fence" || not_ok "z5 did not follow: $(cat "$T/h3.log")"
check "z5 did not reach the target" bash -c "! grep -q '^ok z5 ' '$T/h3.log'"
code=$(curl -s -m 5 -o "$T/rel" -w '%{http_code}' -d 'key=z&by=test' "http://$ADDR/fences/release")
check "POST /fences/release without the token: 401 ($code)" [ "$code" = 401 ]
ctl() { USER=fence-op "$EG" ctl --admin "http://$ADDR" --token-file "$T/token" "$@"; }
out=$(ctl fence list 2>&1); rc=$?
check "errgate ctl fence list shows z ($rc: $out)" \
  exits_with "$rc" 0 "held\[3\]  key z  head held/3/0 (parked, dlq)  3 followers" "$out"
out=$(ctl fence release z 2>&1); rc=$?
check "errgate ctl fence release z: POST /fences/release, 1 lifted ($rc: $out)" \
  exits_with "$rc" 0 "fence release: 1 fence(s) lifted" "$out"
check "the release is logged with its author" \
  grep -q '"event":"fence_release".*"by":"fence-op","released":1' "$T/gheld2.err"
out=$(ctl fence list 2>&1)
check "and z is no longer listed ($out)" [ "$out" = "no keys fenced" ]
printf 'z\t{"id":"z4","mode":"ok"}\n' | produce held
wait_for 20 grep -q '^ok z4 ' "$T/h3.log" && ok "z's next record passes after the release" ||
  not_ok "z4 did not pass: $(cat "$T/h3.log")"
code=$(curl -s -m 5 -o "$T/rel" -w '%{http_code}' -H "Authorization: Bearer fence-token" -d 'key=z' \
  "http://$ADDR/fences/release")
check "releasing an unfenced key: 404 ($code)" [ "$code" = 404 ]
out=$(ctl fence release z 2>&1); rc=$?
check "errgate ctl fence release of an unfenced key exits 1 ($rc: $out)" [ "$rc" = 1 ]
out=$(ctl fence 2>&1); rc=$?
check "errgate ctl fence without list or release is a usage error ($rc: $out)" exits_with "$rc" 2 "fence list" "$out"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 5. ladder+dlq: the DLQ items of a key replayed in order (errgate replay)
# resolve its fence: the head comes back with its errgate.id and passes, its
# followers wait behind it in the source (ordering = key) and pass in turn
start_gateway gheld3 "$T/gheld.lua"
ADDR=$(admin_addr gheld3) || die "no admin endpoint: $(tail -3 "$T/gheld3.err")"
wait_for 40 grep -q '"event":"assign".*held\[' "$T/gheld3.err" || die "no assignment"
printf 'w\t{"id":"w1","mode":"transient-3"}\nw\t{"id":"w2","mode":"ok"}\nw\t{"id":"w3","mode":"ok"}\n' | produce held
wait_for 60 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t held.dlq -e -q 2>/dev/null | grep -c '\"id\":\"w') -ge 3 ]" ||
  not_ok "w1..w3 not all in held.dlq"
body=$(admin_get "$ADDR" /fences)
check "w1 exhausted its rungs into the DLQ; w2 and w3 followed it there ($body)" \
  grep -q '"key":"w".*"parked":true,"why":"dlq".*"followers":2' <<<"$body"
out=$("$EG" replay -c "$T/gheld.lua" --from held.dlq --key w 2>&1); rc=$?
check "errgate replay --key w: exit 0 ($rc: $(tail -1 <<<"$out"))" [ "$rc" = 0 ]
wait_for 30 bash -c "[ \$(grep -c '^ok w' '$T/h3.log') -ge 3 ]" || not_ok "replayed: $(grep '^ok w' "$T/h3.log" | tr '\n' ' ')"
check "the target saw w1 w2 w3 in order ($(grep -o '^ok w[0-9]' "$T/h3.log" | tr '\n' ' '))" \
  [ "$(grep -o '^ok w[0-9]' "$T/h3.log" | tr '\n' ' ')" = "ok w1 ok w2 ok w3 " ]
body=$(admin_get "$ADDR" /fences)
check "and w's fence is resolved ($body)" bash -c "! grep -q '\"key\":\"w\"' <<<'$body'"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 6. a keyed deployment: only fence records signed with its key count
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/ctl.key"
QSHA=$(printf q | sha256sum | cut -d' ' -f1)
forge() { # forge PARTITION MODE [VALUE]: a fence of key q in sig[PARTITION], its head sig/P/999 in the DLQ
  local v=${3:-$(printf 'errgate-fence 1\nsig\n%d\n71\nsig/%d/999\n1 dlq dlq - 0 1 1\n0' "$1" "$1")}
  $PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" gsig.fences fence "$T/ctl.key" "sig/$1/$QSHA" "$v"$'\n' "$2" >/dev/null ||
    not_ok "cannot produce to gsig.fences"
}
for p in 0 1 2 3; do forge $p none; done
forge 0 good "not a fence"
ladder_config "$T/gsig.lua" gsig sig key "$POLICY" "" "$ADMIN control_key_file = \"$T/ctl.key\","
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder+dlq",/' "$T/gsig.lua"
start_gateway gsig "$T/gsig.lua"
ADDR=$(admin_addr gsig) || die "no admin endpoint: $(tail -3 "$T/gsig.err")"
wait_for 40 grep -q '"event":"assign".*sig\[' "$T/gsig.err" || die "no assignment"
n=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="unsigned"')
m=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="malformed"')
check "4 unsigned fence records refused (unsigned $n), 1 signed but malformed (malformed $m)" \
  eval '[ "$n" = 4 ] && [ "$m" = 1 ]'
check "refusals are logged" grep -q '"event":"fence_record_refused".*unsigned' "$T/gsig.err"
check "no fence was rebuilt from them" bash -c "! grep -q fences_rebuilt '$T/gsig.err'"
printf 'q\t{"id":"q1","mode":"ok"}\n' | produce sig
wait_for 20 grep -q '^ok q1 ' "$T/h3.log" && ok "q is not fenced: q1 reached the target" || not_ok "q1 did not pass"
stop_gateway "$GW_PID"
for p in 0 1 2 3; do forge $p good; done
start_gateway gsig2 "$T/gsig.lua"
ADDR=$(admin_addr gsig2) || die "no admin endpoint: $(tail -3 "$T/gsig2.err")"
wait_for 40 grep -q '"event":"assign".*sig\[' "$T/gsig2.err" || die "no assignment"
check "the fences signed with the key are rebuilt ($(grep -c fences_rebuilt "$T/gsig2.err") partitions)" \
  [ "$(grep -c '"event":"fences_rebuilt".*: 1 fences rebuilt from gsig.fences' "$T/gsig2.err")" = 4 ]
printf 'q\t{"id":"q2","mode":"ok"}\n' | produce sig
wait_for 20 bash -c "kcat -C -b $BOOTSTRAP -t sig.dlq -e -q 2>/dev/null | grep -q q2" &&
  ok "q2 follows the signed fence's head to the DLQ" || not_ok "q2 did not follow"
check "q2 did not reach the target" bash -c "! grep -q '^ok q2 ' '$T/h3.log'"
# a release record (fence_op.h) for q's fences, forged without the key, then signed with it
relop() { # relop PARTITION MODE
  $PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" gsig.fences fence "$T/ctl.key" "sig/$1/$QSHA" \
    "$(printf 'errgate-fence-op 1\nrelease\nsig/%d/999\nforger\n1' "$1")"$'\n' "$2" >/dev/null ||
    not_ok "cannot produce to gsig.fences"
}
n0=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="unsigned"')
for p in 0 1 2 3; do relop $p none; done
wait_for 20 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/metrics | awk '/^errgate_fence_records_refused_total\{reason=\"unsigned\"\}/{print \$2}')\" = $((n0 + 4)) ]"
n=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="unsigned"')
check "4 forged unsigned release records refused ($n0 -> $n unsigned)" [ "$n" = $((n0 + 4)) ]
body=$(admin_get "$ADDR" /fences)
check "q is still fenced after them ($body)" grep -q '"key":"q"' <<<"$body"
printf 'q\t{"id":"q3","mode":"ok"}\n' | produce sig
wait_for 20 bash -c "kcat -C -b $BOOTSTRAP -t sig.dlq -e -q 2>/dev/null | grep -q q3" &&
  ok "q3 follows to the DLQ: the forged release changed nothing" || not_ok "q3 did not follow"
check "q3 did not reach the target" bash -c "! grep -q '^ok q3 ' '$T/h3.log'"
for p in 0 1 2 3; do relop $p good; done
wait_for 20 bash -c "! curl -s -m 5 http://$ADDR/fences | grep -q '\"key\":\"q\"'" &&
  ok "a release record signed with the key lifts q's fence" || not_ok "q still fenced: $(admin_get "$ADDR" /fences)"
check "its application is logged with the author it names" \
  grep -q '"event":"fence_release".*"op":"release".*"by":"forger","applied":1' "$T/gsig2.err"
printf 'q\t{"id":"q4","mode":"ok"}\n' | produce sig
wait_for 20 grep -q '^ok q4 ' "$T/h3.log" && ok "q4 passes after the signed release" || not_ok "q4 did not pass"
# an owner's claim (fence_rec.h) at the highest epoch: forged without the key it is refused and
# changes nothing; signed with it, the owner is told it was superseded and its own later fence
# writes for those partitions are read as stale
claim() { # claim PARTITION MODE
  $PY "$ROOT/spec/e2e/ctl_sign.py" "$BOOTSTRAP" gsig.fences fence "$T/ctl.key" "sig/$1/claim" \
    "$(printf 'errgate-fence-claim 1\n9007199254740992')"$'\n' "$2" >/dev/null || not_ok "cannot produce to gsig.fences"
}
n0=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="unsigned"')
for p in 0 1 2 3; do claim $p none; done
wait_for 20 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/metrics | awk '/^errgate_fence_records_refused_total\{reason=\"unsigned\"\}/{print \$2}')\" = $((n0 + 4)) ]"
n=$(metric "$ADDR" errgate_fence_records_refused_total 'reason="unsigned"')
check "4 forged unsigned claims refused ($n0 -> $n unsigned), none taken" \
  eval '[ "$n" = $((n0 + 4)) ] && ! grep -q "\"event\":\"fence_superseded\"" "$T/gsig2.err"'
for p in 0 1 2 3; do claim $p good; done
wait_for 20 grep -q '"event":"fence_superseded"' "$T/gsig2.err" &&
  ok "a signed claim above this owner's epoch is taken: fence_superseded logged" || not_ok "no fence_superseded"
printf 'q\t{"id":"q5","mode":"permanent"}\n' | produce sig
wait_for 20 bash -c "[ \"\$(curl -s -m 5 http://$ADDR/metrics | awk '/^errgate_fence_records_stale_total /{print \$2}')\" -ge 1 ] 2>/dev/null" ||
  not_ok "the superseded owner's next fence write was not read as stale"
n=$(metric "$ADDR" errgate_fence_records_stale_total)
check "the superseded owner's own next fence write (q5 dead-lettered) is read as stale ($n)" [ "${n%.*}" -ge 1 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 7. two instances of one group: a release asked on the instance that does
# not own the key's partition reaches the one that does
handler_at h4
ladder_config "$T/gtwo.lua" gtwo two key "$POLICY" "" "$ADMIN"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder+dlq",/' "$T/gtwo.lua"
start_gateway gtwo_a "$T/gtwo.lua"
PID_A=$GW_PID
ADDR_A=$(admin_addr gtwo_a) || die "no admin endpoint: $(tail -3 "$T/gtwo_a.err")"
wait_for 40 grep -q '"event":"assign".*two\[' "$T/gtwo_a.err" || die "instance a: no assignment"
start_gateway gtwo_b "$T/gtwo.lua"
PID_B=$GW_PID
ADDR_B=$(admin_addr gtwo_b) || die "no admin endpoint: $(tail -3 "$T/gtwo_b.err")"
wait_for 40 grep -q '"event":"assign".*two\[' "$T/gtwo_b.err" || die "instance b: no assignment"
wait_for 20 bash -c "[ \$(grep -c '\"event\":\"assign\".*two\[' '$T/gtwo_a.err') -ge 5 ]" ||
  diag "instance a was not assigned again after b joined"
sleep 1
printf 'u\t{"id":"u1","mode":"permanent"}\nu\t{"id":"u2","mode":"ok"}\n' | produce two
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t two.dlq -e -q 2>/dev/null | grep -c '\"id\":\"u') -ge 2 ]" ||
  not_ok "u1, u2 not in two.dlq"
OWNER=""; OTHER=""
for w in a b; do
  eval "addr=\$ADDR_$(tr a-z A-Z <<<"$w")"
  if admin_get "$addr" /fences | grep -q '"key":"u"'; then OWNER=$addr; else OTHER=$addr; fi
done
sleep 1 # the other instance reads the fence topic live: u's fence is in its view
check "one instance holds u's fence, the other does not (owner ${OWNER:-none}, other ${OTHER:-none})" \
  eval '[ -n "$OWNER" ] && [ -n "$OTHER" ]'
ctl2() { local a=$1; shift; USER=fence-op "$EG" ctl --admin "http://$a" --token-file "$T/token" "$@"; }
t_ask=$(date +%s%3N)
out=$(ctl2 "$OTHER" fence release u 2>&1); rc=$?
check "errgate ctl fence release u on the other instance: exit 0, 0 lifted there, 1 release record sent ($rc: $out)" \
  eval 'exits_with "$rc" 0 "fence release: 0 fence(s) lifted" "$out" && grep -q "1 release record(s) sent" <<<"$out"'
wait_for 20 bash -c "! curl -s -m 5 http://$OWNER/fences | grep -q '\"key\":\"u\"'" &&
  ok "the owner lifted u's fence on the release record" || not_ok "u still fenced on the owner: $(admin_get "$OWNER" /fences)"
t_applied=$(grep -h '"event":"fence_release".*"op":"release"' "$T/gtwo_a.err" "$T/gtwo_b.err" | head -1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')
[ -n "$t_applied" ] && diag "release asked at the other instance -> applied by the owner: $(( $(date -d "$t_applied" +%s%3N) - t_ask )) ms"
n=$(metric "$OWNER" errgate_fence_ops_applied_total 'op="release"')
m=$(metric "$OTHER" errgate_fence_releases_sent_total)
check "the owner counts the release applied ($n), the other the release sent ($m)" \
  eval '[ "$n" = 1 ] && [ "$m" = 1 ]'
admin_get "$OWNER" /metrics >"$T/fence_metrics.txt"
if command -v promtool >/dev/null; then
  check "promtool check metrics passes with fencing on ($(promtool check metrics <"$T/fence_metrics.txt" 2>&1 | head -3))" \
    bash -c "promtool check metrics <'$T/fence_metrics.txt'"
else diag "promtool is missing (Debian package prometheus): the exposition is not checked"; fi
printf 'u\t{"id":"u3","mode":"ok"}\n' | produce two
wait_for 20 grep -q '^ok u3 ' "$T/h4.log" && ok "u's next record passes on the owner" || not_ok "u3 did not pass: $(cat "$T/h4.log")"
check "u2 did not reach the target (it stays in the DLQ, the operator's to replay)" bash -c "! grep -q '^ok u2 ' '$T/h4.log'"

# 8. dlq resolve of a dead-lettered head tells its owner
printf 'v\t{"id":"v1","mode":"permanent"}\nv\t{"id":"v2","mode":"ok"}\n' | produce two
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t two.dlq -e -q 2>/dev/null | grep -c '\"id\":\"v') -ge 2 ]" ||
  not_ok "v1, v2 not in two.dlq"
# vid ID: the errgate.id of the two.dlq record whose value has "id":"ID"
vid() {
  dump two.dlq "$T/two.json"
  $PY - "$T/two.json" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    h = dict(zip(m["headers"][0::2], m["headers"][1::2]))
    if '"id":"%s"' % sys.argv[2] in (m["payload"] or ""):
        print(h["errgate.id"])
        break
PY
}
V1=$(vid v1); V2=$(vid v2)
VOWN=$ADDR_A; admin_get "$ADDR_A" /fences | grep -q '"key":"v"' || VOWN=$ADDR_B
check "v is fenced behind v1 ($V1) with v2 ($V2) queued" \
  grep -q "\"key\":\"v\".*\"head\":\"$V1\".*\"queue\":\[\"$V2\"\]" <<<"$(admin_get "$VOWN" /fences)"
out=$("$EG" dlq resolve two.dlq -b "$BOOTSTRAP" --id "$V1" --status closed 2>&1); rc=$?
check "dlq resolve -b (no config): exit 0 and a note that the key stays fenced ($rc: $out)" \
  exits_with "$rc" 0 "stays fenced until .errgate ctl fence release KEY" "$out"
sleep 2
check "and v's fence is unchanged" grep -q "\"key\":\"v\".*\"head\":\"$V1\"" <<<"$(admin_get "$VOWN" /fences)"
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$V1" --status closed 2>&1); rc=$?
check "dlq resolve -c of the head: exit 0, written to the fence topic ($rc: $out)" \
  exits_with "$rc" 0 "$V1 resolved in the fence topic" "$out"
wait_for 20 bash -c "curl -s -m 5 http://$VOWN/fences | grep -q '\"key\":\"v\".*\"head\":\"$V2\",\"parked\":false'" &&
  ok "the owner made v2 the head of v's fence (released, still fencing)" ||
  not_ok "v's fence after the resolve: $(admin_get "$VOWN" /fences)"
check "the owner logs the resolve with its author" \
  grep -q "\"event\":\"fence_resolved\".*\"op\":\"resolve\",\"id\":\"$V1\".*\"applied\":1" "$T/gtwo_a.err" "$T/gtwo_b.err"
printf 'v\t{"id":"v3","mode":"ok"}\n' | produce two
wait_for 20 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t two.dlq -e -q 2>/dev/null | grep -c '\"id\":\"v') -ge 3 ]" &&
  ok "v3 follows v2 to the DLQ: v2 is not resolved yet" || not_ok "v3 did not follow: $(grep '^ok v' "$T/h4.log")"
V3=$(vid v3)
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$V3" --status closed 2>&1); rc=$?
check "dlq resolve -c of the follower v3: exit 0 ($rc: $out)" [ "$rc" = 0 ]
wait_for 20 bash -c "curl -s -m 5 http://$VOWN/fences | grep -q '\"key\":\"v\".*\"head\":\"$V2\".*\"followers\":0'" &&
  ok "v3 left the queue behind v2" || not_ok "v's fence: $(admin_get "$VOWN" /fences)"
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$V2" --status accepted-loss --reason test 2>&1); rc=$?
check "dlq resolve -c of v2, the head now: exit 0 ($rc: $out)" [ "$rc" = 0 ]
wait_for 20 bash -c "! curl -s -m 5 http://$VOWN/fences | grep -q '\"key\":\"v\"'" &&
  ok "v is no longer fenced" || not_ok "v's fence: $(admin_get "$VOWN" /fences)"
n=$(metric "$VOWN" errgate_fence_ops_applied_total 'op="resolve"')
check "the owner counts 3 resolves applied ($n)" [ "$n" = 3 ]
# the resolve records went where the fence's own records of v are (one partition of gtwo.fences), so they are
# read in order with them
VKEY="$(cut -d/ -f1-2 <<<"$V1")/$(printf v | sha256sum | cut -d' ' -f1)"
kcat -C -b "$BOOTSTRAP" -t gtwo.fences -e -q -f '%p %k\n' 2>/dev/null | grep " $VKEY\$" >"$T/vrecs"
check "v's fence states and its 3 resolve records share one partition of gtwo.fences ($(sort -u "$T/vrecs" | tr '\n' ';'), $(wc -l <"$T/vrecs") records)" \
  eval '[ "$(cut -d" " -f1 "$T/vrecs" | sort -u | wc -l)" = 1 ] && [ "$(wc -l <"$T/vrecs")" -ge 6 ]'
printf 'v\t{"id":"v4","mode":"ok"}\nv\t{"id":"v5","mode":"ok"}\nv\t{"id":"v6","mode":"ok"}\n' | produce two
wait_for 20 bash -c "[ \$(grep -c '^ok v' '$T/h4.log') -ge 3 ]" || not_ok "v4..v6: $(grep '^ok v' "$T/h4.log")"
check "v's later records passed, in order ($(grep -o '^ok v[0-9]' "$T/h4.log" | tr '\n' ' '))" \
  [ "$(grep -o '^ok v[0-9]' "$T/h4.log" | tr '\n' ' ')" = "ok v4 ok v5 ok v6 " ]

# 9. a resolve written while no gateway runs: the next owner rebuilds the fence as resolved
printf 'x\t{"id":"x1","mode":"permanent"}\nx\t{"id":"x2","mode":"ok"}\n' | produce two
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t two.dlq -e -q 2>/dev/null | grep -c '\"id\":\"x') -ge 2 ]" ||
  not_ok "x1, x2 not in two.dlq"
X1=$(vid x1); X2=$(vid x2)
stop_gateway "$PID_B"
check "instance b exits 0 ($RC)" [ "$RC" = 0 ]
stop_gateway "$PID_A"
check "instance a exits 0 ($RC)" [ "$RC" = 0 ]
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$X1" --status closed 2>&1); rc=$?
check "dlq resolve -c of x's head with no gateway running: written ($rc: $out)" \
  exits_with "$rc" 0 "$X1 resolved in the fence topic" "$out"
start_gateway gtwo_c "$T/gtwo.lua"
ADDR=$(admin_addr gtwo_c) || die "no admin endpoint: $(tail -3 "$T/gtwo_c.err")"
wait_for 40 grep -q '"event":"assign".*two\[' "$T/gtwo_c.err" || die "no assignment"
body=$(admin_get "$ADDR" /fences)
check "the next owner rebuilt x's fence with the resolve applied: x2 is its head, released ($body)" \
  grep -q "\"key\":\"x\".*\"head\":\"$X2\",\"parked\":false.*\"followers\":0" <<<"$body"
# last_x: the first line of the last record under x's fence record key in gtwo.fences
XKEY="$(cut -d/ -f1-2 <<<"$X1")/$(printf x | sha256sum | cut -d' ' -f1)"
last_x() {
  dump gtwo.fences "$T/xf.json"
  $PY - "$T/xf.json" "$XKEY" <<'PY'
import json, sys
last = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m["key"] == sys.argv[2] and (last is None or m["offset"] > last["offset"]):
        last = m
print((last["payload"] or "tombstone").split("\n")[0] if last else "none")
PY
}
sleep 1
check "the rebuild wrote x's state again after the resolve record ($(last_x))" [ "$(last_x)" = "errgate-fence 1" ]
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$X1" --status closed 2>&1); rc=$?
sleep 2
check "a resolve of an item x's fence does not hold (x1 again) changes nothing, and the owner writes x's state after it ($rc: $(last_x))" \
  eval '[ "$(last_x)" = "errgate-fence 1" ] && grep -q "\"key\":\"x\".*\"head\":\"$X2\"" <<<"$(admin_get "$ADDR" /fences)"'
printf 'x\t{"id":"x3","mode":"ok"}\n' | produce two
wait_for 20 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t two.dlq -e -q 2>/dev/null | grep -c '\"id\":\"x') -ge 3 ]" &&
  ok "x3 still follows x2 to the DLQ" || not_ok "x3 did not follow"
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$X2" --status closed 2>&1); rc=$?
X3=$(vid x3)
out=$("$EG" dlq resolve two.dlq -c "$T/gtwo.lua" --id "$X3" --status closed 2>&1); rc=$?
wait_for 20 bash -c "! curl -s -m 5 http://$ADDR/fences | grep -q '\"key\":\"x\"'" &&
  ok "x2 and x3 resolved: x is no longer fenced" || not_ok "x's fence: $(admin_get "$ADDR" /fences)"
printf 'x\t{"id":"x4","mode":"ok"}\n' | produce two
wait_for 20 grep -q '^ok x4 ' "$T/h4.log" && ok "x4 passes" || not_ok "x4 did not pass"

stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 10. ladder+dlq: followers reach the DLQ in offset order (rungs 1s and 10s: room for a loaded
# machine). q1 climbs to rung 10s and is then dead-lettered; q2 followed it onto rung 10s 3 s
# after it; q3, produced once q1
# is in the DLQ and while q2 still waits on the rung, must not pass q2 into the DLQ: it waits on
# the rung for its turn
sed 's/"1s", "2s"/"1s", "10s"/' "$POLICY" >"$T/ladder_1s_10s.lua"
ladder_config "$T/gord.lua" gord ord key "$T/ladder_1s_10s.lua" "" "$ADMIN"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder+dlq",/' "$T/gord.lua"
start_gateway gord "$T/gord.lua"
wait_for 40 grep -q '"event":"assign".*ord\[' "$T/gord.err" || die "no assignment"
printf 'q\t{"id":"q1","mode":"transient-3"}\n' | produce ord
wait_for 20 bash -c "kcat -C -b $BOOTSTRAP -t ord.retry.10s -e -q 2>/dev/null | grep -q '\"id\":\"q1\"'" ||
  not_ok "q1 did not reach rung 10s"
sleep 3
printf 'q\t{"id":"q2","mode":"ok"}\n' | produce ord
wait_for 20 bash -c "kcat -C -b $BOOTSTRAP -t ord.dlq -e -q 2>/dev/null | grep -q '\"id\":\"q1\"'" ||
  not_ok "q1 was not dead-lettered"
printf 'q\t{"id":"q3","mode":"ok"}\n' | produce ord
early=$(kcat -C -b "$BOOTSTRAP" -t ord.dlq -e -q 2>/dev/null | grep -c '"id":"q2"')
wait_for 30 bash -c "[ \$(kcat -C -b $BOOTSTRAP -t ord.dlq -e -q 2>/dev/null | grep -c '\"id\":\"q') -ge 3 ]" ||
  not_ok "q2 and q3 did not both reach ord.dlq"
order=$(kcat -C -b "$BOOTSTRAP" -t ord.dlq -e -q 2>/dev/null | grep -o '"id":"q[0-9]"' | cut -d'"' -f4 | tr '\n' ' ')
check "q3 was produced while q2 still waited on its rung (q2 in the DLQ by then: $early)" [ "$early" = 0 ]
check "q1, q2, q3 reached ord.dlq in offset order ($order)" [ "$order" = "q1 q2 q3 " ]
n=$(grep -c '"event":"decision","topic":"ord",.*"action":"ladder","reason":"fenced"' "$T/gord.err")
check "q2 and q3 each followed from the source onto the rung, q3 waiting there for q2 ($n such decisions)" [ "$n" = 2 ]
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]

# 11. ladder: w1 climbs to rung 10s (fails twice, then succeeds); w2 follows it there; an operator
# releases w; w3 then parks on rung 1s and succeeds before w1 and w2 come back from rung 10s, so
# the key's resolved offset passes theirs. Released, they are not copies of resolved records:
# both must reach the target (before the release floor, both were dropped as duplicates)
handler_at h11
ladder_config "$T/grel.lua" grel rel key "$T/ladder_1s_10s.lua" "" "$ADMIN"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder",/' "$T/grel.lua"
start_gateway grel "$T/grel.lua"
ADDR=$(admin_addr grel) || die "no admin endpoint"
wait_for 40 grep -q '"event":"assign".*rel\[' "$T/grel.err" || die "no assignment"
printf 'w\t{"id":"w1","mode":"transient-2"}\n' | produce rel
wait_for 20 bash -c "kcat -C -b $BOOTSTRAP -t rel.retry.10s -e -q 2>/dev/null | grep -q '\"id\":\"w1\"'" ||
  not_ok "w1 did not reach rung 10s"
printf 'w\t{"id":"w2","mode":"ok"}\n' | produce rel
wait_for 10 bash -c "kcat -C -b $BOOTSTRAP -t rel.retry.10s -e -q 2>/dev/null | grep -q '\"id\":\"w2\"'" ||
  not_ok "w2 did not follow w1 onto rung 10s"
out=$(ctl fence release w 2>&1); rc=$?
check "errgate ctl fence release w while w1 and w2 wait on rung 10s ($rc: $out)" \
  exits_with "$rc" 0 "fence release: 1 fence(s) lifted" "$out"
printf 'w\t{"id":"w3","mode":"transient-1"}\n' | produce rel
wait_for 10 grep -q '^ok w3 ' "$T/h11.log" || not_ok "w3 did not succeed from rung 1s"
early=$(grep -c '^ok w[12] ' "$T/h11.log")
check "w3 parked and resolved while w1 and w2 still waited on rung 10s ($early of them done by then)" [ "$early" = 0 ]
wait_for 20 bash -c "grep -q '^ok w1 ' '$T/h11.log' && grep -q '^ok w2 ' '$T/h11.log'" &&
  ok "the released w1 and w2 reached the target after a later fence of their key resolved past them" ||
  not_ok "released records lost: $(tr '\n' ' ' <"$T/h11.log"); $(grep -c fence_duplicate "$T/grel.err") dropped as duplicates"
stop_gateway "$GW_PID"
check "the gateway exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
