#!/usr/bin/env bash
# test_kafka_fence.sh — per-key fences survive a rebalance and a kill -9 on a
# real 3-broker cluster: they are rebuilt from the compacted fence topic
# GROUP.fences by the partition's next owner before it hands the
# partition's records to the target.
#   1. gateway A alone (source.fence = "ladder", rung 30s): fa1 fails once
#      and is parked on the 30s rung; fa2, fa3 follow it. Gateway B joins:
#      the group rebalances (every partition revoked, fences dropped with
#      them) and whoever owns fa's partition now rebuilds its fence from
#      gfence.fences; fa4, produced after the rebalance, follows too instead
#      of passing (without the rebuild it would reach the target ~30 s
#      before fa1). The target sees fa1..fa4 in order.
#   2. fb1 parked, fb2 follows; A and B are killed with SIGKILL; gateway C
#      starts alone, rebuilds the fence from the topic, fb3 (produced after
#      the restart) follows, and the target sees fb1..fb3 in order.
#   3. gateway D joins C: fc1 is parked on the 30s rung, fc2 follows;
#      `errgate ctl fence release fc` asked on the instance that does not
#      own fc's partition is written to gfence.fences and the owner lifts
#      the fence: fc3 reaches the target long before fc1 comes back.
# spec/run.sh: kafka only
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
[ "$BROKER" = kafka ] || die "a real-cluster test: run it with BROKER=kafka"
ORACLE="$ROOT/spec/e2e/fence_order.py"

start_broker --brokers 3 $(ladder_topics src 30s 5m | sed 's/:4/:2/g')
handler_at h
ladder_config "$T/gw.lua" gfence src key "$ROOT/spec/fixtures/policies/ladder_30s_5m.lua" "" \
  "admin = { listen = \"127.0.0.1:0\", token_file = \"$T/token\" },"
echo "fence-token" >"$T/token"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder",/' "$T/gw.lua"
: >"$T/records.txt"
send() { printf '%s\t{"id":"%s","mode":"%s"}\n' "$1" "$2" "$3" | tee -a "$T/records.txt" | produce src; }
fenced() { grep -h '"reason":"fenced"' "$@" 2>/dev/null | grep -c '"fenced_by"'; }

# 1. a rebalance
start_gateway A "$T/gw.lua"
A_PID=$GW_PID
wait_for 60 grep -q '"event":"assign".*src\[' "$T/A.err" || die "A got no assignment: $(tail -3 "$T/A.err")"
send fa fa1 transient-1
send fa fa2 ok
send fa fa3 ok
send other o1 ok
wait_for 30 bash -c "[ \$(grep -h '\"reason\":\"fenced\"' '$T/A.err' | wc -l) -ge 2 ]" ||
  not_ok "fa2 and fa3 did not follow fa1: $(grep -c '"reason":"fenced"' "$T/A.err")"
check "o1 (another key) passed while fa is fenced" grep -q '^ok o1 ' "$T/h.log"
check "fa2 and fa3 did not reach the target" bash -c "! grep -q '^ok fa' '$T/h.log'"
start_gateway B "$T/gw.lua"
B_PID=$GW_PID
wait_for 60 grep -q '"event":"assign".*src\[' "$T/B.err" || die "B got no assignment: $(tail -3 "$T/B.err")"
wait_for 20 bash -c "[ \$(grep -c '\"event\":\"revoke\".*src\\[' '$T/A.err') -ge 1 ]" || not_ok "A never revoked"
# (the rebuild is logged after the fence topic is read to its end, some 80 ms after the assign line)
wait_for 10 bash -c "grep -h '\"event\":\"fences_rebuilt\".*from gfence.fences' '$T/A.err' '$T/B.err' | grep -q '1 fences rebuilt'" &&
  ok "after the rebalance fa's partition's new owner rebuilt its fence from gfence.fences" ||
  not_ok "after the rebalance no owner logged fences_rebuilt for fa's partition"
send fa fa4 ok
wait_for 10 bash -c "[ \$(cat '$T/A.err' '$T/B.err' | grep -c '\"reason\":\"fenced\"') -ge 3 ]" &&
  ok "fa4, produced after the rebalance, follows fa1 (fence rebuilt)" || not_ok "fa4 did not follow"
check "fa4 did not pass fa1 (nothing of fa reached the target before fa1's rung is due)" \
  bash -c "! grep -q '^ok fa' '$T/h.log'"
wait_for 90 bash -c "[ \$(grep -c '^ok fa' '$T/h.log') -ge 4 ]" || not_ok "fa: $(grep '^ok fa' "$T/h.log" | tr '\n' ' ')"
res=$($PY "$ORACLE" check "$T/records.txt" "$T/h.log" --expect-ordered 1); rc=$?
check "the target saw fa1..fa4 in order through the rebalance ($res; $(grep -o '^ok fa[0-9]' "$T/h.log" | tr '\n' ' '))" \
  [ "$rc" = 0 ]

