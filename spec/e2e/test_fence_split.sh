#!/usr/bin/env bash
# test_fence_split.sh — under source.fence, a rung partition is served only
# by the gateway that owns its source partition (src/gateway/gw_colocate.c).
#
# The group's range assignor keeps partition P of every topic on one member
# only while every member subscribes to the same topics. Two gateways of one
# group whose ladders differ (a rolling change of the policy: A has the rung
# 1s, B the rungs 1s and 2s) split: the rung 2s goes to B alone, apart from
# the source partitions A owns, whose fences B does not hold. On the real
# cluster the same split came from a member whose metadata did not show a
# new rung topic yet (the chaos runner's kafka seed 5). Checked:
#   1. B says fence_split naming the 2s partitions of A's source partitions,
#      pauses them (reason split) and counts them; A has none;
#   2. a record on such a partition is not handed to the target while split
#      (B would, 2 s after it was written, without a fence of its key);
#   3. A reloads the policy with both rungs: its subscription now names 2s,
#      the group rebalances, every rung partition is with its source
#      partition (0 split on both), and the record reaches the target once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
POL1="$ROOT/spec/fixtures/policies/ladder_1s.lua"
POL2="$ROOT/spec/fixtures/policies/ladder_1s_2s.lua"
start_broker $(ladder_topics sp 1s 2s)
handler_at h
ADMIN='admin = { listen = "127.0.0.1:0" },'
cp "$POL1" "$T/pa.lua"
ladder_config "$T/a.lua" gsplit sp key "$T/pa.lua" "" "$ADMIN"
ladder_config "$T/b.lua" gsplit sp key "$POL2" "" "$ADMIN"
sed -i 's/ordering = "key",/ordering = "key", fence = "ladder",/' "$T/a.lua" "$T/b.lua"

start_gateway a "$T/a.lua"
A_PID=$GW_PID
wait_for 20 grep -q '"event":"assign","msg":"sp\[' "$T/a.err" || die "a: no assignment: $(tail -3 "$T/a.err")"
A_ADDR=$(admin_addr a) || die "a: no admin endpoint"
start_gateway b "$T/b.lua"
B_PID=$GW_PID
B_ADDR=$(admin_addr b) || die "b: no admin endpoint"
wait_for 30 grep -q '"event":"fence_split"' "$T/b.err" || not_ok "b: no fence_split: $(tail -3 "$T/b.err")"

# A's source partitions after the rebalance B's join made (its last assign lines)
owned_by() { awk -F'"msg":"' '/"event":"revoke"/{delete own} /"event":"assign","msg":"sp\[/{split($2,x,"[][]"); own[x[2]]=1}
  END{for (p in own) print p}' "$T/$1.err" | sort -n; }
wait_for 20 bash -c "$(declare -f owned_by); T='$T'; [ -n \"\$(owned_by a)\" ]" || die "a: no assignment after b joined"
A_PARTS=$(owned_by a | tr '\n' ' ')
diag "a owns sp[${A_PARTS% }]"
[ -n "$A_PARTS" ] || die "a owns no source partition"
SPLIT_LINE=$(grep '"event":"fence_split"' "$T/b.err" | tail -1)
NA=$(wc -w <<<"$A_PARTS")
named_all=1
for p in $A_PARTS; do grep -qF "sp.retry.2s[$p]" <<<"$SPLIT_LINE" || named_all=0; done
check "b says fence_split, naming the 2s partitions of a's $NA source partitions ($(grep -o '"msg":"[^(]*(' <<<"$SPLIT_LINE"))" \
  [ "$named_all" = 1 -a -n "$(grep -F "\"msg\":\"$NA rung partition(s)" <<<"$SPLIT_LINE")" ]
check "b pauses them with reason split" grep -q '"event":"pause","topic":"sp.retry.2s".*"reasons":"split"' "$T/b.err"
check "errgate_fence_split_partitions: b $NA, a 0 ($(metric "$B_ADDR" errgate_fence_split_partitions), $(metric "$A_ADDR" errgate_fence_split_partitions))" \
  [ "$(metric "$B_ADDR" errgate_fence_split_partitions)" = "$NA" -a "$(metric "$A_ADDR" errgate_fence_split_partitions)" = 0 ]

# 2. a record on a split partition waits (the rung's delay is 2 s)
P=${A_PARTS%% *}
printf 'ks\t{"id":"rsplit","mode":"ok"}\n' |
  kcat -P -b "$BOOTSTRAP" -t sp.retry.2s -p "$P" -K $'\t' -X acks=all 2>"$T/kcat.err" || die "kcat: $(cat "$T/kcat.err")"
sleep 7
check "the record on sp.retry.2s[$P] is not handed to the target while split" \
  [ "$(grep -c ' rsplit ' "$T/h.log" 2>/dev/null)" = 0 ]

# 3. a's policy gains the rung 2s: one subscription, co-located
cp "$POL2" "$T/pa.lua"
wait_for 30 grep -q '"event":"rung","msg":"sp.retry.2s' "$T/a.err" || not_ok "a: 2s not added: $(tail -3 "$T/a.err")"
wait_for 30 bash -c "grep -q ' rsplit ' '$T/h.log' 2>/dev/null" || not_ok "rsplit never reached the target"
check "once co-located the record reaches the target, once ($(grep -c ' rsplit ' "$T/h.log" 2>/dev/null))" \
  [ "$(grep -c ' rsplit ' "$T/h.log" 2>/dev/null)" = 1 ]
check "no partition is split any more (b $(metric "$B_ADDR" errgate_fence_split_partitions), a $(metric "$A_ADDR" errgate_fence_split_partitions))" \
  [ "$(metric "$B_ADDR" errgate_fence_split_partitions)" = 0 -a "$(metric "$A_ADDR" errgate_fence_split_partitions)" = 0 ]
wait_for 20 all_committed gsplit sp.retry.2s || not_ok "sp.retry.2s not committed"
stop_gateway "$A_PID"
check "a exits 0 ($RC)" [ "$RC" = 0 ]
stop_gateway "$B_PID"
check "b exits 0 ($RC)" [ "$RC" = 0 ]
