#!/usr/bin/env bash
# test_rung_fault_rebalance.sh — a rung topic that is missing while the group
# rebalances is owned again soon after it is back (found by make chaos,
# seed 5: 964 records stayed in src.retry.1s, never given an outcome).
#
# The group leader assigns from a metadata request of its own; when the rung
# topic is missing at that moment it counts as having no partitions and
# nobody gets any. librdkafka 2.0.2 rejoins only when a member's subscription
# metadata changes, which the assignor's request does not update: members
# that never saw the topic go never rejoin (gw_coverage.c, where the gateway
# now checks its share and rejoins).
#
# Two gateways share the group. One member is told to rejoin; the rung topic
# goes missing 1.5 s later, for 4 s, so it covers the leader's assignment
# (5 s after the rejoin) but not the members' own metadata requests, made
# before they rejoined. Records that fail three times (two quick retries,
# then the 1s rung) are produced after the fault: they must all succeed from
# the rung and be committed, source and rung, within 45 s. Before
# gw_coverage.c they stayed in the rung for good. The 4s rung has a single
# partition: the gateway that legitimately owns none of it must not rejoin.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/ladder_lib.sh"
N=200

# the 4s rung has one partition: one of the two gateways legitimately owns
# none of it, and must not rejoin over that
start_broker --brokers 3 $(ladder_topics src 1s 2s) --topic src.retry.4s:1
start_handler
ladder_config "$T/gw.lua" rfr src none "$ROOT/examples/payments/policy.lua"
start_gateway gw1 "$T/gw.lua"; GW1=$GW_PID
start_gateway gw2 "$T/gw.lua"; GW2=$GW_PID
rung_owned_by_both() { grep -q '"event":"assign","msg":"src.retry.1s' "$T/gw1.err" && grep -q '"event":"assign","msg":"src.retry.1s' "$T/gw2.err"; }
wait_for 40 rung_owned_by_both || die "the two gateways did not share the rung topic: $(grep -h '"assign"' "$T"/gw?.err | tail -3)"

# A member told to rejoin starts a rebalance; the embedded broker completes
# it 5 s later (session.timeout.ms - 1 s, since only one member's heartbeat
# fails). The members have fetched their metadata before they rejoined;
# the leader fetches it again for the assignor when the join completes: the
# fault covers that moment only.
revokes() { cat "$T/gw1.err" "$T/gw2.err" | grep -c '"event":"revoke"'; }
r0=$(revokes)
broker_ctl request-errors Heartbeat 1 REBALANCE_IN_PROGRESS >/dev/null || die "request-errors refused"
revoked() { [ "$(revokes)" -gt "$r0" ]; }
wait_for 10 revoked || die "no rebalance began"
sleep 1.5
broker_ctl topic-fault src.retry.1s 4 UNKNOWN_TOPIC_OR_PART >/dev/null || die "topic-fault refused"
zeroed() { grep -q 'Topic src.retry.1s partition count changed from 4 to 0' "$T/gw1.err" "$T/gw2.err"; }
wait_for 10 zeroed && ok "the leader's metadata lost the rung topic during the rebalance" ||
  not_ok "the fault did not reach the consumers' metadata (the scenario was not reproduced)"
sleep 4 # the fault is over
diag "assignments: $(grep -h '"event":"assign"' "$T/gw1.err" "$T/gw2.err" | tail -12 | sed 's/.*"msg":"//; s/".*//' | tr '\n' ' ')"

gen_records "$N" "transient-3:1" | produce src
if wait_for 45 all_committed rfr src src.retry.1s; then
  ok "every record climbed the 1s rung and was committed, source and rung"
else
  not_ok "not drained: $(grep -v total "$T/all_committed.txt" | awk '$3 != $4' | head -4 | tr '\n' ';')"
fi
# Which rebalance gave the rung back: normally the gateway's own check
# (assignment_incomplete, 2 s after the assignment). librdkafka rejoins by
# itself when one of its own metadata requests saw the topic go and come back
# before that check ran (seen once in CI, on a slower machine): that is a
# correct outcome too, but it does not exercise gw_coverage.c, so it is named.
revokes_after_fault() { # revoke events after the last "4 to 0" line, both gateways
  local f; for f in "$T/gw1.err" "$T/gw2.err"; do
    awk '/partition count changed from 4 to 0/ { n = 0; seen = 1 } seen && /"event":"revoke"/ { n++ } END { print n + 0 }' "$f"
  done | awk '{ s += $1 } END { print s + 0 }'
}
if grep -q '"event":"assignment_incomplete".*src.retry.1s' "$T/gw1.err" "$T/gw2.err"; then
  ok "a gateway saw the incomplete assignment and rejoined the group"
elif [ "$(revokes_after_fault)" -gt 0 ]; then
  ok "the group rebalanced after the fault ($(revokes_after_fault) revokes)"
  diag "librdkafka rejoined on its own before the gateway's check: gw_coverage.c was not exercised this run"
else
  not_ok "nothing rebalanced after the fault: $(grep -hE '"event":"(assign|revoke|assignment_[a-z]*|coverage_[a-z_]*)"' "$T/gw1.err" "$T/gw2.err" | tail -8 | cut -c1-160 | tr '\n' ';')"
fi
no_rejoin_over_4s() { ! grep -q '"event":"assignment_[a-z]*","msg":"src.retry.4s:' "$T/gw1.err" "$T/gw2.err"; }
check "no rejoin over the 4s rung, which has fewer partitions than members" no_rejoin_over_4s
check "all $N records succeeded ($(sort -u "$T/ok.log" | wc -l) in the success log)" [ "$(sort -u "$T/ok.log" | wc -l)" -ge "$N" ]
stop_gateway "$GW2"
check "gw2 exits 0 (exit $RC)" [ "$RC" = 0 ]
stop_gateway "$GW1"
check "gw1 exits 0 (exit $RC)" [ "$RC" = 0 ]
exit $FAILED