# 2. kill -9
send fb fb1 transient-1
send fb fb2 ok
wait_for 30 bash -c "[ \$(cat '$T/A.err' '$T/B.err' | grep -c '\"reason\":\"fenced\"') -ge 4 ]" ||
  not_ok "fb2 did not follow fb1"
# the source offsets of fb1 and fb2 are committed (they are on the rung): the
# next owner does not consume them again from the source
wait_for 20 all_committed gfence src || not_ok "src not committed before the kill: lag $(lag gfence src)"
kill -9 "$A_PID" "$B_PID"
wait "$A_PID" "$B_PID" 2>/dev/null
start_gateway C "$T/gw.lua"
wait_for 90 grep -q '"event":"assign".*src\[' "$T/C.err" || die "C got no assignment: $(tail -3 "$T/C.err")"
wait_for 30 grep -q '"event":"fences_rebuilt".*from gfence.fences' "$T/C.err" &&
  ok "after a kill -9 of both gateways the new one rebuilt the fence from gfence.fences" ||
  not_ok "C rebuilt nothing: $(grep -c fence "$T/C.err")"
send fb fb3 ok
wait_for 20 grep -q '"reason":"fenced"' "$T/C.err" && ok "fb3, produced after the restart, follows fb1" ||
  not_ok "fb3 did not follow"
wait_for 120 bash -c "[ \$(grep -c '^ok fb' '$T/h.log') -ge 3 ]" || not_ok "fb: $(grep '^ok fb' "$T/h.log" | tr '\n' ' ')"
res=$($PY "$ORACLE" check "$T/records.txt" "$T/h.log" --expect-ordered 1); rc=$?
check "the target saw fb1..fb3 in order through the kill -9 ($res; $(grep -o '^ok fb[0-9]' "$T/h.log" | tr '\n' ' '))" \
  [ "$rc" = 0 ]

# 3. a release asked on the instance that does not own the key's partition
C_PID=$GW_PID
ADDR_C=$(admin_addr C) || die "C: no admin endpoint"
start_gateway D "$T/gw.lua"
D_PID=$GW_PID
ADDR_D=$(admin_addr D) || die "D: no admin endpoint"
wait_for 60 grep -q '"event":"assign".*src\[' "$T/D.err" || die "D got no assignment: $(tail -3 "$T/D.err")"
sleep 2
n0=$(cat "$T/C.err" "$T/D.err" | grep -c '"reason":"fenced"')
send fc fc1 transient-1
send fc fc2 ok
wait_for 30 bash -c "[ \$(cat '$T/C.err' '$T/D.err' | grep -c '\"reason\":\"fenced\"') -gt $n0 ]" ||
  not_ok "fc2 did not follow fc1"
sleep 1
OWNER=""; OTHER=""
for a in "$ADDR_C" "$ADDR_D"; do
  if admin_get "$a" /fences | grep -q '"key":"fc"'; then OWNER=$a; else OTHER=$a; fi
done
check "one of C and D holds fc's fence (owner ${OWNER:-none}, other ${OTHER:-none})" \
  eval '[ -n "$OWNER" ] && [ -n "$OTHER" ]'
t_ask=$(date +%s%3N)
out=$(USER=fence-op "$EG" ctl --admin "http://$OTHER" --token-file "$T/token" fence release fc 2>&1); rc=$?
check "ctl fence release fc on the other instance: 1 release record sent ($rc: $out)" \
  exits_with "$rc" 0 "1 release record(s) sent" "$out"
wait_for 20 bash -c "! curl -s -m 5 http://$OWNER/fences | grep -q '\"key\":\"fc\"'" &&
  ok "the owner lifted fc's fence on the release record" || not_ok "fc still fenced: $(admin_get "$OWNER" /fences)"
t_applied=$(grep -h '"event":"fence_release".*"op":"release"' "$T/C.err" "$T/D.err" | head -1 | sed 's/.*"ts":"\([^"]*\)".*/\1/')
[ -n "$t_applied" ] && diag "release asked at the other instance -> applied by the owner: $(( $(date -d "$t_applied" +%s%3N) - t_ask )) ms"
send fc fc3 ok
wait_for 20 grep -q '^ok fc3 ' "$T/h.log" && ok "fc3 passes after the release" || not_ok "fc3 did not pass"
check "fc3 reached the target before fc1 came back from its 30s rung (the fence is lifted, not resolved)" \
  bash -c "! grep -q '^ok fc1 ' '$T/h.log'"
stop_gateway "$D_PID"
check "D exits 0 ($RC)" [ "$RC" = 0 ]
stop_gateway "$C_PID"
check "C exits 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
